package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

type addIn struct {
	A int `json:"a" jsonschema:"first addend"`
	B int `json:"b,omitempty" jsonschema:"second addend" default:"0"`
}

type listIn struct {
	Tags  []string `json:"tags" jsonschema:"tags to set"`
	Limit int      `json:"limit" minimum:"1" maximum:"10"`
	Mode  string   `json:"mode" enum:"fast,slow"`
	Opts  struct {
		Deep bool `json:"deep"`
	} `json:"opts"`
}

// fixture is a registry of small real tools and counters of their runs.
type fixture struct {
	reg  *registry.Registry
	runs atomic.Int64
}

func newFixture(t testing.TB) *fixture {
	f := &fixture{reg: registry.New()}
	add := tool.New("add", "Adds two integers.", func(_ context.Context, in addIn) (int, error) {
		f.runs.Add(1)
		return in.A + in.B, nil
	}, tool.ReadOnly())
	list := tool.New("set_tags", "Sets tags.", func(_ context.Context, in listIn) (listIn, error) {
		f.runs.Add(1)
		return in, nil
	})
	boom := tool.New("explode", "Panics.", func(context.Context, struct{}) (string, error) {
		f.runs.Add(1)
		panic("kaboom")
	})
	fail := tool.New("fail_not_found", "Fails.", func(context.Context, struct{}) (string, error) {
		f.runs.Add(1)
		return "", os.ErrNotExist
	})
	slow := tool.New("sleep_ignoring_ctx", "Sleeps 2s whatever its context says.", func(context.Context, struct{}) (string, error) {
		f.runs.Add(1)
		time.Sleep(2 * time.Second)
		return "late", nil
	})
	wait := tool.New("wait_for_cancel", "Waits for its context.", func(ctx context.Context, _ struct{}) (string, error) {
		f.runs.Add(1)
		<-ctx.Done()
		return "", ctx.Err()
	})
	big := tool.New("big_output", "Returns 100 KB of é.", func(context.Context, struct{}) (string, error) {
		return strings.Repeat("é", 50_000), nil
	}, tool.ReadOnly())
	cmd := tool.New("run_command", "A level-2 tool.", func(context.Context, struct{}) (string, error) {
		f.runs.Add(1)
		return "ran", nil
	}, tool.WithLevel(tool.LevelMedium))
	if err := f.reg.Register(add, list, boom, fail, slow, wait, big, cmd); err != nil {
		t.Fatal(err)
	}
	return f
}

func call(name, args string) tool.Call {
	return tool.Call{Name: name, Args: json.RawMessage(args)}
}

func wantError(t *testing.T, res tool.Result, typ tool.ErrorType, contains ...string) {
	t.Helper()
	if res.Error == nil {
		t.Fatalf("want %s error, got success: %s", typ, res.Text())
	}
	if res.Error.Type != typ {
		t.Fatalf("want %s error, got %s: %s", typ, res.Error.Type, res.Error.Message)
	}
	text := res.Text()
	for _, c := range contains {
		if !strings.Contains(text, c) {
			t.Errorf("error text %q does not contain %q", text, c)
		}
	}
	if res.Error.Suggestion == "" {
		t.Errorf("%s error has no suggestion: %q", typ, res.Error.Message)
	}
}

func TestSuccessAndRepair(t *testing.T) {
	f := newFixture(t)
	e := engine.New(engine.Options{Registry: f.reg})
	ctx := context.Background()

	res := e.Execute(ctx, call("add", `{"a":40,"b":2}`))
	if res.IsError() || res.Text() != "42" || res.Structured != 42 {
		t.Fatalf("add = %+v", res)
	}
	res = e.Execute(ctx, call("add", `{"a":"40"}`))
	if res.IsError() || res.Text() != "40" {
		t.Fatalf("repaired add = %+v", res)
	}
	if res.Meta["repairs"] == nil {
		t.Errorf("a repair must be reported in meta, got %v", res.Meta)
	}
	res = e.Execute(ctx, call("set_tags", `{"tags":"solo","limit":"3","mode":"fast","opts":"{\"deep\":true}"}`))
	if res.IsError() {
		t.Fatalf("repairable set_tags failed: %s", res.Text())
	}
	got := res.Structured.(listIn)
	if len(got.Tags) != 1 || got.Tags[0] != "solo" || got.Limit != 3 || !got.Opts.Deep {
		t.Errorf("repaired arguments arrived as %+v", got)
	}
}

func TestBadArguments(t *testing.T) {
	f := newFixture(t)
	e := engine.New(engine.Options{Registry: f.reg})
	ctx := context.Background()
	for _, tc := range []struct {
		name, tool, args string
		contains         []string
	}{
		{"missing required", "add", ``, []string{"/a"}},
		{"empty object, required missing", "add", `{}`, []string{"/a"}},
		{"null", "add", `null`, []string{"/a"}},
		{"truncated JSON", "add", `{"a": 1`, []string{"at byte"}},
		{"concatenated objects", "add", `{"a":1}{"a":2}`, []string{"at byte"}},
		{"single quotes", "add", `{'a': 1}`, []string{"at byte"}},
		{"array", "add", `[1,2]`, []string{"array"}},
		{"string", "add", `"a=1"`, []string{"string"}},
		{"wrong type, not repairable", "add", `{"a":"forty"}`, []string{"/a"}},
		{"unknown property", "add", `{"a":1,"c":3}`, []string{"c"}},
		{"every failing field listed", "set_tags", `{"tags":[1],"limit":50,"mode":"medium","opts":{}}`,
			[]string{"/tags/0", "/limit", "/mode", "/opts/deep"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.runs.Load()
			res := e.Execute(ctx, call(tc.tool, tc.args))
			wantError(t, res, tool.InvalidArguments, tc.contains...)
			if f.runs.Load() != before {
				t.Error("the tool ran on invalid arguments")
			}
		})
	}
}

func TestUnknownTool(t *testing.T) {
	e := engine.New(engine.Options{Registry: newFixture(t).reg})
	for _, tc := range []struct{ name, want string }{
		{"ad", "add"}, {"Add", "add"}, {"set-tags", "set_tags"}, {"settags", "set_tags"}, {"explod", "explode"},
	} {
		res := e.Execute(context.Background(), call(tc.name, `{}`))
		wantError(t, res, tool.UnknownTool, `"`+tc.want+`"`)
	}
	res := e.Execute(context.Background(), call("completely_different_thing", `{}`))
	if res.Error == nil || res.Error.Type != tool.UnknownTool || res.Error.Details["closest"] != nil {
		t.Errorf("a far name must list no closest tools: %+v", res.Error)
	}
}

func TestToolFailures(t *testing.T) {
	f := newFixture(t)
	e := engine.New(engine.Options{Registry: f.reg, Timeout: 100 * time.Millisecond})
	ctx := context.Background()
	wantError(t, e.Execute(ctx, call("explode", `{}`)), tool.Internal, "panicked")
	// The process lives on and the engine keeps working.
	if res := e.Execute(ctx, call("add", `{"a":1}`)); res.IsError() {
		t.Fatalf("after a panic: %s", res.Text())
	}
	if res := e.Execute(ctx, call("fail_not_found", `{}`)); res.Error == nil || res.Error.Type != tool.NotFound {
		t.Errorf("os.ErrNotExist must become not_found: %+v", res.Error)
	}
	start := time.Now()
	wantError(t, e.Execute(ctx, call("sleep_ignoring_ctx", `{}`)), tool.Timeout, "did not finish")
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("a tool that ignores its context held the caller for %s", d)
	}
	wantError(t, e.Execute(ctx, call("wait_for_cancel", `{}`)), tool.Timeout)
}

func TestPolicyAndApproval(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()

	e := engine.New(engine.Options{Registry: f.reg})
	wantError(t, e.Execute(ctx, call("run_command", `{}`)), tool.ApprovalDenied, "no one is available")

	deny := policy.Default()
	deny.Deny = []string{"add"}
	e = engine.New(engine.Options{Registry: f.reg, Policy: deny})
	res := e.Execute(ctx, call("add", `{"a":1}`))
	wantError(t, res, tool.PermissionDenied)
	if res.Error.Details["rule"] != "deny:add" {
		t.Errorf("denial must name its rule: %v", res.Error.Details)
	}

	var asked policy.Request
	e = engine.New(engine.Options{Registry: f.reg, Approver: policy.ApproverFunc(func(_ context.Context, r policy.Request) (policy.Approval, error) {
		asked = r
		return policy.Approval{Approved: false, Approver: "test", Reason: "not on a Friday"}, nil
	})})
	wantError(t, e.Execute(ctx, call("run_command", `{}`)), tool.ApprovalDenied, "not on a Friday")
	if asked.Definition.Name != "run_command" || asked.Decision.Rule != "level:2" {
		t.Errorf("approver was asked %+v", asked)
	}
	e = engine.New(engine.Options{Registry: f.reg, Approver: policy.ApproveAll("test")})
	if res := e.Execute(ctx, call("run_command", `{}`)); res.IsError() {
		t.Errorf("approved call failed: %s", res.Text())
	}
}

func TestBudget(t *testing.T) {
	e := engine.New(engine.Options{Registry: newFixture(t).reg, MaxResultBytes: 1001})
	res := e.Execute(context.Background(), call("big_output", `{}`))
	if res.IsError() {
		t.Fatal(res.Text())
	}
	text := res.Text()
	if !strings.Contains(text, "output truncated") || len(text) > 1300 {
		t.Errorf("output not capped: %d bytes", len(text))
	}
	if !json.Valid([]byte(`"`+strings.SplitN(text, "\n", 2)[0]+`"`)) || strings.ContainsRune(text, '\uFFFD') {
		t.Error("the cut split a character")
	}
	if res.Meta["truncated"] == nil {
		t.Error("truncation must be reported in meta")
	}
}

func TestAuditRecordsEveryCall(t *testing.T) {
	f := newFixture(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := policy.Default()
	p.Deny = []string{"explode"}
	e := engine.New(engine.Options{Registry: f.reg, Auditor: log, Policy: p})
	ctx := context.Background()
	calls := []tool.Call{
		call("add", `{"a":1}`), call("nope", `{}`), call("add", `{"a":`), call("explode", `{}`),
		call("fail_not_found", `{}`), call("set_tags", `{"tags":["`+strings.Repeat("x", 5000)+`"],"limit":1,"mode":"fast","opts":{"deep":false}}`),
	}
	for _, c := range calls {
		e.Execute(ctx, c)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != len(calls) {
		t.Fatalf("%d audit records for %d calls", len(lines), len(calls))
	}
	want := []struct{ tool, outcome, decision, errType string }{
		{"add", "ok", "allow", ""},
		{"nope", "invalid", "", "unknown_tool"},
		{"add", "invalid", "", "invalid_arguments"},
		{"explode", "denied", "deny", "permission_denied"},
		{"fail_not_found", "error", "allow", "not_found"},
		{"set_tags", "ok", "allow", ""},
	}
	for i, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		w := want[i]
		if rec["tool"] != w.tool || rec["outcome"] != w.outcome || rec["decision"] != w.decision || rec["error_type"] != w.errType {
			t.Errorf("record %d = tool %v outcome %v decision %v error %v, want %+v", i+1, rec["tool"], rec["outcome"], rec["decision"], rec["error_type"], w)
		}
		if rec["call_id"] == "" {
			t.Errorf("record %d has no call id", i+1)
		}
	}
	if strings.Contains(lines[5], strings.Repeat("x", 300)) {
		t.Error("a large argument value must be stored as a digest, not verbatim")
	}
	f2, _ := os.Open(path)
	defer f2.Close()
	rep, err := audit.Verify(f2)
	if err != nil || !rep.OK {
		t.Errorf("the engine's log does not verify: %+v %v", rep, err)
	}
}

// failingAuditor fails every append after the first n.
type failingAuditor struct{ n atomic.Int64 }

func (a *failingAuditor) Append(context.Context, audit.Record) error {
	if a.n.Add(-1) < 0 {
		return errors.New("disk full")
	}
	return nil
}

func TestAuditFailureFailsClosed(t *testing.T) {
	f := newFixture(t)
	a := &failingAuditor{}
	a.n.Store(1)
	e := engine.New(engine.Options{Registry: f.reg, Auditor: a})
	ctx := context.Background()
	if res := e.Execute(ctx, call("add", `{"a":1}`)); res.IsError() {
		t.Fatal(res.Text())
	}
	if res := e.Execute(ctx, call("add", `{"a":1}`)); res.Meta["audit_error"] == nil {
		t.Errorf("the failed audit write must be reported: %+v", res.Meta)
	}
	before := f.runs.Load()
	wantError(t, e.Execute(ctx, call("add", `{"a":1}`)), tool.Unavailable, "audit log")
	if f.runs.Load() != before {
		t.Error("a call ran while the audit log was failing")
	}
}

func TestExecuteAll(t *testing.T) {
	reg := registry.New()
	var running, peak atomic.Int64
	var mu sync.Mutex
	reg.Register(tool.New("work", "Works a little.", func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (int, error) {
		n := running.Add(1)
		mu.Lock()
		peak.Store(max(peak.Load(), n))
		mu.Unlock()
		defer running.Add(-1)
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		if in.N%5 == 0 {
			return 0, tool.Errorf(tool.Conflict, "multiple of five")
		}
		return in.N * 10, nil
	}, tool.ReadOnly()))
	e := engine.New(engine.Options{Registry: reg, Parallelism: 4})
	var calls []tool.Call
	for i := 1; i <= 20; i++ {
		calls = append(calls, call("work", `{"n":`+string(rune('0'+i%10))+`}`))
	}
	results := e.ExecuteAll(context.Background(), calls)
	for i, res := range results {
		n := (i + 1) % 10
		if n%5 == 0 {
			if res.Error == nil || res.Error.Type != tool.Conflict {
				t.Errorf("call %d: want conflict, got %+v", i, res)
			}
			continue
		}
		if res.IsError() || res.Structured != n*10 {
			t.Errorf("call %d: got %+v, want %d", i, res.Structured, n*10)
		}
	}
	if p := peak.Load(); p > 4 || p < 2 {
		t.Errorf("peak parallelism %d, want 2..4", p)
	}
}

func TestExecuteAllCancellation(t *testing.T) {
	f := newFixture(t)
	e := engine.New(engine.Options{Registry: f.reg, Parallelism: 2})
	ctx, cancel := context.WithCancel(context.Background())
	calls := []tool.Call{call("wait_for_cancel", `{}`), call("wait_for_cancel", `{}`), call("wait_for_cancel", `{}`), call("wait_for_cancel", `{}`)}
	go func() {
		for f.runs.Load() < 2 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	done := make(chan []tool.Result)
	go func() { done <- e.ExecuteAll(ctx, calls) }()
	select {
	case results := <-done:
		for i, res := range results {
			if res.Error == nil || res.Error.Type != tool.Timeout {
				t.Errorf("call %d: want a cancellation error, got %+v", i, res)
			}
		}
		if r := f.runs.Load(); r != 2 {
			t.Errorf("%d tools started; calls queued behind a cancelled batch must not start", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancellation did not reach the running calls")
	}
}

// ctxAuditor keeps what it sees of the context of each append.
type ctxAuditor struct {
	mu   sync.Mutex
	seen []string
}

type auditCtxKey struct{}

func (a *ctxAuditor) Append(ctx context.Context, _ audit.Record) error {
	_, hasDeadline := ctx.Deadline()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = append(a.seen, fmt.Sprintf("done=%v err=%v deadline=%v value=%v", ctx.Done() != nil, ctx.Err(), hasDeadline, ctx.Value(auditCtxKey{})))
	return nil
}

// noDoneCtx reports a deadline but no Done channel (the contract allows a
// nil Done only for a context that is never cancelled; this one bends it).
type noDoneCtx struct{ context.Context }

func (noDoneCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Second), true }

// TestAuditorContextNeverCancelled: whatever the caller's context (plain,
// cancelled, past or future deadline, carrying values), the auditor gets one
// that is not cancelled and has no deadline, with the caller's values: the
// record of a cancelled call is written.
func TestAuditorContextNeverCancelled(t *testing.T) {
	f := newFixture(t)
	a := &ctxAuditor{}
	e := engine.New(engine.Options{Registry: f.reg, Auditor: a})
	bg := context.WithValue(context.Background(), auditCtxKey{}, "v")
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	past, cancel2 := context.WithDeadline(bg, time.Now().Add(-time.Second))
	defer cancel2()
	future, cancel3 := context.WithTimeout(bg, time.Hour)
	defer cancel3()
	live, cancel4 := context.WithCancel(bg)
	defer cancel4()
	ctxs := map[string]context.Context{
		"background": bg, "cancelled": cancelled, "past deadline": past, "future deadline": future,
		"cancellable": live, "without cancel": context.WithoutCancel(cancelled), "deadline, no done": noDoneCtx{bg},
	}
	for name, ctx := range ctxs {
		a.seen = nil
		e.Execute(ctx, call("add", `{"a":1}`))
		e.Execute(ctx, call("nope", `{}`))
		if len(a.seen) != 2 {
			t.Fatalf("%s: %d records for 2 calls", name, len(a.seen))
		}
		for _, s := range a.seen {
			if want := "done=false err=<nil> deadline=false value=v"; s != want {
				t.Errorf("%s: the auditor saw %s, want %s", name, s, want)
			}
		}
	}
}

// TestGeneratedCallIDs: a call without an ID gets call_<the engine's 12 hex
// digits>_<n>, n counting from 1, the same prefix for every call of one
// engine and another for another engine; a call's own ID is kept.
func TestGeneratedCallIDs(t *testing.T) {
	f := newFixture(t)
	ids := func(calls ...tool.Call) []string {
		a := &memAudit{}
		e := engine.New(engine.Options{Registry: f.reg, Auditor: a})
		for _, c := range calls {
			e.Execute(context.Background(), c)
		}
		var out []string
		for _, r := range a.recs {
			out = append(out, r.CallID)
		}
		return out
	}
	own := call("add", `{"a":1}`)
	own.ID = "mine"
	first := ids(call("add", `{"a":1}`), own, call("add", `{"a":2}`), call("nope", `{}`))
	form := regexp.MustCompile(`^(call_[0-9a-f]{12}_)([0-9]+)$`)
	var prefix string
	for i, n := range []string{"1", "", "2", "3"} {
		if n == "" {
			if first[i] != "mine" {
				t.Errorf("call %d: ID %q, want its own %q", i, first[i], "mine")
			}
			continue
		}
		m := form.FindStringSubmatch(first[i])
		if m == nil || m[2] != n {
			t.Fatalf("call %d: ID %q, want call_<12 hex>_%s", i, first[i], n)
		}
		if prefix == "" {
			prefix = m[1]
		} else if m[1] != prefix {
			t.Errorf("call %d: prefix %q, want the engine's %q", i, m[1], prefix)
		}
	}
	if other := ids(call("add", `{"a":1}`)); strings.HasPrefix(other[0], prefix) {
		t.Errorf("another engine's ID %q has this engine's prefix %q", other[0], prefix)
	}
}
