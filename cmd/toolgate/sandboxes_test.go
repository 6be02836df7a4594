package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/redistest"
	"github.com/toolgate/toolgate/sandboxes"
)

// The API keys of the two principals of the remote sandbox tests.
const (
	aliceKey = "tg_alice_0123456789abcdef0123456789ab"
	bobKey   = "tg_bob_0123456789abcdef0123456789abcd"
)

// remotePolicy writes a policy whose tools run on the runner at base, the
// mapping in srv's Redis, alice and bob authenticated by API keys; extra
// goes into the sandbox block.
func remotePolicy(t *testing.T, base string, srv *redistest.Server, extra string) string {
	t.Helper()
	pol := fmt.Sprintf(`auth:
  resource: %s
  api_keys:
    - {sha256: %s, principal: alice, roles: [admin]}
    - {sha256: %s, principal: bob, roles: [admin]}
roles:
  admin: {max_level: 3, admin: true}
allow: [execute_command, write_file, start_process, read_process, read_file, list_directory]
limits: {loop: {off: true}}
sandbox:
  backend: runner
  runner:
    url: %s
    secret_env: TEST_RUNNER_SECRET
%s
state:
  redis:
    url: %s
`, testResource, sha256Hex(aliceKey), sha256Hex(bobKey), base, extra, srv.URL())
	file := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(file, []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// gatewayReplicas starts two `serve --http --stateless` replicas of the
// policy pol.
func gatewayReplicas(t *testing.T, pol string) []string {
	t.Helper()
	return gatewayReplicasIn(t, pol, t.TempDir())
}

// gatewayReplicasIn is gatewayReplicas writing the audit logs DIR/a.jsonl
// and DIR/b.jsonl.
func gatewayReplicasIn(t *testing.T, pol, dir string) []string {
	t.Helper()
	t.Setenv("TEST_RUNNER_SECRET", runnerSecret)
	var out []string
	for _, name := range []string{"a", "b"} {
		t.Setenv("TOOLGATE_REPLICA", "replica-"+name)
		out = append(out, startHTTP(t, "serve", "--policy", pol, "--audit", filepath.Join(dir, name+".jsonl"), "--http", "127.0.0.1:0", "--stateless"))
	}
	return out
}

// keyed sends every request with an API key.
type keyed struct{ key string }

func (k keyed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return http.DefaultTransport.RoundTrip(r)
}

// as connects to endpoint as the principal of key.
func as(t *testing.T, endpoint, key string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "sandbox-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: keyed{key}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// remoteResult is what a test reads of a call through a replica.
type remoteResult struct {
	text    string
	isError bool
	errType string
	retry   bool
	sandbox string
	isNew   bool
}

// callIn calls a tool in conversation conv.
func callIn(t *testing.T, cs *mcp.ClientSession, conv, name string, args map[string]any) remoteResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: mcp.Meta{"toolgate/conversation": conv}})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var r remoteResult
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text + "\n")
		}
	}
	r.text, r.isError = b.String(), res.IsError
	if m, ok := res.StructuredContent.(map[string]any); ok && res.IsError {
		r.errType, _ = m["type"].(string)
		r.retry, _ = m["retryable"].(bool)
	}
	if inner, ok := res.Meta["toolgate/meta"].(map[string]any); ok {
		if sb, ok := inner[sandboxes.MetaSandbox].(map[string]any); ok {
			r.sandbox, _ = sb["id"].(string)
			r.isNew, _ = sb["new"].(bool)
		}
	}
	return r
}

// TestRemoteSandboxes: two stateless replicas sharing Redis forward the
// file and command tools to one runner: a write through one is read
// through the other and seen by execute_command; a process started
// through one is read through the other; other principals and
// conversations are kept apart; racing first calls make one sandbox; max
// refuses a new one; a killed runner makes calls unavailable, and the
// runner started again on a new folder gives a new workspace, said so.
func TestRemoteSandboxes(t *testing.T) {
	runDir := filepath.Join(t.TempDir(), "sandboxes")
	base, stop := startRunner(t, runDir)
	srv := redistest.Start(t)
	reps := gatewayReplicas(t, remotePolicy(t, base, srv, "    max: 5"))
	aliceA, aliceB := as(t, reps[0], aliceKey), as(t, reps[1], aliceKey)
	bobA := as(t, reps[0], bobKey)

	r := callIn(t, aliceA, "c1", "write_file", map[string]any{"path": "notes.txt", "content": "hello from alice\n"})
	want := sandboxes.ID("alice", "conversation:c1")
	if r.isError || r.sandbox != want || !r.isNew || strings.Contains(r.text, "made anew") {
		t.Fatalf("write_file through a: %+v (want sandbox %s, new, no line)", r, want)
	}
	if _, err := os.Stat(filepath.Join(runDir, want, "notes.txt")); err != nil {
		t.Errorf("the file is not in the runner's workspace: %v", err)
	}
	if r := callIn(t, aliceB, "c1", "read_file", map[string]any{"path": "notes.txt"}); r.isError || !strings.Contains(r.text, "hello from alice") || r.isNew {
		t.Errorf("read_file through b: %+v", r)
	}
	if r := callIn(t, aliceB, "c1", "execute_command", map[string]any{"command": "cat notes.txt"}); r.isError || !strings.Contains(r.text, "hello from alice") {
		t.Errorf("execute_command through b: %+v", r)
	}
	for _, c := range []struct {
		cs   *mcp.ClientSession
		conv string
	}{{bobA, "c1"}, {aliceA, "c2"}} {
		if r := callIn(t, c.cs, c.conv, "read_file", map[string]any{"path": "notes.txt"}); r.errType != "not_found" {
			t.Errorf("another principal or conversation (%s) reads alice's c1 file: %+v", c.conv, r)
		}
	}

	r = callIn(t, aliceA, "c1", "start_process", map[string]any{"command": "echo process-started; sleep 60", "until": "process-started"})
	m := regexp.MustCompile(`process (p-\w+)`).FindStringSubmatch(r.text)
	if r.isError || m == nil {
		t.Fatalf("start_process through a: %+v", r)
	}
	if r := callIn(t, aliceB, "c1", "read_process", map[string]any{"id": m[1]}); r.isError || !strings.Contains(r.text, "process-started") {
		t.Errorf("read_process through b: %+v", r)
	}
	if r := callIn(t, bobA, "c1", "read_process", map[string]any{"id": m[1]}); r.errType != "not_found" {
		t.Errorf("bob reads alice's process: %+v", r)
	}

	// Racing first calls of one key, on both replicas: one sandbox.
	var wg sync.WaitGroup
	var mu sync.Mutex
	news := 0
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := callIn(t, []*mcp.ClientSession{aliceA, aliceB}[i%2], "race", "list_directory", map[string]any{"path": "."})
			if r.isError {
				t.Errorf("racing list_directory: %+v", r)
			}
			if r.isNew {
				mu.Lock()
				news++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	entries, _ := os.ReadDir(runDir)
	if news != 1 || len(entries) != 4 { // alice c1, c2, race; bob c1
		t.Errorf("racing first calls: %d said new, the runner has %d sandboxes; want 1 and 4", news, len(entries))
	}
	callIn(t, bobA, "c2", "list_directory", map[string]any{"path": "."}) // the fifth
	if r := callIn(t, bobA, "c3", "list_directory", map[string]any{"path": "."}); r.errType != "rate_limited" || !r.retry {
		t.Errorf("a sixth sandbox past max 5: %+v", r)
	}
	if r := callIn(t, aliceB, "c1", "read_file", map[string]any{"path": "notes.txt"}); r.isError {
		t.Errorf("an existing sandbox at max: %+v", r)
	}

	// The runner killed: unavailable, naming the sandbox; never run here.
	u, _ := url.Parse(base)
	stop()
	r = callIn(t, aliceA, "c1", "write_file", map[string]any{"path": "more.txt", "content": "x"})
	if r.errType != "unavailable" || !r.retry || !strings.Contains(r.text, want) {
		t.Errorf("runner killed: %+v", r)
	}
	// A new runner (another folder) at the same address: a new workspace, said so.
	startRunnerAt(t, u.Host, filepath.Join(t.TempDir(), "new-sandboxes"))
	r = callIn(t, aliceB, "c1", "read_file", map[string]any{"path": "notes.txt"})
	if r.errType != "not_found" || !strings.Contains(r.text, "made anew") || !r.isNew {
		t.Errorf("after the runner came back empty: %+v", r)
	}
	if r := callIn(t, aliceA, "c1", "write_file", map[string]any{"path": "notes.txt", "content": "again"}); r.isError || strings.Contains(r.text, "made anew") {
		t.Errorf("the next call: %+v", r)
	}
}

// TestRemoteSandboxReaper: with sandbox idle, a sandbox without calls is
// deleted (by one replica at a time) and the key's next call says its
// workspace is new.
func TestRemoteSandboxReaper(t *testing.T) {
	runDir := filepath.Join(t.TempDir(), "sandboxes")
	base, _ := startRunner(t, runDir)
	srv := redistest.Start(t)
	reps := gatewayReplicas(t, remotePolicy(t, base, srv, "    idle: 1s"))
	alice := as(t, reps[0], aliceKey)
	if r := callIn(t, alice, "c1", "write_file", map[string]any{"path": "notes.txt", "content": "x"}); r.isError {
		t.Fatal(r)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if entries, _ := os.ReadDir(runDir); len(entries) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle sandbox was not deleted within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := callIn(t, as(t, reps[1], aliceKey), "c1", "read_file", map[string]any{"path": "notes.txt"}); r.errType != "not_found" || !strings.Contains(r.text, "made anew") {
		t.Errorf("after the reaper: %+v", r)
	}
}

// TestRemoteSandboxApprovals: a command the dangerous-command check asks
// about is asked in the gateway; approved (call --yes --allow-dangerous)
// it runs in the sandbox, refused it does not; sandbox.commands false
// forwards no command tool; serve refuses --root with a remote backend,
// naming the sandbox block.
func TestRemoteSandboxApprovals(t *testing.T) {
	base, _ := startRunner(t, filepath.Join(t.TempDir(), "sandboxes"))
	t.Setenv("TEST_RUNNER_SECRET", runnerSecret)
	srv := redistest.Start(t)
	pol := remotePolicy(t, base, srv, "")
	dir := workspace(t)
	args := `{"command": "cat /etc/shadow"}`
	out := parseCall(t, toolgate(t, dir, "", "call", "execute_command", args, "--policy", pol, "--yes"))
	if out.Error == nil || out.Error.Type != "approval_denied" {
		t.Errorf("a dangerous command with --yes alone: %+v", out.Error)
	}
	out = parseCall(t, toolgate(t, dir, "", "call", "execute_command", args, "--policy", pol, "--yes", "--allow-dangerous"))
	// Approved, it ran in the sandbox, whose confinement stopped it.
	if out.Error == nil || out.Error.Type != "sandbox_violation" || out.Meta[sandboxes.MetaSandbox] == nil {
		t.Errorf("approved, it runs in the sandbox: %+v %v", out.Error, out.Meta)
	}
	// sandbox.commands false: the sandbox's file tools, no command tool.
	off := remotePolicy(t, base, srv, "  commands: false")
	if out := parseCall(t, toolgate(t, dir, "", "call", "execute_command", `{"command": "true"}`, "--policy", off, "--yes")); out.Error == nil || out.Error.Type != "unknown_tool" {
		t.Errorf("execute_command with sandbox.commands false: %+v", out.Error)
	}
	if out := parseCall(t, toolgate(t, dir, "", "call", "list_directory", `{"path": "."}`, "--policy", off, "--yes")); out.Error != nil {
		t.Errorf("list_directory with sandbox.commands false: %+v", out.Error)
	}
	res := toolgate(t, dir, "", "serve", "--root", dir, "--policy", pol)
	if res.code != 2 || !strings.Contains(res.stderr, "sandbox.backend runner") {
		t.Errorf("serve --root with backend runner: exit %d, %s", res.code, res.stderr)
	}
}

// TestRemoteSandboxNotCarried: what a remote sandbox is not given is
// refused, never run with less than the policy says: a policy whose allow
// rules let commands write a CI definition, or reach a domain (rules or
// --allow-domain), is refused at start naming it and what to do (unless
// sandbox.commands is false); a line written to a shell in a sandbox is
// refused (the runner has no policy to judge it by), while a write to
// another program goes through.
func TestRemoteSandboxNotCarried(t *testing.T) {
	base, _ := startRunner(t, filepath.Join(t.TempDir(), "sandboxes"))
	t.Setenv("TEST_RUNNER_SECRET", runnerSecret)
	srv := redistest.Start(t)
	dir := workspace(t)
	withAllow := func(rule, extra string) string {
		file := remotePolicy(t, base, srv, extra)
		b, _ := os.ReadFile(file)
		pol := strings.Replace(string(b), "list_directory]", "list_directory, \""+rule+"\"]", 1)
		if err := os.WriteFile(file, []byte(pol), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	for _, c := range []struct{ name, rule, extra, want string }{
		{"ci", "Edit(.github/workflows/**)", "", ".github/workflows"},
		{"domain", "WebFetch(domain:example.com)", "", "example.com"},
	} {
		res := toolgate(t, dir, "", "call", "list_directory", `{"path": "."}`, "--policy", withAllow(c.rule, c.extra), "--yes")
		if res.code != 2 || !strings.Contains(res.stderr, c.want) || !strings.Contains(res.stderr, "sandbox.commands: false") {
			t.Errorf("%s: exit %d, %s", c.name, res.code, res.stderr)
		}
		if out := parseCall(t, toolgate(t, dir, "", "call", "list_directory", `{"path": "."}`, "--policy", withAllow(c.rule, "  commands: false"), "--yes")); out.Error != nil {
			t.Errorf("%s with sandbox.commands false: %+v", c.name, out.Error)
		}
	}
	res := toolgate(t, dir, "", "call", "list_directory", `{"path": "."}`, "--policy", remotePolicy(t, base, srv, ""), "--yes", "--allow-domain", "example.org")
	if res.code != 2 || !strings.Contains(res.stderr, "example.org") || !strings.Contains(res.stderr, "sandbox.network: none") {
		t.Errorf("--allow-domain: exit %d, %s", res.code, res.stderr)
	}
	// sandbox.network: none says the sandbox's commands reach none: the
	// domains serve http_request, the commands run.
	if out := parseCall(t, toolgate(t, dir, "", "call", "execute_command", `{"command": "echo ran"}`, "--policy", withAllow("WebFetch(domain:example.com)", "  network: none"), "--yes")); out.Error != nil {
		t.Errorf("a domain rule with sandbox.network none: %+v", out.Error)
	}

	audits := t.TempDir()
	a := as(t, gatewayReplicasIn(t, withAllow("write_process", ""), audits)[0], aliceKey)
	id := regexp.MustCompile(`p-\w+`)
	r := callIn(t, a, "lines", "start_process", map[string]any{"argv": []string{"bash"}, "stdin": "open", "yield_ms": 0})
	if r.isError || id.FindString(r.text) == "" {
		t.Fatalf("start_process bash: %+v", r)
	}
	r = callIn(t, a, "lines", "write_process", map[string]any{"id": id.FindString(r.text), "text": "echo hi\n"})
	if r.errType != "permission_denied" || !strings.Contains(r.text, "execute_command") {
		t.Errorf("a line to a shell in a sandbox: %+v", r)
	}
	r = callIn(t, a, "lines", "start_process", map[string]any{"argv": []string{"cat"}, "stdin": "open", "yield_ms": 0})
	if r.isError {
		t.Fatalf("start_process cat: %+v", r)
	}
	cat := id.FindString(r.text)
	if r = callIn(t, a, "lines", "write_process", map[string]any{"id": cat, "text": "echo hi\n", "wait_ms": 2000}); r.isError || !strings.Contains(r.text, "echo hi") {
		t.Errorf("a write to cat in a sandbox: %+v", r)
	}

	// The processes' events reach the gateway's audit log, as the
	// sandbox's principal and conversation: cat's start and write at
	// once, its end (after stop_process) with a later call.
	if r = callIn(t, a, "lines", "stop_process", map[string]any{"id": cat}); r.isError {
		t.Fatalf("stop_process: %+v", r)
	}
	want := []string{`"tool":"process:` + cat + `","arguments":{"bytes":0,"command":"cat"}`, `"outcome":"start"`,
		`"tool":"process:` + cat + `","arguments":{"bytes":8,`, `"outcome":"write"`, `"outcome":"end"`}
	var log string
	for range 100 { // the end is told with the sandbox's next result
		callIn(t, a, "lines", "list_directory", map[string]any{"path": "."})
		b, _ := os.ReadFile(filepath.Join(audits, "a.jsonl"))
		if log = string(b); strings.Contains(log, `"tool":"process:`+cat+`"`) && strings.Contains(log, `"outcome":"end"`) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, w := range want {
		if !strings.Contains(log, w) {
			t.Errorf("the audit log has no %s:\n%s", w, log)
		}
	}
	if !strings.Contains(log, `"session":"conversation:lines","principal":"alice"`) {
		t.Errorf("the process records are not the sandbox's principal and conversation:\n%s", log)
	}
}
