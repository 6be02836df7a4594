package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/audit"
)

// planWorkspace holds a text file, a binary file and a composites file.
func planWorkspace(t *testing.T) string {
	t.Helper()
	ws := workspace(t)
	files := map[string]string{
		"a.txt":   "alpha\nbeta\n",
		"b.txt":   "bravo\n",
		"bin.dat": "\x00\x01binary",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

const cliPlan = `{"steps": [
  {"id": "info", "tool": "get_file_info", "args": {"path": "a.txt"}},
  {"id": "other", "tool": "read_file", "args": {"path": "b.txt"}},
  {"id": "read", "tool": "read_file", "args": {"path": {"$ref": "info.structured.path"}, "limit": 1},
   "when": {"$ref": "info.structured.binary", "not_equals": true}},
  {"id": "skipme", "tool": "read_file", "args": {"path": "a.txt"}, "when": {"$ref": "other.status", "equals": "failed"}},
  {"id": "bin", "tool": "read_file", "args": {"path": "bin.dat"},
   "on_failure": {"tool": "get_file_info", "args": {"path": "bin.dat"}}}
]}`

type planOutput struct {
	IsError    bool `json:"is_error"`
	Structured struct {
		Status string `json:"status"`
		Steps  []struct {
			ID, Tool, Status, Reason, Text, Fallback string
			CallID                                   string `json:"call_id"`
		} `json:"steps"`
	} `json:"structured"`
	Error struct {
		Type    string `json:"type"`
		Details struct {
			Problems []struct{ Step, Pointer, Message string } `json:"problems"`
		} `json:"details"`
	} `json:"error"`
}

func planAudit(t *testing.T, ws string) []audit.Record {
	t.Helper()
	f, err := os.Open(filepath.Join(filepath.Dir(ws), "audit.jsonl"))
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

func TestPlanRunFile(t *testing.T) {
	ws := planWorkspace(t)
	if err := os.WriteFile(filepath.Join(ws, "plan.json"), []byte(cliPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	r := toolgate(t, ws, "", "plan", "run", "plan.json", "--session", "cli-plan")
	var out planOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 {
		t.Fatalf("exit %d: %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	want := [][2]string{{"info", "ok"}, {"other", "ok"}, {"read", "ok"}, {"skipme", "skipped"}, {"bin", "ok"}}
	for i, w := range want {
		if s := out.Structured.Steps[i]; s.ID != w[0] || s.Status != w[1] {
			t.Errorf("step %d: %s %s (%s), want %v", i, s.ID, s.Status, s.Reason, w)
		}
	}
	if s := out.Structured.Steps[2]; !strings.Contains(s.Text, "alpha") || strings.Contains(s.Text, "beta") {
		t.Errorf("read: %q", s.Text)
	}
	if s := out.Structured.Steps[4]; s.Fallback != "get_file_info" {
		t.Errorf("bin: %+v", s)
	}
	// Each step is its own audited call under the plan's id.
	plan := strings.TrimSuffix(out.Structured.Steps[0].CallID, "/info")
	seen := map[string]string{}
	for _, rec := range planAudit(t, ws) {
		if rec.Session == "cli-plan" {
			seen[rec.CallID] = rec.Outcome
		}
	}
	for _, id := range []string{"info", "other", "read", "bin", "bin/fallback"} {
		if _, ok := seen[plan+"/"+id]; !ok {
			t.Errorf("no audit record %s/%s in %v", plan, id, seen)
		}
	}
	// YAML and stdin work too.
	r = toolgate(t, ws, "steps:\n  - {id: one, tool: read_file, args: {path: a.txt}}\n", "plan", "run", "-")
	if r.code != 0 || !strings.Contains(r.stdout, "alpha") {
		t.Errorf("YAML plan on stdin: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A step that fails stops the plan: exit 1.
	r = toolgate(t, ws, `{"steps":[{"id":"x","tool":"read_file","args":{"path":"nope.txt"}},{"id":"y","tool":"read_file","args":{"path":"a.txt"},"after":["x"]}]}`, "plan", "run", "-")
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 1 || out.Error.Type != "not_found" || len(out.Structured.Steps) != 2 || out.Structured.Steps[1].Status != "skipped" {
		t.Errorf("failing plan: exit %d\n%s", r.code, r.stdout)
	}
}

func TestPlanRunInvalid(t *testing.T) {
	ws := planWorkspace(t)
	r := toolgate(t, ws, `{"steps":[{"id":"a","tool":"nope"},{"id":"b","tool":"read_file","args":{"path":{"$ref":"c.structured.path"}}},{"id":"c","tool":"read_file"}]}`, "plan", "run", "-")
	var out planOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 2 {
		t.Fatalf("exit %d: %v\n%s", r.code, err, r.stdout)
	}
	if p := out.Error.Details.Problems; len(p) != 2 || p[0].Step != "a" || p[1].Pointer != "/steps/1/args/path/$ref" {
		t.Errorf("problems: %+v", p)
	}
	if n := len(planAudit(t, ws)); n != 0 {
		t.Errorf("an invalid plan made %d calls", n)
	}
}

const cliComposites = `
composites:
  - name: inspect_file
    description: Describe a file, and read its first line when it is text.
    input_schema: {type: object, properties: {path: {type: string}}, required: [path]}
    steps:
      - {id: info, tool: get_file_info, args: {path: {$ref: input.path}}}
      - {id: head, tool: read_file, args: {path: {$ref: input.path}, limit: 1}, when: {$ref: info.structured.binary, not_equals: true}}
    result: head
fallbacks:
  - {tool: read_file, fallback: get_file_info, on: [invalid_arguments], args: {path: {$ref: input.path}}}
`

func TestCallCompositeAndFallback(t *testing.T) {
	ws := planWorkspace(t)
	comp := filepath.Join(filepath.Dir(ws), "composites.yaml")
	if err := os.WriteFile(comp, []byte(cliComposites), 0o644); err != nil {
		t.Fatal(err)
	}
	r := toolgate(t, ws, "", "call", "inspect_file", `{"path":"a.txt"}`, "--composites", comp)
	if r.code != 0 || !strings.Contains(r.stdout, "alpha") || strings.Contains(r.stdout, "beta") || !strings.Contains(r.stdout, `"steps"`) {
		t.Fatalf("composite: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = toolgate(t, ws, "", "call", "read_file", `{"path":"bin.dat"}`, "--composites", comp)
	var out struct {
		Content []struct{ Text string } `json:"content"`
		Meta    struct {
			Fallback struct {
				From, To string
				Error    struct{ Type string }
			} `json:"fallback"`
		} `json:"meta"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 {
		t.Fatalf("fallback: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if fb := out.Meta.Fallback; fb.From != "read_file" || fb.To != "get_file_info" || fb.Error.Type != "invalid_arguments" || !strings.Contains(out.Content[0].Text, "get_file_info answered") {
		t.Errorf("fallback meta %+v, content %+v", fb, out.Content)
	}
	recs := planAudit(t, ws)
	if last := recs[len(recs)-1]; last.Tool != "read_file" || last.Outcome != "ok (fallback: get_file_info)" {
		t.Errorf("audit: %+v", last)
	}
	// Without the file, read_file fails as before.
	if r = toolgate(t, ws, "", "call", "read_file", `{"path":"bin.dat"}`); r.code != 1 {
		t.Errorf("no fallback without --composites: exit %d", r.code)
	}
	// A broken composites file is a usage error naming the problem.
	bad := filepath.Join(filepath.Dir(ws), "bad.yaml")
	os.WriteFile(bad, []byte("composites: [{name: x, description: d, steps: [{id: a, tool: nope}]}]"), 0o644)
	if r = toolgate(t, ws, "", "call", "read_file", `{"path":"a.txt"}`, "--composites", bad); r.code != 2 || !strings.Contains(r.stderr, `no tool named \"nope\"`) && !strings.Contains(r.stderr, `no tool named "nope"`) {
		t.Errorf("bad composites: exit %d %s", r.code, r.stderr)
	}
}

func TestCallRunPlan(t *testing.T) {
	ws := planWorkspace(t)
	r := toolgate(t, ws, cliPlan, "call", "run_plan", "-")
	var out planOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 || out.Structured.Status != "ok" || len(out.Structured.Steps) != 5 {
		t.Fatalf("run_plan: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
}

func TestSearchCommand(t *testing.T) {
	dir := t.TempDir()
	tools := `[
 {"name":"create_issue","description":"Create an issue in a GitHub repository.","inputSchema":{"type":"object","properties":{"repo":{"type":"string"},"title":{"type":"string"}}}},
 {"name":"resize_image","description":"Resize a picture.","inputSchema":{"type":"object","properties":{"width":{"type":"integer"}}}},
 {"name":"get_weather","description":"Weather forecast for a city.","inputSchema":{"type":"object","properties":{"city":{"type":"string"}}}}
]`
	os.WriteFile(filepath.Join(dir, "tools.json"), []byte(tools), 0o644)
	os.WriteFile(filepath.Join(dir, "q.jsonl"), []byte(`{"id":"a","query":"open a bug on github"}
{"id":7,"query":"make the photo smaller"}

{"id":"c","query":"weather in Paris"}
`), 0o644)
	r := toolgate(t, dir, "", "search", "--tools", "tools.json", "--queries", "q.jsonl", "-k", "2")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 3 {
		t.Fatalf("batch: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for i, want := range []string{`{"id":"a","tools":["create_issue"`, `{"id":7,"tools":["resize_image"`, `{"id":"c","tools":["get_weather"`} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d: %s, want %s…", i, lines[i], want)
		}
	}
	r = toolgate(t, dir, "", "search", "resize an image", "--tools", "tools.json", "--json", "-k", "1")
	if r.code != 0 || !strings.Contains(r.stdout, `"tools": [`) || !strings.Contains(r.stdout, "resize_image") {
		t.Errorf("single: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = toolgate(t, dir, "", "search", "read a file", "--root", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "read_file") || !strings.Contains(r.stdout, "RANK") {
		t.Errorf("built-in tools: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = toolgate(t, dir, "", "search", "x", "--queries", "q.jsonl"); r.code != 2 {
		t.Errorf("query and --queries: exit %d", r.code)
	}
	os.WriteFile(filepath.Join(dir, "bad.jsonl"), []byte("{\"id\":1}\n"), 0o644)
	if r = toolgate(t, dir, "", "search", "--tools", "tools.json", "--queries", "bad.jsonl"); r.code != 2 || !strings.Contains(r.stderr, "line 1") {
		t.Errorf("bad queries: exit %d %s", r.code, r.stderr)
	}
}

func TestServeDeferredTools(t *testing.T) {
	ws := planWorkspace(t)
	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "defer-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(bin, "serve", "--defer-tools", "--root", ws, "--audit", filepath.Join(t.TempDir(), "audit.jsonl"))
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	names := func() []string {
		t.Helper()
		res, err := session.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := names(); !slices.Equal(got, []string{"run_plan", "tool_search"}) {
		t.Fatalf("before a search: %v", got)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
	if err == nil && !res.IsError {
		t.Fatal("a deferred tool ran")
	}
	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": "read a file", "limit": 1}})
	if err != nil || res.IsError {
		t.Fatalf("tool_search: %v %+v", err, res)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed")
	}
	if got := names(); !slices.Equal(got, []string{"read_file", "run_plan", "tool_search"}) {
		t.Fatalf("after the search: %v", got)
	}
	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "alpha") {
		t.Fatalf("the loaded tool: %v %+v", err, res)
	}
}
