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

// TestBreakerIgnoresInputRequests: a call asked through the client's next
// call (input_required) neither ran nor was refused, so it does not end a
// streak of refusals: questions and denials taking turns still open the
// breaker on the third denial.
func TestBreakerIgnoresInputRequests(t *testing.T) {
	reg := registry.New()
	reg.Register(tool.New("write", "Writes a note.", func(ctx context.Context, in struct{}) (string, error) {
		return "written", nil
	}, tool.WithLevel(tool.LevelMedium)))
	type answered struct{}
	approver := policy.ApproverFunc(func(ctx context.Context, _ policy.Request) (policy.Approval, error) {
		if ctx.Value(answered{}) == nil {
			return policy.Approval{}, tool.Errorf(tool.InputRequired, "the call waits for the user's answer")
		}
		return policy.Approval{Reason: "no"}, nil
	})
	e := engine.New(engine.Options{Registry: reg, Policy: policy.Default(), Approver: approver, Breaker: &policy.Breaker{}})
	call := tool.Call{Name: "write", Args: json.RawMessage(`{}`), Session: "s"}
	var got []tool.ErrorType
	for range 3 {
		for _, ctx := range []context.Context{context.Background(), context.WithValue(context.Background(), answered{}, true)} {
			if r := e.Execute(ctx, call); r.Error != nil {
				got = append(got, r.Error.Type)
			}
		}
	}
	r := e.Execute(context.Background(), call)
	want := []tool.ErrorType{tool.InputRequired, tool.ApprovalDenied, tool.InputRequired, tool.ApprovalDenied, tool.InputRequired, tool.ApprovalDenied}
	if r.Error == nil || r.Error.Type != tool.CircuitOpen || len(got) != len(want) {
		t.Fatalf("rounds %v, then %v: want %v, then circuit_open", got, r.Error, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rounds %v, want %v", got, want)
		}
	}
}

// TestBreakerCountsRefusedReads: the engine makes a session's key for the
// breaker only when it looks; a read the policy allows is not looked at
// before it runs, but one that is refused when it runs (the tool says
// permission_denied) still counts, three of them open the breaker for a
// write, and a read that runs leaves the streak as it is. Another session
// is untouched.
func TestBreakerCountsRefusedReads(t *testing.T) {
	reg := registry.New()
	var writes atomic.Int64
	reg.Register(
		tool.New("peek", "Reads a secret note.", func(ctx context.Context, in struct{}) (string, error) {
			return "", tool.Errorf(tool.PermissionDenied, "the note is not yours")
		}, tool.ReadOnly()),
		tool.New("look", "Reads a note.", func(ctx context.Context, in struct{}) (string, error) {
			return "seen", nil
		}, tool.ReadOnly()),
		tool.New("write", "Writes a note.", func(ctx context.Context, in struct{}) (string, error) {
			writes.Add(1)
			return "written", nil
		}, tool.WithLevel(tool.LevelWrite)),
	)
	e := engine.New(engine.Options{Registry: reg, Policy: policy.Default(), Breaker: &policy.Breaker{}})
	do := func(session, name string) tool.Result {
		return e.Execute(context.Background(), tool.Call{Name: name, Args: json.RawMessage(`{}`), Session: session, Principal: "p"})
	}
	for i, name := range []string{"peek", "look", "peek", "look", "peek"} {
		r := do("s1", name)
		if name == "peek" && (r.Error == nil || r.Error.Type != tool.PermissionDenied) || name == "look" && r.IsError() {
			t.Fatalf("call %d, %s: %+v %s", i+1, name, r.Error, r.Text())
		}
	}
	if r := do("s1", "write"); r.Error == nil || r.Error.Type != tool.CircuitOpen || writes.Load() != 0 {
		t.Fatalf("three reads refused when they ran did not open the breaker: %+v %s", r.Error, r.Text())
	}
	if r := do("s2", "write"); r.IsError() || writes.Load() != 1 {
		t.Fatalf("another session was stopped: %+v %s", r.Error, r.Text())
	}
}
