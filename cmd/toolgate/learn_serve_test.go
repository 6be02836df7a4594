package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/redistest"
)

// The API keys of the learning tests: three principals.
const (
	learnKeyAlice = "tg-learn-alice-0123456789"
	learnKeyBob   = "tg-learn-bob-0123456789"
	learnKeyCarol = "tg-learn-carol-0123456789"
	learnKeyDave  = "tg-learn-dave-0123456789"
)

// notesQuery is a request the text alone ranks read_file fourth for
// (write_file first): what use must correct.
const notesQuery = "show me the notes"

// learnPolicy writes a policy with four keys; carol may not read
// files. extra is appended.
func learnPolicy(t *testing.T, extra string) string {
	t.Helper()
	pol := filepath.Join(t.TempDir(), "toolgate.yaml")
	src := fmt.Sprintf(`
auth:
  resource: http://127.0.0.1/mcp
  api_keys:
    - {sha256: %s, principal: alice}
    - {sha256: %s, principal: bob}
    - {sha256: %s, principal: carol, roles: [noread]}
    - {sha256: %s, principal: dave}
roles:
  noread:
    deny: [read_file]
%s`, sha256Hex(learnKeyAlice), sha256Hex(learnKeyBob), sha256Hex(learnKeyCarol), sha256Hex(learnKeyDave), extra)
	if err := os.WriteFile(pol, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return pol
}

// mcpAs connects to u with key's bearer token: a new session.
func mcpAs(t *testing.T, ctx context.Context, u, key string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: headerRT{http.DefaultTransport, "Bearer " + key}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "learn-test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// toolSearch calls tool_search and returns the names it found, best first.
func toolSearch(t *testing.T, ctx context.Context, cs *mcp.ClientSession, query string) []string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": query, "limit": 10}})
	if err != nil {
		t.Fatalf("tool_search %q: %v", query, err)
	} else if res.IsError {
		t.Fatalf("tool_search %q: %s", query, text(res))
	}
	var out struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range out.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func readNotes(t *testing.T, ctx context.Context, cs *mcp.ClientSession) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
	if err != nil {
		t.Fatalf("read_file: %v", err)
	} else if res.IsError {
		t.Fatalf("read_file: %s", text(res))
	}
}

// TestServeToolSearchLearns runs `toolgate serve --http --defer-tools`
// with three principals: alice's session searches and then reads a file;
// a new session of bob's gets read_file first for the same request
// (fourth by its text); carol, whom the policy refuses read_file, is never
// offered it; with selection.learn: false nothing is learned.
func TestServeToolSearchLearns(t *testing.T) {
	t.Setenv("TOOLGATE_STATE", t.TempDir())
	metricsPort := freePort(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	t.Setenv("OTEL_METRICS_EXPORTER", "prometheus")
	t.Setenv("OTEL_EXPORTER_PROMETHEUS_HOST", "127.0.0.1")
	t.Setenv("OTEL_EXPORTER_PROMETHEUS_PORT", metricsPort)
	root, auditLog := serveWorkspace(t)
	u := startHTTP(t, "serve", "--root", root, "--policy", learnPolicy(t, ""), "--audit", auditLog, "--http", "127.0.0.1:0", "--defer-tools")
	t.Setenv("OTEL_METRICS_EXPORTER", "none") // the later servers export nothing
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	alice := mcpAs(t, ctx, u, learnKeyAlice)
	if got := toolSearch(t, ctx, alice, notesQuery); len(got) == 0 || got[0] == "read_file" {
		t.Fatalf("before any use: %v; the test needs a request read_file is not first for", got)
	}
	readNotes(t, ctx, alice)
	if got := toolSearch(t, ctx, mcpAs(t, ctx, u, learnKeyBob), notesQuery); len(got) == 0 || got[0] != "read_file" {
		t.Fatalf("bob's new session after alice's use: %v, want read_file first", got)
	}
	if got := toolSearch(t, ctx, mcpAs(t, ctx, u, learnKeyCarol), notesQuery); strings.Contains(strings.Join(got, ","), "read_file") {
		t.Fatalf("carol, refused read_file, was offered it: %v", got)
	}

	// toolgate.selection.hit counted it: read_file was fourth, in the top 5.
	resp, err := http.Get("http://127.0.0.1:" + metricsPort + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var hit string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "toolgate_selection_hit") && !strings.HasPrefix(line, "#") {
			hit = line
		}
	}
	if !strings.Contains(hit, `toolgate_selection_rank="top5"`) || !strings.HasSuffix(hit, " 1") {
		t.Fatalf("toolgate.selection.hit on /metrics: %q\n%s", hit, body)
	}

	// The audit log holds the learned pair: --report counts it (read_file
	// was fourth: in the top 5, not first), --usage-from learns from it.
	r := toolgate(t, root, "", "search", "--report", auditLog, "--json")
	var row struct {
		Week     string
		Upstream string
		Calls    int
		First    float64
		Top5     float64
		NotFound float64 `json:"not_found"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &row); err != nil || r.code != 0 || row.Calls != 1 || row.First != 0 || row.Top5 != 100 || row.NotFound != 0 || !strings.Contains(row.Week, "-W") {
		t.Fatalf("--report: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if r = toolgate(t, root, "", "search", "--report", auditLog); r.code != 0 || !strings.Contains(r.stdout, "(built-in)") || !strings.Contains(r.stdout, "100.0%") {
		t.Fatalf("--report table: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = toolgate(t, root, "", "search", notesQuery, "--root", root, "--audit", "off", "--usage-from", auditLog, "--json", "-k", "1")
	if r.code != 0 || !strings.Contains(r.stdout, `"read_file"`) {
		t.Fatalf("--usage-from the audit log: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Off by policy: the same use teaches nothing.
	t.Setenv("TOOLGATE_STATE", t.TempDir())
	u = startHTTP(t, "serve", "--root", root, "--policy", learnPolicy(t, "selection: {learn: false}\n"), "--audit", auditLog, "--http", "127.0.0.1:0", "--defer-tools")
	alice = mcpAs(t, ctx, u, learnKeyAlice)
	toolSearch(t, ctx, alice, notesQuery)
	readNotes(t, ctx, alice)
	if got := toolSearch(t, ctx, mcpAs(t, ctx, u, learnKeyBob), notesQuery); len(got) > 0 && got[0] == "read_file" {
		t.Fatalf("selection.learn: false, yet bob's search learned: %v", got)
	}
}

// TestToolSearchLearnsAcrossReplicas: two `serve --http --defer-tools`
// replicas sharing state.redis (a real redis-server): what alice's use
// teaches on one reaches bob's search on the other, and the use of both
// reaches a third principal's search on each.
func TestToolSearchLearnsAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	root, auditLog := serveWorkspace(t)
	pol := learnPolicy(t, fmt.Sprintf("state:\n  redis:\n    url: %s\n    prefix: \"learn:\"\n", srv.URL()))
	var urls []string
	for i := range 2 {
		t.Setenv("TOOLGATE_STATE", t.TempDir()) // no shared file: only Redis joins them
		urls = append(urls, startHTTP(t, "serve", "--root", root, "--policy", pol, "--audit", auditLog+fmt.Sprint(i), "--http", "127.0.0.1:0", "--defer-tools"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice := mcpAs(t, ctx, urls[0], learnKeyAlice)
	if got := toolSearch(t, ctx, mcpAs(t, ctx, urls[1], learnKeyBob), notesQuery); len(got) > 0 && got[0] == "read_file" {
		t.Fatalf("before any use: %v", got)
	}
	toolSearch(t, ctx, alice, notesQuery)
	readNotes(t, ctx, alice)
	if got := toolSearch(t, ctx, mcpAs(t, ctx, urls[1], learnKeyBob), notesQuery); len(got) == 0 || got[0] != "read_file" {
		t.Fatalf("bob on the other replica after alice's use: %v, want read_file first", got)
	}
	// Once two principals taught anything, what counts is what two agree
	// on: bob's use on replica 1 and alice's on replica 0, together, teach
	// dave's search on either.
	const q2 = "what does the greeting say"
	bob := mcpAs(t, ctx, urls[1], learnKeyBob)
	if got := toolSearch(t, ctx, bob, q2); len(got) > 0 && got[0] == "read_file" {
		t.Fatalf("before use, %q: %v", q2, got)
	}
	readNotes(t, ctx, bob)
	toolSearch(t, ctx, alice, q2)
	readNotes(t, ctx, alice)
	for i, u := range urls {
		if got := toolSearch(t, ctx, mcpAs(t, ctx, u, learnKeyDave), q2); len(got) == 0 || got[0] != "read_file" {
			t.Fatalf("dave on replica %d after alice's and bob's use: %v, want read_file first", i, got)
		}
	}
}

// TestProxyToolSearchLearnsNotQuarantined runs `toolgate proxy --http
// --defer-tools` over the rug-pull upstream (eight tools that all "add two
// numbers", so the text alone ties them): alice's use of one teaches bob's
// search; once the upstream changes that tool (its output schema, which
// learning does not key on) the pin quarantines it, trust.on_change: warn
// still offers it, and bob's search no longer raises it.
func TestProxyToolSearchLearnsNotQuarantined(t *testing.T) {
	t.Setenv("TOOLGATE_STATE", t.TempDir())
	dir := t.TempDir()
	pol := learnPolicy(t, "allow: [\"*__*\"]\ntrust:\n  on_change: warn\n")
	cfg := testUpstreamConfig(t, dir, "rug", "", "rugpull")
	u := startHTTP(t, "proxy", "--config", cfg, "--policy", pol, "--audit", filepath.Join(dir, "audit.jsonl"), "--http", "127.0.0.1:0", "--defer-tools")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const query, learned = "add two numbers", "rug__t_output_schema"

	alice := mcpAs(t, ctx, u, learnKeyAlice)
	if got := toolSearch(t, ctx, alice, query); len(got) == 0 || got[0] == learned {
		t.Fatalf("before any use: %v", got)
	}
	if res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: learned, Arguments: map[string]any{"a": 1, "b": 2}}); err != nil {
		t.Fatalf("%s: %v", learned, err)
	} else if res.IsError {
		t.Fatalf("%s: %s", learned, text(res))
	}
	if got := toolSearch(t, ctx, mcpAs(t, ctx, u, learnKeyBob), query); len(got) == 0 || got[0] != learned {
		t.Fatalf("bob after alice's use: %v, want %s first", got, learned)
	}

	toolSearch(t, ctx, alice, "test control changes one tool")
	if res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "rug__mutate", Arguments: map[string]any{"kind": "output_schema"}}); err != nil {
		t.Fatalf("mutate: %v", err)
	} else if res.IsError {
		t.Fatalf("mutate: %s", text(res))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := toolSearch(t, ctx, mcpAs(t, ctx, u, learnKeyBob), query)
		if len(got) > 0 && got[0] != learned {
			if e := trustList(t, dir, "--policy", pol)["rug/t_output_schema"]; e.State != "quarantined" {
				t.Fatalf("no longer first, but not quarantined: %+v", e)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the quarantined %s is still raised by use: %v", learned, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
