package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/internal/conformancetest"
)

// referenceServers returns the folder of the npm MCP servers used as
// upstreams (scripts/test-deps.sh installs them).
func referenceServers(t *testing.T) (node, everything, filesystem string) {
	t.Helper()
	node, modules := npmTools(t)
	everything = filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	filesystem = filepath.Join(modules, "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	for _, p := range []string{everything, filesystem} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: run `make deps` (./scripts/test-deps.sh)", p)
		}
	}
	return node, everything, filesystem
}

// buildFixture builds the conformance fixture server (a stdio MCP server).
func buildFixture(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "fixture")
	cmd := exec.Command("go", "build", "-o", exe, "./mcpserver/internal/conformancefixture/fixture")
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the fixture: %v\n%s", err, out)
	}
	return exe
}

// startProxyHTTP starts `toolgate proxy --http 127.0.0.1:0 ARGS…` and
// returns its URL.
func startProxyHTTP(t *testing.T, args ...string) string {
	t.Helper()
	return startHTTP(t, append([]string{"proxy", "--http", "127.0.0.1:0"}, args...)...)
}

// auditRecords reads an audit log.
func auditRecords(t *testing.T, file string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// TestProxyConformance runs the whole active conformance suite through
// `toolgate proxy --http` in front of the fixture server (a stdio
// upstream): tools, resources, prompts, completion, subscriptions,
// logging, progress, sampling and elicitation all pass through the gateway,
// and every tool call is governed and audited.
func TestProxyConformance(t *testing.T) {
	node, modules := npmTools(t)
	fixture := buildFixture(t)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("allow:\n  - \"test_*\"\n  - json_schema_2020_12_tool\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	auditLog := filepath.Join(dir, "audit.jsonl")
	url := startProxyHTTP(t, "--policy", pol, "--audit", auditLog, "--no-prefix", "--name", "fixture", "--", fixture)

	conformancetest.ActiveSuite(t, node, modules, url)

	seen := map[string]bool{}
	for _, r := range callRecords(t, auditLog) {
		if r["decision"] != "allow" || r["principal"] != "conformance-test-client" {
			t.Errorf("audit record %v: want an allowed call of conformance-test-client", r)
		}
		seen[r["tool"].(string)] = true
	}
	for _, name := range []string{"test_simple_text", "test_tool_with_progress", "test_sampling", "test_elicitation", "test_error_handling"} {
		if !seen[name] {
			t.Errorf("no audit record of %s; audited: %v", name, seen)
		}
	}
	if r := toolgate(t, dir, "", "audit", "verify", auditLog); r.code != 0 {
		t.Errorf("audit verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestProxyGovernsReferenceServers puts the gateway (stdio) in front of
// the reference servers server-everything and server-filesystem, under a
// policy: allowed tools work, denied ones are refused without reaching the
// upstream, progress and sampling pass through, and every call is audited.
func TestProxyGovernsReferenceServers(t *testing.T) {
	node, everything, filesystem := referenceServers(t)
	dir := t.TempDir()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello from the workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "gateway.yaml")
	cfg := "servers:\n" +
		"  - name: everything\n    command: " + strconv.Quote(node) + "\n    args: [" + strconv.Quote(everything) + ", stdio]\n    timeout: 30s\n" +
		"  - name: fs\n    command: " + strconv.Quote(node) + "\n    args: [" + strconv.Quote(filesystem) + ", " + strconv.Quote(ws) + "]\n" +
		"    levels:\n      \"*_file\": 3\n" +
		// Both in the default box: the filesystem server with its folder
		// granted, server-everything with no grant at all.
		"    isolation:\n      write: [" + strconv.Quote(ws) + "]\n"
	if err := os.WriteFile(config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("deny:\n  - everything__get-env\n  - fs__write_file\nallow:\n  - fs__read_text_file\n  - everything__trigger-sampling-request\n"+
		// This test makes four refusals in a row on purpose.
		"approvals:\n  denial_streak: 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	auditLog := filepath.Join(dir, "audit.jsonl")

	var progress atomic.Int32
	client := mcp.NewClient(&mcp.Implementation{Name: "proxy-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "sampled through the gateway"}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.Command(bin, "proxy", "--config", config, "--policy", pol, "--audit", auditLog)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// 2025-11-25: on 2026-07-28 a server may no longer send sampling
	// requests during a call (they become multi round-trip results).
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connecting to the proxy: %v\n%s", err, stderr.String())
	}
	defer cs.Close()

	names := map[string]bool{}
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names[tl.Name] = true
	}
	for _, n := range []string{"everything__echo", "everything__get-env", "fs__read_text_file", "fs__write_file", "fs__list_directory"} {
		if !names[n] {
			t.Fatalf("tools/list lacks %s; got %v", n, names)
		}
	}

	call := func(name string, args map[string]any, token any) *mcp.CallToolResult {
		t.Helper()
		p := &mcp.CallToolParams{Name: name, Arguments: args}
		if token != nil {
			p.SetProgressToken(token)
		}
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, stderr.String())
		}
		return res
	}
	text := func(r *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range r.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	errType := func(r *mcp.CallToolResult) string {
		m, _ := r.StructuredContent.(map[string]any)
		s, _ := m["type"].(string)
		return s
	}

	// Allowed (level 0 by its annotations) and allowed by a rule.
	if r := call("everything__echo", map[string]any{"message": "hi there"}, nil); r.IsError || !strings.Contains(text(r), "hi there") {
		t.Errorf("echo: %+v %q", r, text(r))
	}
	if r := call("fs__read_text_file", map[string]any{"path": filepath.Join(ws, "a.txt")}, nil); r.IsError || !strings.Contains(text(r), "hello from the workspace") {
		t.Errorf("read_text_file: isError=%v %q", r.IsError, text(r))
	}
	// Denied by rules: refused, nothing written.
	if r := call("everything__get-env", nil, nil); !r.IsError || errType(r) != "permission_denied" {
		t.Errorf("get-env: want permission_denied, got isError=%v %q", r.IsError, text(r))
	}
	if r := call("fs__write_file", map[string]any{"path": filepath.Join(ws, "b.txt"), "content": "x"}, nil); !r.IsError || errType(r) != "permission_denied" {
		t.Errorf("write_file: want permission_denied, got isError=%v %q", r.IsError, text(r))
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("a denied write_file wrote b.txt (stat: %v)", err)
	}
	// Level 3 (set in the configuration) without an approver: refused.
	if r := call("fs__edit_file", map[string]any{"path": filepath.Join(ws, "a.txt"), "edits": []any{map[string]any{"oldText": "hello", "newText": "bye"}}}, nil); !r.IsError {
		t.Errorf("edit_file at level 3 ran without approval: %q", text(r))
	}
	// The upstream's own refusal comes back typed.
	if r := call("fs__read_text_file", map[string]any{"path": "/etc/hostname"}, nil); !r.IsError || errType(r) != "permission_denied" {
		t.Errorf("read outside the upstream's folder: want permission_denied, got isError=%v type %q %q", r.IsError, errType(r), text(r))
	}
	// Progress comes back through the gateway.
	if r := call("everything__trigger-long-running-operation", map[string]any{"duration": 1, "steps": 3}, "p-1"); r.IsError {
		t.Errorf("long-running operation: %q", text(r))
	}
	if progress.Load() == 0 {
		t.Error("no progress notification came through the gateway")
	}
	// Sampling goes from the upstream to this client and back.
	if r := call("everything__trigger-sampling-request", map[string]any{"prompt": "say hi", "maxTokens": 20}, nil); r.IsError || !strings.Contains(text(r), "sampled through the gateway") {
		t.Errorf("sampling through the gateway: isError=%v %q", r.IsError, text(r))
	}
	cs.Close()
	cmd.Wait()

	want := map[string]string{
		"everything__echo": "allow", "fs__read_text_file": "allow", "everything__get-env": "deny",
		"fs__write_file": "deny", "everything__trigger-sampling-request": "allow",
	}
	got := map[string]string{}
	for _, r := range auditRecords(t, auditLog) {
		name, _ := r["tool"].(string)
		if strings.HasPrefix(name, "trust:") {
			// The gateway pins the reference servers on first use: nothing
			// is quarantined, and the scan finds them clean.
			args, _ := r["arguments"].(map[string]any)
			if out := r["outcome"]; out != "first_use" && out != "pinned" || args["verdict"] != nil && args["verdict"] != "clean" {
				t.Errorf("trust record of a reference server: %v", r)
			}
			continue
		}
		if r["principal"] != "proxy-test" {
			t.Errorf("audit record of %s names principal %v, want proxy-test", name, r["principal"])
		}
		if _, ok := got[name]; !ok {
			got[name], _ = r["decision"].(string)
		}
	}
	for name, d := range want {
		if got[name] != d {
			t.Errorf("audit: %s decided %q, want %q (all: %v)", name, got[name], d, got)
		}
	}
	if r := toolgate(t, dir, "", "audit", "verify", auditLog); r.code != 0 {
		t.Errorf("audit verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestProxyUsage checks the command line's refusals.
func TestProxyUsage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("servers:\n  - name: x\n    command: true\n    colour: blue\n"), 0o644)
	both := filepath.Join(dir, "both.yaml")
	os.WriteFile(both, []byte("servers:\n  - name: x\n    command: a\n    url: http://127.0.0.1:1/mcp\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy"}, "name an upstream"},
		{[]string{"proxy", "--config", bad}, "colour"},
		{[]string{"proxy", "--config", both}, "not both"},
		{[]string{"proxy", "--config", bad, "--", "x"}, "not both"},
		{[]string{"proxy", "--http", "0.0.0.0:1", "--", "x"}, "not a loopback address"},
		{[]string{"proxy", "--level", "x=7", "--", "x"}, "LEVEL"},
		{[]string{"proxy", "--name", "a b", "--", "x"}, "upstream name"},
	} {
		r := toolgate(t, dir, "", append([]string{"proxy", "--audit", "off"}, tc.args[1:]...)...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", tc.args, r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: stderr %q lacks %q", tc.args, r.stderr, tc.want)
		}
	}
}
