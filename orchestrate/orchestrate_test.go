package orchestrate_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/orchestrate"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/toolsets/fs"
)

// env is a workspace with the real file tools, a few test tools, an audit
// log and an engine with run_plan registered.
type env struct {
	ws      string
	reg     *registry.Registry
	engine  *engine.Engine
	runner  *orchestrate.Runner
	log     *audit.Log
	logPath string
	barrier *barrier
	started chan string // block's calls announce themselves here
}

// barrier releases its callers once n of them wait at once: two steps
// pass it only if they run at the same time.
type barrier struct {
	mu      sync.Mutex
	n, have int
	open    chan struct{}
}

func (b *barrier) wait(ctx context.Context) error {
	b.mu.Lock()
	b.have++
	if b.have == b.n {
		close(b.open)
	}
	b.mu.Unlock()
	select {
	case <-b.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type nameIn struct {
	Name string `json:"name"`
}

type sumIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type sumOut struct {
	Sum float64 `json:"sum"`
}

func newEnv(t *testing.T, p *policy.Policy) *env {
	t.Helper()
	ws := t.TempDir()
	for name, data := range map[string]string{
		"a.txt":   "alpha\nbeta\n",
		"b.txt":   "bravo\n",
		"bin.dat": "\x00\x01\x02binary",
	} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	roots, err := fs.OpenRoots(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { roots.Close() })
	tools, err := fs.Tools(roots, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{ws: ws, reg: registry.New(), barrier: &barrier{n: 2, open: make(chan struct{})}, started: make(chan string, 16)}
	tools = append(tools,
		tool.New("meet", "Waits until another meet call runs at the same time.", func(ctx context.Context, in nameIn) (nameIn, error) {
			return in, e.barrier.wait(ctx)
		}, tool.WithAnnotations(tool.Annotations{ReadOnly: true})),
		tool.New("block", "Blocks until cancelled.", func(ctx context.Context, in nameIn) (nameIn, error) {
			e.started <- in.Name
			<-ctx.Done()
			return in, ctx.Err()
		}, tool.WithAnnotations(tool.Annotations{ReadOnly: true})),
		tool.New("add", "Adds two numbers.", func(_ context.Context, in sumIn) (sumOut, error) {
			return sumOut{in.A + in.B}, nil
		}, tool.WithAnnotations(tool.Annotations{ReadOnly: true})),
	)
	if err := e.reg.Register(tools...); err != nil {
		t.Fatal(err)
	}
	e.logPath = filepath.Join(t.TempDir(), "audit.jsonl")
	if e.log, err = audit.Open(e.logPath, audit.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.log.Close() })
	e.engine = engine.New(engine.Options{Registry: e.reg, Auditor: e.log, Policy: p, Timeout: 20 * time.Second})
	e.runner = orchestrate.NewRunner(e.engine, orchestrate.Limits{})
	if err := e.reg.Register(orchestrate.RunPlanTool(e.runner)); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) records(t *testing.T) []audit.Record {
	t.Helper()
	f, err := os.Open(e.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := audit.Select(f, audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func report(t *testing.T, res tool.Result) *orchestrate.Report {
	t.Helper()
	if rep, ok := res.Structured.(*orchestrate.Report); ok {
		return rep
	}
	if res.Error != nil {
		if steps, ok := res.Error.Details["steps"].([]orchestrate.StepReport); ok {
			return &orchestrate.Report{Steps: steps}
		}
	}
	t.Fatalf("no report in %+v", res)
	return nil
}

func step(t *testing.T, rep *orchestrate.Report, id string) orchestrate.StepReport {
	t.Helper()
	for _, s := range rep.Steps {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no step %q in %+v", id, rep.Steps)
	return orchestrate.StepReport{}
}

// The plan of the issue: parallel branches (two meet calls that can only
// finish together), references, a condition, and a fallback.
const bigPlan = `{"steps": [
  {"id": "left",  "tool": "meet", "args": {"name": "L"}},
  {"id": "right", "tool": "meet", "args": {"name": "R"}},
  {"id": "info",  "tool": "get_file_info", "args": {"path": "a.txt"}},
  {"id": "sum",   "tool": "add", "args": {"a": {"$ref": "info.structured.size"}, "b": 1}, "after": ["left", "right"]},
  {"id": "read",  "tool": "read_file", "args": {"path": {"$ref": "info.structured.path"}},
   "when": {"all": [{"$ref": "info.structured.binary", "not_equals": true}, {"$ref": "sum.structured.sum", "gt": 10}]}},
  {"id": "never", "tool": "read_file", "args": {"path": "b.txt"}, "when": {"$ref": "left.structured.name", "equals": "nope"}},
  {"id": "bin",   "tool": "read_file", "args": {"path": "bin.dat"},
   "on_failure": {"tool": "get_file_info", "args": {"path": "bin.dat"}}},
  {"id": "why",   "tool": "add", "args": {"a": 1, "b": 2}, "when": {"$ref": "bin.status", "equals": "ok"}}
]}`

func TestRunPlanThroughEngine(t *testing.T) {
	e := newEnv(t, nil)
	res := e.engine.Execute(context.Background(), tool.Call{ID: "plan1", Name: "run_plan", Args: json.RawMessage(bigPlan), Session: "s1", Principal: "model"})
	if res.Error != nil {
		t.Fatalf("plan failed: %s", res.Error.Text())
	}
	rep := report(t, res)
	if rep.Status != "ok" {
		t.Fatalf("status %s", rep.Status)
	}
	order := []string{"left", "right", "info", "sum", "read", "never", "bin", "why"}
	for i, id := range order {
		if rep.Steps[i].ID != id {
			t.Fatalf("step %d is %s, want the plan's order %v", i, rep.Steps[i].ID, order)
		}
	}
	want := map[string]orchestrate.Status{"left": "ok", "right": "ok", "info": "ok", "sum": "ok", "read": "ok", "never": "skipped", "bin": "ok", "why": "ok"}
	for id, st := range want {
		if s := step(t, rep, id); s.Status != st {
			t.Errorf("step %s: %s (%s %v), want %s", id, s.Status, s.Reason, s.Error, st)
		}
	}
	if s := step(t, rep, "sum"); s.Structured.(map[string]any)["sum"] != json.Number("12") {
		t.Errorf("sum = %v, want 12 (size of a.txt + 1)", s.Structured)
	}
	if s := step(t, rep, "read"); !strings.Contains(s.Text, "alpha") {
		t.Errorf("read: %q", s.Text)
	}
	bin := step(t, rep, "bin")
	if bin.Fallback != "get_file_info" || bin.FallbackFrom == nil || bin.FallbackFrom.Type != tool.InvalidArguments {
		t.Errorf("bin: fallback %q from %v", bin.Fallback, bin.FallbackFrom)
	}
	if !strings.Contains(res.Text(), "step never (read_file): skipped") {
		t.Errorf("summary text:\n%s", res.Text())
	}
	// Every step is its own audited call, with the plan's identity.
	byID := map[string]audit.Record{}
	for _, r := range e.records(t) {
		byID[r.CallID] = r
		if r.Session != "s1" || r.Principal != "model" {
			t.Errorf("record %s: session %q principal %q", r.CallID, r.Session, r.Principal)
		}
	}
	for _, id := range []string{"plan1", "plan1/left", "plan1/right", "plan1/info", "plan1/sum", "plan1/read", "plan1/bin", "plan1/bin/fallback", "plan1/why"} {
		if _, ok := byID[id]; !ok {
			t.Errorf("no audit record for %s", id)
		}
	}
	if r := byID["plan1/bin"]; r.Tool != "read_file" || r.Outcome != "invalid" {
		t.Errorf("the failed step's record: %+v", r)
	}
	if _, ok := byID["plan1/never"]; ok {
		t.Error("a skipped step must not run")
	}
}

func TestFailureModes(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	run := func(plan string) (*orchestrate.Report, tool.Result) {
		t.Helper()
		res := e.engine.Execute(ctx, tool.Call{Name: "run_plan", Args: json.RawMessage(plan)})
		return report(t, res), res
	}
	// abort (default): the steps after are skipped, the plan fails with the step's error.
	rep, res := run(`{"steps":[
		{"id":"bad","tool":"read_file","args":{"path":"missing.txt"}},
		{"id":"later","tool":"read_file","args":{"path":"a.txt"},"after":["bad"]}]}`)
	if res.Error == nil || res.Error.Type != tool.NotFound || res.Error.Details["failed_step"] != "bad" {
		t.Fatalf("abort: error %v", res.Error)
	}
	if s := step(t, rep, "later"); s.Status != "skipped" || !strings.Contains(s.Reason, `step "bad" failed`) {
		t.Errorf("later: %s %q", s.Status, s.Reason)
	}
	// skip: the plan goes on; a step needing the failed one's result is
	// skipped, one reading its error runs.
	rep, res = run(`{"steps":[
		{"id":"bad","tool":"read_file","args":{"path":"missing.txt"},"on_failure":"skip"},
		{"id":"dep","tool":"read_file","args":{"path":{"$ref":"bad.structured.path"}}},
		{"id":"dep2","tool":"add","args":{"a":{"$ref":"dep.structured.lines"},"b":1}},
		{"id":"err","tool":"add","args":{"a":1,"b":1},"when":{"$ref":"bad.error.type","equals":"not_found"}},
		{"id":"other","tool":"add","args":{"a":2,"b":2}}]}`)
	if res.Error != nil {
		t.Fatalf("skip: %s", res.Error.Text())
	}
	for id, st := range map[string]orchestrate.Status{"bad": "failed", "dep": "skipped", "dep2": "skipped", "err": "ok", "other": "ok"} {
		if s := step(t, rep, id); s.Status != st {
			t.Errorf("%s: %s (%s), want %s", id, s.Status, s.Reason, st)
		}
	}
	// a reference into a successful step that finds nothing fails the step.
	_, res = run(`{"steps":[
		{"id":"a","tool":"add","args":{"a":1,"b":1}},
		{"id":"b","tool":"add","args":{"a":{"$ref":"a.structured.nothing"},"b":1}}]}`)
	if res.Error == nil || res.Error.Type != tool.InvalidArguments || !strings.Contains(res.Error.Message, "a.structured.nothing") {
		t.Errorf("missing path: %v", res.Error)
	}
	// a failing fallback fails the step with both errors.
	_, res = run(`{"steps":[{"id":"x","tool":"read_file","args":{"path":"missing.txt"},
		"on_failure":{"tool":"get_file_info","args":{"path":"missing-too.txt"}}}]}`)
	if res.Error == nil || res.Error.Type != tool.NotFound {
		t.Errorf("failing fallback: %v", res.Error)
	}
}

func TestValidationErrors(t *testing.T) {
	e := newEnv(t, nil)
	deep := `{"a":` + strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40) + `}`
	big := `{"s":"` + strings.Repeat("x", 300<<10) + `"}`
	var many []string
	for i := range 70 {
		many = append(many, `{"id":"s`+string(rune('a'+i%26))+strings.Repeat("x", i/26)+`","tool":"add"}`)
	}
	tests := []struct {
		name, plan, step, pointer, msg string
	}{
		{"unknown tool", `{"steps":[{"id":"a","tool":"launch_rockets"}]}`, "a", "/steps/0/tool", "no tool named"},
		{"unknown ref", `{"steps":[{"id":"a","tool":"add","args":{"a":{"$ref":"zz.structured.x"}}}]}`, "a", "/steps/0/args/a/$ref", "unknown step"},
		{"forward ref", `{"steps":[{"id":"a","tool":"add","args":{"a":{"$ref":"b.structured.sum"}}},{"id":"b","tool":"add"}]}`, "a", "/steps/0/args/a/$ref", "forward reference"},
		{"cycle", `{"steps":[{"id":"a","tool":"add","args":{"a":{"$ref":"a.structured.sum"}}}]}`, "a", "/steps/0/args/a/$ref", "itself"},
		{"after forward", `{"steps":[{"id":"a","tool":"add","after":["b"]},{"id":"b","tool":"add"}]}`, "a", "/steps/0/after/0", "forward reference"},
		{"duplicate", `{"steps":[{"id":"a","tool":"add"},{"id":"a","tool":"add"}]}`, "a", "/steps/1/id", "duplicate"},
		{"bad id", `{"steps":[{"id":"a b","tool":"add"}]}`, "a b", "/steps/0/id", "letters"},
		{"no steps", `{"steps":[]}`, "", "/steps", "at least one"},
		{"too many", `{"steps":[` + strings.Join(many, ",") + `]}`, "", "/steps", "over the limit"},
		{"too deep", `{"steps":[{"id":"a","tool":"add","args":` + deep + `}]}`, "a", "/steps/0/args", "nested"},
		{"too big", `{"steps":[{"id":"a","tool":"add","args":` + big + `}]}`, "a", "/steps/0/args", "bytes"},
		{"bad field", `{"steps":[{"id":"a","tool":"add","args":{"a":{"$ref":"a0.bogus"}}},{"id":"a0","tool":"add"}]}`, "a", "/steps/0/args/a/$ref", "no field"},
		{"bad ref shape", `{"steps":[{"id":"b","tool":"add"},{"id":"a","tool":"add","args":{"a":{"$ref":"b.text","x":1}}}]}`, "a", "/steps/1/args/a", "exactly"},
		{"bad condition", `{"steps":[{"id":"b","tool":"add"},{"id":"a","tool":"add","when":{"$ref":"b.status","matches":"ok"}}]}`, "a", "/steps/1/when/matches", "unknown operator"},
		{"two operators", `{"steps":[{"id":"b","tool":"add"},{"id":"a","tool":"add","when":{"$ref":"b.status","equals":"ok","exists":true}}]}`, "a", "/steps/1/when", "one operator"},
		{"gt needs number", `{"steps":[{"id":"b","tool":"add"},{"id":"a","tool":"add","when":{"$ref":"b.structured.sum","gt":"5"}}]}`, "a", "/steps/1/when/gt", "number"},
		{"bad on_failure", `{"steps":[{"id":"a","tool":"add","on_failure":"retry"}]}`, "a", "/steps/0/on_failure", "abort"},
		{"fallback unknown tool", `{"steps":[{"id":"a","tool":"add","on_failure":{"tool":"nope"}}]}`, "a", "/steps/0/on_failure/tool", "no tool named"},
		{"fallback reads own result", `{"steps":[{"id":"a","tool":"add","on_failure":{"tool":"add","args":{"a":{"$ref":"a.structured.sum"}}}}]}`, "a", "/steps/0/on_failure/args/a/$ref", "error and status"},
		{"unknown step field", `{"steps":[{"id":"a","tool":"add","argz":{}}]}`, "a", "/steps/0/argz", "unknown field"},
		{"input in a plan", `{"steps":[{"id":"a","tool":"add","args":{"a":{"$ref":"input.x"}}}]}`, "a", "/steps/0/args/a/$ref", "composite"},
		{"plan in a plan", `{"steps":[{"id":"a","tool":"run_plan","args":{"steps":[]}}]}`, "a", "/steps/0/tool", "may not run run_plan"},
		{"not an object", `{"steps":[7]}`, "", "/steps/0", "JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := e.engine.Execute(context.Background(), tool.Call{Name: "run_plan", Args: json.RawMessage(tc.plan)})
			if res.Error == nil || res.Error.Type != tool.InvalidArguments {
				t.Fatalf("want invalid_arguments, got %+v", res.Error)
			}
			probs, ok := res.Error.Details["problems"].([]orchestrate.Problem)
			if !ok {
				// the engine's schema check may answer first (e.g. "steps":[]):
				if strings.Contains(strings.ToLower(res.Error.Text()), strings.ToLower(tc.msg)) || tc.name == "no steps" || tc.name == "not an object" {
					return
				}
				t.Fatalf("no problems listed: %s", res.Error.Text())
			}
			for _, p := range probs {
				if p.Step == tc.step && p.Pointer == tc.pointer && strings.Contains(p.Message, tc.msg) {
					return
				}
			}
			t.Errorf("want a problem at step %q %s saying %q; got %+v", tc.step, tc.pointer, tc.msg, probs)
		})
	}
	// Several problems are listed at once, and nothing ran.
	before := len(e.records(t))
	res := e.engine.Execute(context.Background(), tool.Call{Name: "run_plan", Args: json.RawMessage(
		`{"steps":[{"id":"a","tool":"nope"},{"id":"a","tool":"add","args":{"a":{"$ref":"z.text"}}},{"id":"c","tool":"add"}]}`)})
	if probs := res.Error.Details["problems"].([]orchestrate.Problem); len(probs) != 3 {
		t.Errorf("want 3 problems, got %+v", probs)
	}
	if after := len(e.records(t)); after != before+1 {
		t.Errorf("an invalid plan ran steps: %d new records", after-before)
	}
}

func TestCancellation(t *testing.T) {
	e := newEnv(t, nil)
	plan, err := orchestrate.Parse([]byte(`{"steps":[
		{"id":"wait","tool":"block","args":{"name":"w"}},
		{"id":"free","tool":"add","args":{"a":1,"b":1}},
		{"id":"after","tool":"add","args":{"a":1,"b":1},"after":["wait"]}]}`), orchestrate.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-e.started
		cancel()
	}()
	rep, err := e.runner.Run(ctx, plan, tool.Call{ID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != "cancelled" {
		t.Errorf("status %s", rep.Status)
	}
	if s := step(t, rep, "wait"); s.Status != "failed" || s.Error.Type != tool.Timeout {
		t.Errorf("wait: %s %v", s.Status, s.Error)
	}
	if s := step(t, rep, "after"); s.Status != "skipped" {
		t.Errorf("after: %s", s.Status)
	}
	if res := rep.Result(); res.Error == nil || res.Error.Type != tool.Timeout {
		t.Errorf("a cancelled plan's result: %v", res.Error)
	}
	// A plan started on a cancelled context runs nothing.
	rep, _ = e.runner.Run(ctx, plan, tool.Call{})
	for _, s := range rep.Steps {
		if s.Status != "skipped" {
			t.Errorf("%s ran after cancellation: %s", s.ID, s.Status)
		}
	}
}

func TestStepsAreGoverned(t *testing.T) {
	p, err := policy.Parse([]byte("deny:\n  - write_file\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, p)
	res := e.engine.Execute(context.Background(), tool.Call{ID: "g", Name: "run_plan", Args: json.RawMessage(`{"steps":[
		{"id":"w","tool":"write_file","args":{"path":"new.txt","content":"x"}},
		{"id":"r","tool":"read_file","args":{"path":"a.txt"}}]}`)})
	if res.Error == nil || res.Error.Type != tool.PermissionDenied {
		t.Fatalf("a denied step must stop the plan: %v", res.Error)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the denied write happened")
	}
	var denied bool
	for _, r := range e.records(t) {
		if r.CallID == "g/w" && r.Outcome == "denied" {
			denied = true
		}
	}
	if !denied {
		t.Error("the denied step has no audit record")
	}
}

func TestComposite(t *testing.T) {
	e := newEnv(t, nil)
	f, err := orchestrate.ParseFile([]byte(`
composites:
  - name: inspect_file
    description: Describe a file and read its first lines.
    input_schema: {type: object, properties: {path: {type: string}}, required: [path]}
    steps:
      - {id: info, tool: get_file_info, args: {path: {$ref: input.path}}}
      - {id: head, tool: read_file, args: {path: {$ref: input.path}, limit: 1}, when: {$ref: info.structured.binary, not_equals: true}}
    result: head
  - name: double_inspect
    description: Inspect twice.
    input_schema: {type: object, properties: {path: {type: string}}}
    steps:
      - {id: one, tool: inspect_file, args: {path: {$ref: input.path}}}
fallbacks:
  - {tool: read_file, fallback: get_file_info, on: [invalid_arguments], args: {path: {$ref: input.path}}}
`), orchestrate.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Apply(e.runner); err != nil {
		t.Fatal(err)
	}
	def, _ := e.reg.Definition("inspect_file")
	if !def.HasTag(orchestrate.TagComposite) || !def.Annotations.ReadOnly {
		t.Errorf("composite definition %+v", def)
	}
	res := e.engine.Execute(context.Background(), tool.Call{ID: "c", Name: "inspect_file", Args: json.RawMessage(`{"path":"a.txt"}`)})
	if res.Error != nil || !strings.Contains(res.Text(), "alpha") || strings.Contains(res.Text(), "beta") {
		t.Fatalf("composite: %+v", res)
	}
	if steps, ok := res.Meta["steps"]; !ok || !strings.Contains(mustJSON(steps), `"call_id":"c/head"`) {
		t.Errorf("meta steps: %v", res.Meta)
	}
	res = e.engine.Execute(context.Background(), tool.Call{Name: "double_inspect", Args: json.RawMessage(`{"path":"b.txt"}`)})
	if res.Error != nil || !strings.Contains(res.Text(), "bravo") {
		t.Errorf("composite of a composite: %+v", res)
	}
	// The engine validates a composite's arguments against its schema.
	res = e.engine.Execute(context.Background(), tool.Call{Name: "inspect_file", Args: json.RawMessage(`{}`)})
	if res.Error == nil || res.Error.Type != tool.InvalidArguments {
		t.Errorf("missing path: %v", res.Error)
	}
	// Views: atomics and composites apart.
	names := func(defs []tool.Definition) string {
		var n []string
		for _, d := range defs {
			n = append(n, d.Name)
		}
		return strings.Join(n, ",")
	}
	if got := names(orchestrate.Definitions(e.reg, orchestrate.Composites)); got != "inspect_file,double_inspect" {
		t.Errorf("composites: %s", got)
	}
	if got := names(orchestrate.Definitions(e.reg, orchestrate.Atomics)); strings.Contains(got, "inspect_file") || !strings.Contains(got, "read_file") {
		t.Errorf("atomics: %s", got)
	}
	// The fallback: read_file on a binary file answered by get_file_info.
	res = e.engine.Execute(context.Background(), tool.Call{ID: "fb", Name: "read_file", Args: json.RawMessage(`{"path":"bin.dat"}`)})
	fb, _ := res.Meta["fallback"].(map[string]any)
	if res.Error != nil || fb["to"] != "get_file_info" || fb["from"] != "read_file" || !strings.Contains(res.Text(), "get_file_info answered") {
		t.Fatalf("fallback: %+v", res)
	}
	recs := e.records(t)
	if last := recs[len(recs)-1]; last.CallID != "fb" || last.Outcome != "ok (fallback: get_file_info)" {
		t.Errorf("audit of the fallback: %+v", last)
	}
}

func TestCompositeErrors(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct{ name, file, want string }{
		{"unknown property", `composites: [{name: x, description: d, input_schema: {type: object, properties: {path: {type: string}}}, steps: [{id: a, tool: read_file, args: {path: {$ref: input.pth}}}]}]`, "no property"},
		{"unknown tool", `composites: [{name: x, description: d, steps: [{id: a, tool: nope}]}]`, "no tool named"},
		{"bad result", `composites: [{name: x, description: d, steps: [{id: a, tool: add}], result: b}]`, "no step"},
		{"no description", `composites: [{name: x, steps: [{id: a, tool: add}]}]`, "no description"},
		{"unknown error type", `fallbacks: [{tool: read_file, fallback: get_file_info, on: [oops]}]`, "unknown error type"},
		{"fallback template ref", `fallbacks: [{tool: read_file, fallback: get_file_info, args: {path: {$ref: a.text}}}]`, "only to input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := orchestrate.ParseFile([]byte(tc.file), orchestrate.Limits{})
			if err == nil {
				err = f.Apply(e.runner)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want an error saying %q, got %v", tc.want, err)
			}
		})
	}
}

func TestNestingLimit(t *testing.T) {
	e := newEnv(t, nil)
	r := orchestrate.NewRunner(e.engine, orchestrate.Limits{MaxNesting: 2})
	prev := "add"
	for _, name := range []string{"c1", "c2", "c3"} {
		p, _ := orchestrate.Parse([]byte(`{"steps":[{"id":"s","tool":"`+prev+`","args":{"a":1,"b":2}}]}`), orchestrate.Limits{})
		c, err := orchestrate.NewComposite(r, orchestrate.Composite{Name: name, Description: "nested", Plan: p})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.reg.Register(c); err != nil {
			t.Fatal(err)
		}
		prev = name
	}
	if res := e.engine.Execute(context.Background(), tool.Call{Name: "c2", Args: json.RawMessage(`{}`)}); res.Error != nil {
		t.Errorf("two levels: %v", res.Error)
	}
	res := e.engine.Execute(context.Background(), tool.Call{Name: "c3", Args: json.RawMessage(`{}`)})
	if res.Error == nil || !strings.Contains(res.Error.Message, "nested") {
		t.Errorf("three levels over a limit of two: %v", res.Error)
	}
}

func TestFallbackNeverAnswersRefusals(t *testing.T) {
	refuse := tool.Func(tool.Definition{Name: "p", Description: "refuses", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, tool.Call) (tool.Result, error) {
			return tool.Result{}, tool.Errorf(tool.PermissionDenied, "no")
		})
	answered := false
	other := tool.Func(tool.Definition{Name: "q", Description: "answers", InputSchema: json.RawMessage(`{"type":"object"}`), Level: tool.LevelMedium},
		func(context.Context, tool.Call) (tool.Result, error) {
			answered = true
			return tool.TextResult("yes"), nil
		})
	fb := orchestrate.Fallback(refuse, other, nil, tool.PermissionDenied, tool.Internal)
	if fb.Definition().Level != tool.LevelMedium || fb.Definition().Name != "p" {
		t.Errorf("definition %+v: want p's name at the higher level", fb.Definition())
	}
	_, err := fb.Run(context.Background(), tool.Call{Name: "p"})
	if te := tool.AsError(err); te == nil || te.Type != tool.PermissionDenied || answered {
		t.Errorf("a refusal was routed around: %v, answered %v", err, answered)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
