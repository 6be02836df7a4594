package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// bin is the toolgate binary built once for these tests, with
// toolgate-agent and toolgate-sandbox beside it: the CLI is tested as users run it, in real
// processes.
var bin string

func TestMain(m *testing.M) {
	if tg := os.Getenv(driverEnv); tg != "" {
		os.Exit(runConformanceDriver(tg)) // the conformance suite's client under test (oauth_conformance_test.go)
	}
	if os.Getenv(upstreamEnv) == "hostile" {
		os.Exit(runHostile()) // the hostile upstream of box_test.go
	}
	if mode := os.Getenv(upstreamEnv); mode != "" {
		os.Exit(runTestUpstream(mode)) // the test binary as an upstream MCP server (trust_test.go)
	}
	dir, err := os.MkdirTemp("", "toolgate-cli-")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "toolgate")
	// As make build does: in a clean checkout the three carry its commit,
	// and toolgate uses the toolgate-sandbox beside it.
	for out, pkg := range map[string]string{bin: ".", filepath.Join(dir, "toolgate-agent"): "../toolgate-agent", filepath.Join(dir, "toolgate-sandbox"): "../toolgate-sandbox"} {
		if log, err := exec.Command("go", "build", "-buildvcs=auto", "-o", out, pkg).CombinedOutput(); err != nil {
			os.Stderr.Write(log)
			panic(err)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// toolgate runs the binary in dir with an audit log of the test's own.
func toolgate(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOOLGATE_AUDIT="+filepath.Join(filepath.Dir(dir), "audit.jsonl"))
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

// workspace returns a folder inside a temp dir; the audit log lives beside it.
func workspace(t *testing.T) string {
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return ws
}

type callOutput struct {
	Content []struct {
		Type, Text string
	} `json:"content"`
	Structured any  `json:"structured"`
	IsError    bool `json:"is_error"`
	Error      *struct {
		Type, Message, Suggestion string
		Retryable                 bool
	} `json:"error"`
	Meta map[string]any `json:"meta"`
}

func parseCall(t *testing.T, r result) callOutput {
	t.Helper()
	var out callOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("stdout is not the contract's JSON: %v\n%s\nstderr: %s", err, r.stdout, r.stderr)
	}
	return out
}

func TestCallContract(t *testing.T) {
	ws := workspace(t)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("alpha\nbeta\n"), 0o644)

	r := toolgate(t, ws, "", "call", "read_file", `{"path":"notes.txt"}`)
	out := parseCall(t, r)
	if r.code != 0 || out.IsError || out.Content[0].Text != "1|alpha\n2|beta" {
		t.Fatalf("read_file: code %d, %+v", r.code, out)
	}

	r = toolgate(t, ws, `{"path":"new/dir/f.txt","content":"x"}`, "call", "write_file", "-")
	if out := parseCall(t, r); r.code != 0 || out.IsError {
		t.Fatalf("write_file from stdin: code %d, %s", r.code, r.stdout)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "new/dir/f.txt")); string(b) != "x" {
		t.Errorf("write_file wrote %q", b)
	}

	for _, tc := range []struct {
		name string
		args []string
		typ  string
	}{
		{"unknown tool", []string{"call", "read_fil", `{"path":"notes.txt"}`}, "unknown_tool"},
		{"malformed JSON", []string{"call", "read_file", `{"path":`}, "invalid_arguments"},
		{"not an object", []string{"call", "read_file", `["notes.txt"]`}, "invalid_arguments"},
		{"missing required", []string{"call", "read_file"}, "invalid_arguments"},
		{"escape", []string{"call", "read_file", `{"path":"../../etc/passwd"}`}, "permission_denied"},
		{"level 3 without --yes", []string{"call", "delete_file", `{"path":"notes.txt"}`}, "approval_denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := toolgate(t, ws, "", tc.args...)
			out := parseCall(t, r)
			if r.code != 1 || !out.IsError || out.Error == nil || out.Error.Type != tc.typ {
				t.Fatalf("code %d, error %+v; want exit 1 and %s", r.code, out.Error, tc.typ)
			}
			if out.Error.Message == "" || out.Error.Suggestion == "" {
				t.Errorf("error lacks message or suggestion: %+v", out.Error)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(ws, "notes.txt")); err != nil {
		t.Fatal("a refused delete removed the file")
	}
	r = toolgate(t, ws, "", "call", "delete_file", `{"path":"notes.txt"}`, "--yes")
	if r.code != 0 {
		t.Fatalf("delete with --yes: %d %s", r.code, r.stdout)
	}
	if _, err := os.Stat(filepath.Join(ws, "notes.txt")); !os.IsNotExist(err) {
		t.Error("delete_file --yes did not delete")
	}
}

func TestUsageErrors(t *testing.T) {
	ws := workspace(t)
	for _, args := range [][]string{
		{"call"},
		{"call", "a", "b", "c"},
		{"bogus"},
		{"call", "read_file", "--no-such-flag"},
		{"tools", "--format", "klingon"},
		{"call", "read_file", "{}", "--root", filepath.Join(ws, "missing")},
		{"call", "read_file", "{}", "--policy", filepath.Join(ws, "missing.yaml")},
	} {
		r := toolgate(t, ws, "", args...)
		if r.code != 2 || r.stderr == "" {
			t.Errorf("%v: exit %d stderr %q, want exit 2 and a message", args, r.code, r.stderr)
		}
	}
}

func TestPolicyFile(t *testing.T) {
	ws := workspace(t)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	pol := filepath.Join(filepath.Dir(ws), "policy.yaml")
	os.WriteFile(pol, []byte("mode: read-only\n"), 0o644)
	r := toolgate(t, ws, "", "call", "write_file", `{"path":"b.txt","content":"b"}`, "--policy", pol)
	if out := parseCall(t, r); r.code != 1 || out.Error.Type != "permission_denied" {
		t.Fatalf("read-only mode let a write through: %s", r.stdout)
	}
	if r := toolgate(t, ws, "", "call", "read_file", `{"path":"a.txt"}`, "--policy", pol); r.code != 0 {
		t.Fatalf("read-only mode refused a read: %s", r.stdout)
	}
	os.WriteFile(pol, []byte("mode: read-only\nbogus: 1\n"), 0o644)
	if r := toolgate(t, ws, "", "call", "read_file", `{"path":"a.txt"}`, "--policy", pol); r.code != 2 || !strings.Contains(r.stderr, "unknown field") {
		t.Errorf("a bad policy file: exit %d, %s", r.code, r.stderr)
	}
	// The policy file inside the workspace cannot be changed by the tools it governs.
	inside := filepath.Join(ws, "toolgate-policy.yml")
	os.WriteFile(inside, []byte("mode: default\n"), 0o644)
	r = toolgate(t, ws, "", "call", "write_file", `{"path":"toolgate-policy.yml","content":"mode: bypass\n"}`, "--policy", inside)
	if out := parseCall(t, r); r.code != 1 || out.Error.Type != "permission_denied" {
		t.Errorf("a tool rewrote its own policy: %s", r.stdout)
	}
}

func TestToolsFormats(t *testing.T) {
	ws := workspace(t)
	r := toolgate(t, ws, "", "tools", "--format", "mcp")
	var tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Annotations map[string]bool `json:"annotations"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &tools); err != nil || r.code != 0 {
		t.Fatalf("tools --format mcp: %v\n%s", err, r.stdout)
	}
	seen := map[string]bool{}
	for _, tl := range tools {
		seen[tl.Name] = true
		if tl.Description == "" || !json.Valid(tl.InputSchema) {
			t.Errorf("%s: incomplete definition", tl.Name)
		}
	}
	for _, want := range []string{"read_file", "write_file", "edit_file", "apply_patch", "list_directory", "search_files", "get_file_info", "create_directory", "move_file", "delete_file"} {
		if !seen[want] {
			t.Errorf("tools does not list %s", want)
		}
	}
	r = toolgate(t, ws, "", "tools")
	if r.code != 0 || !strings.Contains(r.stdout, "NAME") || !strings.Contains(r.stdout, "read_file") {
		t.Errorf("tools table: %s", r.stdout)
	}
}

func TestAuditVerifyCatchesHandEdit(t *testing.T) {
	ws := workspace(t)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	for i := 0; i < 3; i++ {
		toolgate(t, ws, "", "call", "read_file", `{"path":"a.txt"}`)
	}
	toolgate(t, ws, "", "call", "nope", `{}`)
	log := filepath.Join(filepath.Dir(ws), "audit.jsonl")
	r := toolgate(t, ws, "", "audit", "verify")
	if r.code != 0 || !strings.Contains(r.stdout, "OK, 4 records") {
		t.Fatalf("verify of an intact log: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = toolgate(t, ws, "", "audit", "tail", "-n", "2")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != 0 || len(lines) != 2 || !strings.Contains(lines[1], `"tool":"nope"`) {
		t.Errorf("tail -n 2: %s", r.stdout)
	}
	r = toolgate(t, ws, "", "audit", "query", "--outcome", "invalid")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("query --outcome invalid: %s", r.stdout)
	}
	data, _ := os.ReadFile(log)
	edited := bytes.Replace(data, []byte(`"outcome":"invalid"`), []byte(`"outcome":"ok"`), 1)
	os.WriteFile(log, edited, 0o600)
	r = toolgate(t, ws, "", "audit", "verify")
	if r.code != 1 || !strings.Contains(r.stdout, "line 4: modified") {
		t.Errorf("verify of a hand-edited log: exit %d\n%s", r.code, r.stdout)
	}
	r = toolgate(t, ws, "", "audit", "verify", "--json", log)
	var rep struct {
		OK       bool
		Problems []struct {
			Line int
			Kind string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.OK || rep.Problems[0].Line != 4 {
		t.Errorf("verify --json: %v %s", err, r.stdout)
	}
}

func TestHelpTeaches(t *testing.T) {
	ws := workspace(t)
	for _, cmd := range [][]string{{"--help"}, {"call", "--help"}, {"tools", "--help"}, {"audit", "verify", "--help"}, {"audit", "tail", "--help"}, {"audit", "query", "--help"}, {"version", "--help"}} {
		r := toolgate(t, ws, "", cmd...)
		if r.code != 0 || !strings.Contains(r.stdout, "Example") {
			t.Errorf("%v: exit %d, no example in help", cmd, r.code)
		}
	}
	if r := toolgate(t, ws, "", "version", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"go"`) {
		t.Errorf("version --json: %s", r.stdout)
	}
}

func TestSpilledOutputIsReadable(t *testing.T) {
	ws := workspace(t)
	var big strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&big, "line %d of a long file with some padding to make it wide enough\n", i)
	}
	os.WriteFile(filepath.Join(ws, "big.txt"), []byte(big.String()), 0o644)
	r := toolgate(t, ws, "", "call", "read_file", `{"path":"big.txt","limit":2000}`)
	out := parseCall(t, r)
	tr, _ := out.Meta["truncated"].(map[string]any)
	spill, _ := tr["spill"].(string)
	if r.code != 0 || spill == "" {
		t.Fatalf("a 2000-line read was not spilled: %v", out.Meta)
	}
	r = toolgate(t, ws, "", "call", "read_file", fmt.Sprintf(`{"path":%q,"offset":1900,"limit":5}`, spill))
	if out := parseCall(t, r); r.code != 0 || !strings.Contains(out.Content[0].Text, "1900|") {
		t.Fatalf("the spill file cannot be read back: %s", r.stdout)
	}
	r = toolgate(t, ws, "", "call", "write_file", fmt.Sprintf(`{"path":%q,"content":"forged"}`, spill))
	if out := parseCall(t, r); r.code != 1 || out.Error.Type != "permission_denied" {
		t.Errorf("a tool could overwrite a spill file: %s", r.stdout)
	}
}

func TestPolicyCommand(t *testing.T) {
	ws := workspace(t)
	example := filepath.Join("..", "..", "toolgate.example.yaml")
	abs, _ := filepath.Abs(example)
	if r := toolgate(t, ws, "", "policy", "check", abs); r.code != 0 || !strings.Contains(r.stdout, "OK") {
		t.Errorf("the example policy does not check: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// The report of the glob maps: which key decides for each tool, a
	// tools file's among them.
	tools := filepath.Join(ws, "tools.json")
	os.WriteFile(tools, []byte(`[{"name":"github__create_issue","inputSchema":{"type":"object"}}]`), 0o644)
	r := toolgate(t, ws, "", "policy", "check", abs, "--tools", tools)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^limits\.tools:$`),
		regexp.MustCompile(`(?m)^  github__create_issue +github__\* +burst 10, then 0\.5/s$`),
		regexp.MustCompile(`(?m)^  read_file +\* +burst 20, then 5/s$`),
		regexp.MustCompile(`(?m)^  execute_command +execute_\* +burst 5, then 1/s$`),
		regexp.MustCompile(`(?m)^  read_file +read_file +262144 bytes$`),
		regexp.MustCompile(`(?m)^  write_file +- +output\.max_bytes: 65536 bytes$`),
	} {
		if !want.MatchString(r.stdout) {
			t.Errorf("policy check --tools: no line %s in\n%s", want, r.stdout)
		}
	}
	tie := filepath.Join(ws, "tie.yaml")
	os.WriteFile(tie, []byte("limits:\n  tools:\n    \"read_*\": {per_second: 1, burst: 1}\n    \"*_file\": {per_second: 1, burst: 1}\n"), 0o644)
	if r := toolgate(t, ws, "", "policy", "check", tie); r.code != 2 || !strings.Contains(r.stderr, `"*_file" and "read_*"`) {
		t.Errorf("two globs equally specific: exit %d, %s", r.code, r.stderr)
	}
	bad := filepath.Join(ws, "bad.yaml")
	os.WriteFile(bad, []byte("deny:\n  - rule: Bash(rm:*)\n    examples:\n      match: [\"ls\"]\n"), 0o644)
	if r := toolgate(t, ws, "", "policy", "check", bad); r.code != 2 || !strings.Contains(r.stderr, "bad.yaml:") {
		t.Errorf("a failing rule example: exit %d, %s", r.code, r.stderr)
	}
	if r := toolgate(t, ws, "", "policy", "defaults"); r.code != 0 || !strings.Contains(r.stdout, ".git/hooks") {
		t.Errorf("policy defaults: %s", r.stdout)
	}
	if r := toolgate(t, ws, "", "policy", "schema"); r.code != 0 || !json.Valid([]byte(r.stdout)) {
		t.Errorf("policy schema is not JSON")
	}
}

// TestLoopAcrossCalls: toolgate call lives for one call, but the loop
// guard sees the audit log's recent calls: the sixth identical call in a
// row, each its own process, is refused (the sample corpus's RL-001). With
// the audit log off there is no memory across processes.
// TestBreakerAcrossCalls: the denial breaker (the attack corpus's RL-004)
// counts refusals across toolgate call processes through the audit log:
// after three denied calls in a row, a harmless write is refused with
// circuit_open and writes nothing, while reads still run and another
// session is not affected.
func TestBreakerAcrossCalls(t *testing.T) {
	ws := workspace(t)
	os.WriteFile(filepath.Join(ws, "README.md"), []byte("hello\n"), 0o644)
	for i, args := range []string{`{"path":".env","content":"A=1"}`, `{"path":".env.local","content":"A=1"}`, `{"path":".env.prod","content":"A=1"}`} {
		r := toolgate(t, ws, "", "call", "write_file", args)
		if o := parseCall(t, r); o.Error == nil || o.Error.Type != "permission_denied" {
			t.Fatalf("denied call %d: exit %d %+v", i+1, r.code, o.Error)
		}
	}
	r := toolgate(t, ws, "", "call", "write_file", `{"path":"notes.txt","content":"x"}`)
	if o := parseCall(t, r); r.code != 1 || o.Error == nil || o.Error.Type != "circuit_open" {
		t.Fatalf("a write after three refusals: exit %d %+v; want circuit_open", r.code, o.Error)
	}
	if _, err := os.Stat(filepath.Join(ws, "notes.txt")); !os.IsNotExist(err) {
		t.Fatalf("the stopped write wrote notes.txt (stat: %v)", err)
	}
	if r := toolgate(t, ws, "", "call", "read_file", `{"path":"README.md"}`); r.code != 0 {
		t.Fatalf("a read was stopped: exit %d %s", r.code, r.stdout)
	}
	if r := toolgate(t, ws, "", "call", "write_file", `{"path":"notes.txt","content":"x"}`, "--session", "another"); r.code != 0 {
		t.Fatalf("another session: exit %d %s", r.code, r.stdout)
	}
}

func TestLoopAcrossCalls(t *testing.T) {
	ws := workspace(t)
	os.WriteFile(filepath.Join(ws, "README.md"), []byte("hello\n"), 0o644)
	for i := 1; i <= 6; i++ {
		r := toolgate(t, ws, "", "call", "read_file", `{"path":"README.md"}`)
		o := parseCall(t, r)
		if i <= 5 && r.code != 0 {
			t.Fatalf("call %d: exit %d %+v", i, r.code, o.Error)
		}
		if i == 6 && (r.code != 1 || o.Error == nil || o.Error.Type != "loop_detected") {
			t.Fatalf("call 6: exit %d %+v; want loop_detected", r.code, o.Error)
		}
	}
	if r := toolgate(t, ws, "", "call", "read_file", `{"path":"README.md"}`, "--session", "another"); r.code != 0 {
		t.Fatalf("another session: exit %d %s", r.code, r.stdout)
	}
	for i := 0; i < 6; i++ {
		if r := toolgate(t, ws, "", "call", "read_file", `{"path":"README.md"}`, "--audit", "off"); r.code != 0 {
			t.Fatalf("--audit off, call %d: exit %d %s", i+1, r.code, r.stdout)
		}
	}
}
