package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/conformancetest"
)

// The MCP tools these tests run come from npm (scripts/test-deps.sh, `make
// deps`), cached in the repository's .cache folder.

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func npmTools(t *testing.T) (node, modules string) {
	t.Helper()
	return conformancetest.NPMTools(t, repoRoot(t),
		"@modelcontextprotocol/conformance/package.json",
		"@modelcontextprotocol/inspector/package.json",
		"@modelcontextprotocol/sdk/package.json")
}

// serveWorkspace is a root folder with a file, and an audit log path.
func serveWorkspace(t *testing.T) (root, auditLog string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello from toolgate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, filepath.Join(t.TempDir(), "audit.jsonl")
}

var urlRE = regexp.MustCompile(`serving MCP at (http://\S+/mcp)`)

// serveHTTPProcess starts `toolgate serve --http 127.0.0.1:0` and returns its URL.
func serveHTTPProcess(t *testing.T, root, auditLog string) string {
	t.Helper()
	return startHTTP(t, "serve", "--root", root, "--audit", auditLog, "--http", "127.0.0.1:0")
}

// startHTTP starts `toolgate ARGS…` (a command serving MCP over HTTP), ends
// it when the test ends, and returns the URL it announces.
func startHTTP(t *testing.T, args ...string) string {
	t.Helper()
	u, _ := startHTTPLines(t, args...)
	return u
}

func TestServeRefusesRemoteAddress(t *testing.T) {
	r := toolgate(t, workspace(t), "", "serve", "--audit", "off", "--http", "0.0.0.0:8765")
	if r.code != 2 || !strings.Contains(r.stderr, "not a loopback address") || !strings.Contains(r.stderr, "--allow-remote") {
		t.Fatalf("exit %d, stderr %q; want exit 2 explaining loopback and --allow-remote", r.code, r.stderr)
	}
}

// TestServeConformance runs the conformance scenarios that need no fixture
// names against `toolgate serve --http`.
func TestServeConformance(t *testing.T) {
	node, modules := npmTools(t)
	root, auditLog := serveWorkspace(t)
	url := serveHTTPProcess(t, root, auditLog)
	passedRE := regexp.MustCompile(`Passed: (\d+)/(\d+), 0 failed`)
	for _, sc := range []string{"server-initialize", "ping", "tools-list", "logging-set-level", "dns-rebinding-protection",
		"server-sse-multiple-streams", "resources-list", "prompts-list"} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, node, filepath.Join(modules, ".bin", "conformance"), "server", "--url", url, "--scenario", sc)
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		cancel()
		m := passedRE.FindSubmatch(out)
		if err != nil || m == nil || string(m[1]) != string(m[2]) {
			t.Errorf("conformance scenario %s: %v\n%s", sc, err, out)
			continue
		}
		t.Logf("%s: %s passed, 0 failed", sc, m[1])
	}
}

// inspector runs the MCP Inspector CLI and returns its exit code and output.
func inspector(t *testing.T, args ...string) (int, string) {
	t.Helper()
	node, modules := npmTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(modules, ".bin", "mcp-inspector"), "--cli"}, args...)...)
	cmd.Env = append(os.Environ(), "MCP_CATALOG_PATH="+filepath.Join(t.TempDir(), "catalog.json"), "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("inspector: %v\n%s", err, out)
		}
		code = ee.ExitCode()
	}
	return code, string(out)
}

func TestServeInspector(t *testing.T) {
	root, auditLog := serveWorkspace(t)
	stdio := []string{bin, "serve", "--root", root, "--audit", auditLog}
	url := serveHTTPProcess(t, root, auditLog+".http")
	for _, target := range []struct {
		name string
		args []string
	}{{"stdio", stdio}, {"http", []string{url}}} {
		code, out := inspector(t, append(target.args, "--method", "tools/list")...)
		if code != 0 || !strings.Contains(out, `"read_file"`) || !strings.Contains(out, `"inputSchema"`) {
			t.Errorf("%s tools/list: exit %d\n%s", target.name, code, out)
		}
		code, out = inspector(t, append(target.args, "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=a.txt")...)
		if code != 0 || !strings.Contains(out, "1|hello from toolgate") {
			t.Errorf("%s tools/call read_file: exit %d\n%s", target.name, code, out)
		}
		code, out = inspector(t, append(target.args, "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=/etc/passwd")...)
		if code != 5 || !strings.Contains(out, "permission_denied") {
			t.Errorf("%s tools/call outside the root: exit %d, want 5 (isError)\n%s", target.name, code, out)
		}
	}
	for _, log := range []string{auditLog, auditLog + ".http"} {
		recs := slices.DeleteFunc(readAudit(t, log), func(r audit.Record) bool { return r.Tool == "sandbox" }) // the level, at start
		if len(recs) != 2 || recs[0].Outcome != "ok" || recs[1].Outcome != "denied" {
			t.Errorf("%s: %d records %+v; want an ok and a denied read_file", log, len(recs), recs)
		}
		for _, r := range recs {
			if r.Principal == "" || r.Principal == "mcp-client" || r.Session == "" {
				t.Errorf("%s: record without the client's name or session: %+v", log, r)
			}
		}
	}
}

func readAudit(t *testing.T, path string) []audit.Record {
	t.Helper()
	f, err := os.Open(path)
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

// TestServeTypeScriptSDK drives `toolgate serve` with the official
// TypeScript SDK client, over stdio and over HTTP.
func TestServeTypeScriptSDK(t *testing.T) {
	node, modules := npmTools(t)
	root, auditLog := serveWorkspace(t)
	script, err := filepath.Abs(filepath.Join("testdata", "sdk_client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	sdk := filepath.Join(modules, "@modelcontextprotocol", "sdk")
	url := serveHTTPProcess(t, root, auditLog+".http")
	for name, args := range map[string][]string{
		"stdio": {script, sdk, "stdio", root, auditLog, bin},
		"http":  {script, sdk, "http", url, root},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, node, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Errorf("%s: %v\n%s%s", name, err, out, stderr.String())
			continue
		}
		var got struct {
			Tools []string
			OK    struct {
				IsError bool
				Text    string
			}
			Denied struct {
				IsError    bool
				Type, Text string
			}
			Unknown  json.RawMessage
			Resource string
			Prompts  []string
			Review   bool
		}
		if err := json.Unmarshal(lastLine(out), &got); err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
			continue
		}
		if !contains(got.Tools, "read_file") || got.OK.IsError || !strings.Contains(got.OK.Text, "1|hello from toolgate") {
			t.Errorf("%s: tools %v, read_file %+v", name, got.Tools, got.OK)
		}
		if !got.Denied.IsError || got.Denied.Type != "permission_denied" || !strings.Contains(got.Denied.Text, "What to do:") {
			t.Errorf("%s: read outside the root: %+v", name, got.Denied)
		}
		if !strings.Contains(string(got.Unknown), "-32602") {
			t.Errorf("%s: unknown tool: %s, want a JSON-RPC error -32602", name, got.Unknown)
		}
		if got.Resource != "hello from toolgate\n" || !contains(got.Prompts, "code_review") || !contains(got.Prompts, "explore_project") || !got.Review {
			t.Errorf("%s: resource %q, prompts %v, review %v", name, got.Resource, got.Prompts, got.Review)
		}
	}
}

func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return lines[len(lines)-1]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
