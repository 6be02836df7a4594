package sandboxes

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/runner"
	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/toolsets/fs"
)

// eventful is the runner's result check of a sandbox whose every call
// makes a process event (named after the call's path) before its result
// takes the events along, as start_process's does.
type eventful struct{ ev *runner.Events }

func (e eventful) Check(ctx context.Context, def tool.Definition, call tool.Call, res tool.Result) tool.Result {
	var a struct{ Path string }
	json.Unmarshal(call.Args, &a)
	e.ev.Add(runner.ProcessEvent{Kind: "start", ID: a.Path})
	return e.ev.Check(ctx, def, call, res)
}

// eventfulRunner is a real runner on dir whose sandboxes have the file
// tools and are eventful; kept is set to the keeper of the last opened.
// Closing a sandbox ends its process "p1", as closing a sandbox's
// processes tells their ends.
func eventfulRunner(t *testing.T, dir string, kept **runner.Events) *runner.Runner {
	r, err := runner.New(runner.Options{Dir: dir, Secret: testSecret, Open: func(id, ws string) (runner.Sandbox, error) {
		roots, err := fs.OpenRoots(ws)
		if err != nil {
			return runner.Sandbox{}, err
		}
		tools, err := fs.Tools(roots, fs.Options{})
		if err != nil {
			return runner.Sandbox{}, err
		}
		reg := registry.New()
		if err := reg.Register(tools...); err != nil {
			return runner.Sandbox{}, err
		}
		events := runner.NewEvents()
		*kept = events
		eng := engine.New(engine.Options{Registry: reg, Policy: &policy.Policy{Mode: policy.ModeBypass, MaxLevel: tool.LevelHigh, Reasons: map[string]string{}},
			MaxResultBytes: -1, ResultChecker: eventful{events}})
		return runner.Sandbox{MCP: http.NotFoundHandler(), Events: events,
			Call: func(ctx context.Context, name string, args json.RawMessage) tool.Result {
				return eng.Execute(ctx, tool.Call{Name: name, Args: args})
			},
			Close: func() error {
				events.Add(runner.ProcessEvent{Kind: "end", ID: "p1", Reason: "server_stopped"})
				return nil
			}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestProcessEventsLostWithRunner: the events a runner kept that no
// result carried (here a process started after the last call) are lost
// when the runner stops; the first result of the runner started again on
// the same folder tells a "lost" event first, saying after which event
// and how many processes it told the start of had not ended (their ends
// are lost too), then
// its own events. Before, the gateway told the new events only: the loss
// was silent.
func TestProcessEventsLostWithRunner(t *testing.T) {
	dir := t.TempDir()
	var kept *runner.Events
	var cur atomic.Pointer[runner.Runner]
	cur.Store(eventfulRunner(t, dir, &kept))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { cur.Load().Handler().ServeHTTP(w, req) })}
	go hs.Serve(ln)
	defer hs.Close()

	s := replica(t, nil, Options{}, "http://"+ln.Addr().String())
	var (
		mu   sync.Mutex
		told []runner.ProcessEvent
	)
	s.OnProcessEvent(func(call tool.Call, ev runner.ProcessEvent) {
		mu.Lock()
		told = append(told, ev)
		mu.Unlock()
	})
	tools := toolsOf(t, s)
	if res := call(t, tools, "alice", "c1", "write_file", `{"path":"a","content":"1"}`); res.Error != nil {
		t.Fatal(res.Error)
	}
	kept.Add(runner.ProcessEvent{Kind: "start", ID: "p1"}) // no result carries it
	cur.Load().Close()
	cur.Store(eventfulRunner(t, dir, &kept))
	defer cur.Load().Close()
	if res := call(t, tools, "alice", "c1", "write_file", `{"path":"b","content":"1"}`); res.Error != nil {
		t.Fatal(res.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, ev := range told {
		got = append(got, ev.Kind+":"+ev.ID)
	}
	if want := []string{"start:a", "lost:", "start:b"}; !slices.Equal(got, want) {
		t.Fatalf("told %q, want %q", got, want)
	}
	// a's start was told, its end never: one process had not ended (p1
	// the gateway never heard of).
	if l := told[1]; l.Seq != 2 || l.Bytes != 1 || !strings.Contains(l.Reason, "after its event 2") {
		t.Errorf("the lost event is %+v, want after event 2 with 1 process not ended", l)
	}
}

// TestProcessEventsSurviveLostResult: a real runner on loopback whose
// sandbox numbers its process events and keeps them until the gateway
// acknowledges them; the result of one call is lost on its way (the
// connection is cut after the call ran): its event is told with the next
// result, once, and no event is told twice.
func TestProcessEventsSurviveLostResult(t *testing.T) {
	var kept *runner.Events // the sandbox's, once opened
	r := eventfulRunner(t, t.TempDir(), &kept)
	// The answer to the call naming "lost" never arrives: the runner ran
	// it, then the connection is cut.
	lose := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"lost"`)) {
			r.Handler().ServeHTTP(w, req)
			return
		}
		r.Handler().ServeHTTP(&discard{header: http.Header{}}, req)
		panic(http.ErrAbortHandler)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: lose}
	go hs.Serve(ln)
	defer hs.Close()

	s := replica(t, nil, Options{}, "http://"+ln.Addr().String())
	var (
		mu   sync.Mutex
		told []string
	)
	s.OnProcessEvent(func(call tool.Call, ev runner.ProcessEvent) {
		mu.Lock()
		told = append(told, ev.ID)
		mu.Unlock()
		if call.Principal != "alice" || call.Session != "c1" {
			t.Errorf("event %+v told with the call of %s/%s", ev, call.Principal, call.Session)
		}
	})
	tools := toolsOf(t, s)
	if res := call(t, tools, "alice", "c1", "write_file", `{"path":"a","content":"1"}`); res.Error != nil {
		t.Fatal(res.Error)
	}
	if res := call(t, tools, "alice", "c1", "write_file", `{"path":"lost","content":"1"}`); res.Error == nil {
		t.Fatalf("the call whose answer was cut succeeded: %+v", res)
	}
	for _, p := range []string{"b", "c"} {
		if res := call(t, tools, "alice", "c1", "write_file", `{"path":"`+p+`","content":"1"}`); res.Error != nil {
			t.Fatal(res.Error)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"a", "lost", "b", "c"}; !slices.Equal(told, want) {
		t.Errorf("told %q, want %q", told, want)
	}
	// The runner forgot what was acknowledged: only the last event, told
	// but not yet acknowledged (the next request will), is kept.
	left, _ := kept.Check(context.Background(), tool.Definition{}, tool.Call{}, tool.Result{}).Meta[runner.MetaProcessEvents].(runner.ProcessEvents)
	if len(left.Events) != 1 || left.Events[0].ID != "c" {
		t.Errorf("the runner still keeps %+v", left.Events)
	}
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ header http.Header }

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// TestProcessEventsToldOnReap: the events of a sandbox after its last
// call (a process started, and its end when the delete stops it) are
// told when the reaper deletes it, with the principal and session of its
// calls: the runner's answer to DELETE carries them. Before, the delete
// answered 204 and they were lost without a word.
func TestProcessEventsToldOnReap(t *testing.T) {
	var kept *runner.Events
	r := eventfulRunner(t, t.TempDir(), &kept)
	defer r.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go r.Serve(t.Context(), ln)
	o := Options{Idle: 300 * time.Millisecond}
	s := replica(t, nil, o, "http://"+ln.Addr().String())
	var (
		mu   sync.Mutex
		told []string
	)
	s.OnProcessEvent(func(call tool.Call, ev runner.ProcessEvent) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, ev.Kind+":"+ev.ID+":"+call.Principal+"/"+call.Session)
	})
	if res := call(t, toolsOf(t, s), "alice", "c1", "write_file", `{"path":"a","content":"1"}`); res.Error != nil {
		t.Fatal(res.Error)
	}
	kept.Add(runner.ProcessEvent{Kind: "start", ID: "p1"}) // after the last call
	time.Sleep(o.Idle + 100*time.Millisecond)              // past idle: a lower bound
	if got, err := s.Reap(context.Background()); err != nil || len(got) != 1 {
		t.Fatalf("reaped %v, %v", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"start:a:alice/c1", "start:p1:alice/c1", "end:p1:alice/c1"}; !slices.Equal(told, want) {
		t.Fatalf("told %q, want %q", told, want)
	}
}
