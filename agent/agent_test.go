package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolgate/toolgate/agent"
	"github.com/toolgate/toolgate/engine"
	tgopenai "github.com/toolgate/toolgate/provider/openai"
	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// recorder is an Executor that runs calls through a real engine and keeps
// the calls it was given.
type recorder struct {
	*engine.Engine
	mu      sync.Mutex
	batches [][]tool.Call
}

func (r *recorder) ExecuteAll(ctx context.Context, calls []tool.Call) []tool.Result {
	r.mu.Lock()
	r.batches = append(r.batches, append([]tool.Call(nil), calls...))
	r.mu.Unlock()
	return r.Engine.ExecuteAll(ctx, calls)
}

func model(t *testing.T, srv *providertest.Server) (agent.Model, *recorder) {
	tools, _ := providertest.Tools()
	reg := registry.New()
	if err := reg.Register(tools...); err != nil {
		t.Fatal(err)
	}
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	m, err := tgopenai.NewChat(client, tgopenai.Options{Model: "m", Tools: reg.List(registry.Filter{}), Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	return m, &recorder{Engine: engine.New(engine.Options{Registry: reg})}
}

func TestRunStampsAndObserves(t *testing.T) {
	srv := providertest.New(
		providertest.Turn{Calls: []providertest.Call{{Name: "add", Arguments: `{"a":1,"b":2}`}, {Name: "finish", Arguments: `{}`}}},
		providertest.Turn{Calls: []providertest.Call{{Name: "finish", Arguments: `{"answer":"3"}`}}},
	)
	srv.RepeatLast()
	defer srv.Close()
	m, rec := model(t, srv)
	var seen []string
	out, err := agent.Run(context.Background(), m, "task", agent.Options{
		Executor: rec, StopAt: []string{"finish"}, Principal: "alice", Session: "s1",
		OnCall: func(c tool.Call, r tool.Result) {
			seen = append(seen, c.Name+":"+map[bool]string{true: "err", false: "ok"}[r.IsError()])
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The first finish failed validation (no answer): the run goes on.
	if out.Stop != agent.StopTool || out.Iterations != 2 || out.Calls != 3 || out.Failed != 1 {
		t.Errorf("out %+v", out)
	}
	if strings.Join(seen, ",") != "add:ok,finish:err,finish:ok" {
		t.Errorf("seen %v", seen)
	}
	if len(rec.batches) != 2 || len(rec.batches[0]) != 2 {
		t.Fatalf("batches %v", rec.batches)
	}
	for _, b := range rec.batches {
		for _, c := range b {
			if c.Principal != "alice" || c.Session != "s1" || c.ID == "" {
				t.Errorf("call %+v", c)
			}
		}
	}
}

func TestRunRequiresExecutor(t *testing.T) {
	srv := providertest.New(providertest.Turn{Text: "hi"})
	defer srv.Close()
	m, _ := model(t, srv)
	if _, err := agent.Run(context.Background(), m, "x", agent.Options{}); err == nil {
		t.Error("no executor accepted")
	}
	if len(srv.Requests()) != 0 {
		t.Error("the model was asked without an executor")
	}
}

func TestRunCancelledBeforeStart(t *testing.T) {
	srv := providertest.New(providertest.Turn{Text: "hi"})
	defer srv.Close()
	m, rec := model(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := agent.Run(ctx, m, "x", agent.Options{Executor: rec}); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("err %v", err)
	}
	if len(srv.Requests()) != 0 {
		t.Error("the model was asked after cancellation")
	}
}
