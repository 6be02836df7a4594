package engine_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

type inputAnswer struct {
	state   string
	content map[string]any
}

type inputAnswerKey struct{}

// TestInputRequestsAskTwice: a call the policy asks about and whose tool
// then asks too (a dangerous command) takes two rounds of input requests,
// and runs on the third call, once; its last state replayed runs nothing.
func TestInputRequestsAskTwice(t *testing.T) {
	reg := registry.New()
	var runs atomic.Int64
	reg.Register(tool.New("danger", "Does something dangerous.", func(ctx context.Context, in struct{}) (string, error) {
		if !tool.Approved(ctx) {
			return "", tool.NeedsApproval("it is dangerous")
		}
		runs.Add(1)
		return "done", nil
	}, tool.WithLevel(tool.LevelMedium)))
	sealer, err := policy.NewStateSealer([]byte("a secret every replica shares, 32+ bytes long"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	in := policy.InputRequests{Sealer: sealer, Once: &policy.MemoryOnce{}, MessageKey: "m", SchemaKey: "s", StateKey: "st",
		Answer: func(ctx context.Context) (string, string, map[string]any, bool) {
			a, ok := ctx.Value(inputAnswerKey{}).(inputAnswer)
			return a.state, "accept", a.content, ok
		}}
	e := engine.New(engine.Options{Registry: reg, Policy: policy.Default(), Approver: policy.NewGate(in, nil), Breaker: &policy.Breaker{}})
	call := tool.Call{Name: "danger", Args: json.RawMessage(`{}`), Principal: "alice"}
	yes := map[string]any{"decision": "once", "confirm": "yes"}

	ctx := context.Background()
	var states []string
	var res tool.Result
	for round := 1; round <= 4; round++ {
		res = e.Execute(ctx, call)
		if res.Error == nil || res.Error.Type != tool.InputRequired {
			break
		}
		st, _ := res.Error.Details["st"].(string)
		msg, _ := res.Error.Details["m"].(string)
		if st == "" || msg == "" {
			t.Fatalf("round %d: an input request without a state or message: %+v", round, res.Error)
		}
		states = append(states, st)
		ctx = context.WithValue(context.Background(), inputAnswerKey{}, inputAnswer{st, yes})
	}
	if res.IsError() || len(states) != 2 || runs.Load() != 1 {
		t.Fatalf("after %d rounds of questions: %s, ran %d times", len(states), res.Text(), runs.Load())
	}
	for i, st := range states {
		res = e.Execute(context.WithValue(context.Background(), inputAnswerKey{}, inputAnswer{st, yes}), call)
		if res.Error == nil || res.Error.Type != tool.ApprovalDenied || runs.Load() != 1 {
			t.Errorf("state %d replayed: %s, ran %d times", i+1, res.Text(), runs.Load())
		}
	}
}
