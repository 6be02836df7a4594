package engine_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// TestBreaker: three refusals in a row in a session open the breaker; then
// calls that change things are refused without running or asking anyone,
// reads the policy allows still run, other sessions are untouched, and a
// write that runs (before the streak is full) ends the streak.
func TestBreaker(t *testing.T) {
	pol, err := policy.Parse([]byte("deny:\n  - rule: wipe\n    reason: wiping is not allowed\n"))
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New()
	var writes, reads atomic.Int64
	reg.Register(
		tool.New("write", "Writes a note.", func(ctx context.Context, in struct {
			Name string `json:"name"`
		}) (string, error) {
			writes.Add(1)
			return "written", nil
		}, tool.WithLevel(tool.LevelWrite)),
		tool.New("wipe", "Wipes the notes.", func(ctx context.Context, in struct{}) (string, error) {
			return "wiped", nil
		}, tool.WithLevel(tool.LevelWrite)),
		tool.New("look", "Reads a note.", func(ctx context.Context, in struct{}) (string, error) {
			reads.Add(1)
			return "seen", nil
		}, tool.ReadOnly()),
	)
	var asked atomic.Int64
	approver := policy.ApproverFunc(func(context.Context, policy.Request) (policy.Approval, error) {
		asked.Add(1)
		return policy.Approval{Approved: true}, nil
	})
	e := engine.New(engine.Options{Registry: reg, Policy: pol, Approver: approver, Breaker: &policy.Breaker{}})
	ctx := context.Background()
	do := func(session, name, args string) tool.Result {
		return e.Execute(ctx, tool.Call{Name: name, Args: json.RawMessage(args), Session: session})
	}
	typeOf := func(r tool.Result) tool.ErrorType {
		if r.Error == nil {
			return ""
		}
		return r.Error.Type
	}

	// Two refusals, a write that runs, two more: the streak starts again.
	for _, name := range []string{"wipe", "wipe", "write", "wipe", "wipe"} {
		args := `{}`
		if name == "write" {
			args = `{"name":"notes"}`
		}
		if r := do("s1", name, args); (name == "wipe") != (typeOf(r) == tool.PermissionDenied) {
			t.Fatalf("%s: %s", name, r.Text())
		}
	}
	if r := do("s1", "write", `{"name":"notes"}`); r.IsError() {
		t.Fatalf("a write after two refusals in a row was refused: %s", r.Text())
	}
	for i := range 3 {
		if r := do("s1", "wipe", `{}`); typeOf(r) != tool.PermissionDenied {
			t.Fatalf("refusal %d: %s", i+1, r.Text())
		}
	}
	w, a := writes.Load(), asked.Load()
	r := do("s1", "write", `{"name":"notes"}`)
	if typeOf(r) != tool.CircuitOpen || writes.Load() != w || asked.Load() != a {
		t.Fatalf("after three refusals a write ran or was not stopped: %s", r.Text())
	}
	if r.Error.Suggestion == "" {
		t.Error("circuit_open tells the model nothing to do")
	}
	if r := do("s1", "look", `{}`); r.IsError() || reads.Load() != 1 {
		t.Errorf("a read was stopped by the breaker: %s", r.Text())
	}
	if r := do("s1", "write", `{"name":"notes"}`); typeOf(r) != tool.CircuitOpen {
		t.Errorf("a read closed the breaker: %s", r.Text())
	}
	if r := do("s2", "write", `{"name":"notes"}`); r.IsError() {
		t.Errorf("another session was stopped: %s", r.Text())
	}
}
