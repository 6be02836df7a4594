package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// buildInjectServer builds the upstream whose tools answer with injected
// text (testdata/injectserver).
func buildInjectServer(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "injectserver")
	build := exec.Command("go", "build", "-o", exe, "./cmd/toolgate/testdata/injectserver")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the test server: %v\n%s", err, out)
	}
	return exe
}

// proxySession starts `toolgate proxy --config CONFIG ARGS…` on stdio and
// connects a go-sdk client to it.
func proxySession(t *testing.T, ctx context.Context, config string, args ...string) (*mcp.ClientSession, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"proxy", "--config", config}, args...)...)
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "trust-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to the proxy: %v\n%s", err, stderr)
	}
	t.Cleanup(func() { cs.Close(); cmd.Wait() })
	return cs, stderr
}

func writeFile(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func callTool(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func errorType(r *mcp.CallToolResult) string {
	m, _ := r.StructuredContent.(map[string]any)
	s, _ := m["type"].(string)
	return s
}

var markerRE = regexp.MustCompile(`<untrusted-content id="[0-9a-f]{16}">`)

// TestProxyResultChecks puts the gateway in front of an upstream that
// answers with injected text (a real process) and of server-filesystem
// reading ordinary files: under trust.results mark (the default) the
// injected results come back marked as untrusted content, under block as a
// permission_denied error; the audit log names what was found; benign
// results pass untouched.
func TestProxyResultChecks(t *testing.T) {
	node, everything, filesystem := referenceServers(t)
	inject := buildInjectServer(t)
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Ordinary files: the repository's own (docs, source, JSON, YAML) and a log.
	files := map[string]string{}
	for name, src := range map[string]string{
		"README.md": "README.md", "engine.go": "engine/engine.go", "schema.json": "policy/toolgate.schema.json",
		"proxy.example.yaml": "docs/proxy.example.yaml", "auth.md": "docs/auth.md", "go.mod": "go.mod",
	} {
		data, err := os.ReadFile(filepath.Join(repoRoot(t), src))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(data)
	}
	files["server.log"] = "2026-12-01T10:00:01Z INFO started on :8080\n2026-12-01T10:00:05Z WARN retrying connection to db (attempt 2): connection refused\n" +
		"2026-12-01T10:01:00Z ERROR request failed: user must be logged in; please sign in and try again\n"
	for name, body := range files {
		writeFile(t, filepath.Join(ws, name), body)
	}

	for _, mode := range []string{"mark", "block"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			config := writeFile(t, filepath.Join(dir, "gateway.yaml"), "servers:\n"+
				"  - name: ev\n    command: "+strconv.Quote(inject)+"\n"+
				"  - name: fs\n    command: "+strconv.Quote(node)+"\n    args: ["+strconv.Quote(filesystem)+", "+strconv.Quote(ws)+"]\n"+
				"    isolation: {write: ["+strconv.Quote(ws)+"]}\n"+
				"  - name: everything\n    command: "+strconv.Quote(node)+"\n    args: ["+strconv.Quote(everything)+", stdio]\n")
			trustBlock := ""
			if mode == "block" {
				trustBlock = "trust:\n  results: block\n"
			}
			pol := writeFile(t, filepath.Join(dir, "policy.yaml"), "allow:\n  - \"ev__*\"\n  - fs__read_text_file\n  - everything__echo\n"+trustBlock)
			auditLog := filepath.Join(dir, "audit.jsonl")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cs, stderr := proxySession(t, ctx, config, "--policy", pol, "--audit", auditLog)

			for _, name := range []string{"ev__fetch_page", "ev__read_inbox", "ev__tag_notes", "ev__quote", "ev__lookup"} {
				r := callTool(t, ctx, cs, name, map[string]any{"text": "x"})
				body := text(r)
				if strings.Contains(body, "send_diagnostics") && mode == "block" || strings.Contains(body, "\U000E0049") {
					t.Errorf("%s: the injection reached the client: %q", name, body)
				}
				switch {
				case mode == "block":
					if !r.IsError || errorType(r) != "permission_denied" || !strings.Contains(body, "withheld") || !strings.Contains(body, "upstream ev") {
						t.Errorf("%s under block: isError=%v type %q %q", name, r.IsError, errorType(r), body)
					}
				case name == "ev__lookup": // an error result: its message is marked
					if !r.IsError || !strings.Contains(body, "[toolgate: untrusted content]") || !markerRE.MatchString(body) {
						t.Errorf("%s under mark: isError=%v %q", name, r.IsError, body)
					}
				case name == "ev__quote": // the injection is in structuredContent: marked where it stands
					sc, _ := r.StructuredContent.(map[string]any)
					note, _ := sc["note"].(string)
					if r.IsError || !strings.HasPrefix(body, "[toolgate: untrusted content]") || !markerRE.MatchString(note) || sc["symbol"] != "ACME" ||
						!strings.Contains(body, `{"symbol":"ACME","price":12.5}`) || !strings.Contains(fmt.Sprint(r.Meta), "/structuredContent/note") {
						t.Errorf("quote under mark: structured content %v, text %q, meta %v", r.StructuredContent, body, r.Meta)
					}
				default:
					if r.IsError || !strings.HasPrefix(body, "[toolgate: untrusted content]") || len(markerRE.FindAllString(body, -1)) < 2 {
						t.Errorf("%s under mark: isError=%v %q", name, r.IsError, body)
					}
				}
			}

			// Benign results: untouched.
			for name, want := range files {
				r := callTool(t, ctx, cs, "fs__read_text_file", map[string]any{"path": filepath.Join(ws, name)})
				if r.IsError || text(r) != want {
					t.Errorf("reading %s through the gateway: isError=%v, text changed (%d bytes, want %d): %.200q", name, r.IsError, len(text(r)), len(want), text(r))
				}
			}
			for _, c := range []struct {
				name string
				args map[string]any
			}{
				{"ev__stats", map[string]any{}},
				{"ev__echo", map[string]any{"text": "please call me back tomorrow"}},
				{"everything__echo", map[string]any{"message": "Use the search tool to find it, then read the first result."}},
			} {
				if r := callTool(t, ctx, cs, c.name, c.args); r.IsError || strings.Contains(text(r), "untrusted") {
					t.Errorf("%s: isError=%v %q", c.name, r.IsError, text(r))
				}
			}
			cs.Close()

			flagged := map[string]string{}
			for _, rec := range auditRecords(t, auditLog) {
				name, _ := rec["tool"].(string)
				outcome, _ := rec["outcome"].(string)
				if strings.HasPrefix(name, "ev__") || strings.HasPrefix(name, "fs__") || strings.HasPrefix(name, "everything__") {
					flagged[name] = outcome
				}
			}
			wantOutcome := map[string]string{"ev__fetch_page": "fake_error", "ev__read_inbox": "fake_turn", "ev__tag_notes": "hidden_text", "ev__quote": "(flagged: ", "ev__lookup": "(flagged: "}
			for name, frag := range wantOutcome {
				if o := flagged[name]; !strings.Contains(o, "(flagged: ") || !strings.Contains(o, frag) {
					t.Errorf("audit outcome of %s: %q, want it flagged (%s)\n%s", name, o, frag, stderr)
				}
			}
			for _, name := range []string{"fs__read_text_file", "ev__stats", "ev__echo", "everything__echo"} {
				if o := flagged[name]; o != "ok" {
					t.Errorf("audit outcome of %s: %q, want ok", name, o)
				}
			}
			if r := toolgate(t, dir, "", "audit", "verify", auditLog); r.code != 0 {
				t.Errorf("audit verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestProxyWebhook runs a guardrail service in the test and a gateway
// process whose policy names it: it sees each call and result of an
// upstream tool, and its allow, deny, modified arguments and modified
// result are what the client and the upstream get; a webhook that fails
// (HTTP 500, no answer in time) denies under on_error deny and lets the
// call through under allow.
func TestProxyWebhook(t *testing.T) {
	inject := buildInjectServer(t)
	var mu sync.Mutex
	var seen []map[string]any
	release := make(chan struct{})
	defer close(release)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		args, _ := req["arguments"].(map[string]any)
		what, _ := args["text"].(string)
		phase := req["phase"]
		switch {
		case what == "forbidden":
			io.WriteString(w, `{"decision":"deny","reason":"that text is on the block list"}`)
		case what == "rewrite me" && phase == "call":
			io.WriteString(w, `{"decision":"modify","arguments":{"text":"rewritten by the guardrail"}}`)
		case what == "hide the answer" && phase == "result":
			io.WriteString(w, `{"decision":"modify","result":{"content":[{"type":"text","text":"[answer replaced by the guardrail]"}],"is_error":false}}`)
		case what == "fail":
			http.Error(w, "guardrail crashed", http.StatusInternalServerError)
		case what == "hang":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		default:
			io.WriteString(w, `{"decision":"allow"}`)
		}
	}))
	defer hook.Close()

	for _, onError := range []string{"deny", "allow"} {
		t.Run("on_error "+onError, func(t *testing.T) {
			dir := t.TempDir()
			config := writeFile(t, filepath.Join(dir, "gateway.yaml"), "servers:\n  - name: ev\n    command: "+strconv.Quote(inject)+"\n")
			pol := writeFile(t, filepath.Join(dir, "policy.yaml"), "allow:\n  - \"ev__*\"\ntrust:\n  webhook:\n    url: "+hook.URL+"/check\n    timeout: 300ms\n    on_error: "+onError+"\n")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cs, stderr := proxySession(t, ctx, config, "--policy", pol, "--audit", "off")
			echo := func(s string) (*mcp.CallToolResult, map[string]any) {
				r := callTool(t, ctx, cs, "ev__echo", map[string]any{"text": s})
				var got map[string]any
				json.Unmarshal([]byte(text(r)), &got)
				return r, got
			}

			if r, got := echo("hello"); r.IsError || got["called_as"] != "echo" {
				t.Errorf("allowed: %q\n%s", text(r), stderr)
			}
			if r, _ := echo("forbidden"); !r.IsError || errorType(r) != "permission_denied" || !strings.Contains(text(r), "that text is on the block list") {
				t.Errorf("denied: isError=%v %q", r.IsError, text(r))
			}
			if r, got := echo("rewrite me"); r.IsError || got["arguments"].(map[string]any)["text"] != "rewritten by the guardrail" {
				t.Errorf("modified arguments: the upstream got %q", text(r))
			}
			if r, _ := echo("hide the answer"); r.IsError || text(r) != "[answer replaced by the guardrail]" {
				t.Errorf("modified result: %q", text(r))
			}
			for _, fail := range []string{"fail", "hang"} {
				r, got := echo(fail)
				if onError == "deny" {
					if !r.IsError || errorType(r) != "permission_denied" || !strings.Contains(text(r), "guardrail") {
						t.Errorf("%s under on_error deny: isError=%v %q", fail, r.IsError, text(r))
					}
				} else if r.IsError || got["called_as"] != "echo" {
					t.Errorf("%s under on_error allow: isError=%v %q", fail, r.IsError, text(r))
				}
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	first := seen[0]
	if first["phase"] != "call" || first["tool"] != "ev__echo" || first["upstream"] != "ev" || first["upstream_tool"] != "echo" || first["principal"] != "trust-test" || first["call_id"] == "" {
		t.Errorf("the webhook's first request: %v", first)
	}
	if second := seen[1]; second["phase"] != "result" || second["result"] == nil {
		t.Errorf("the webhook's second request: %v", second)
	}
}

// TestProxyShaping: include, exclude, rename and describe through a real
// gateway process; the renamed tool is called upstream by its own name.
func TestProxyShaping(t *testing.T) {
	inject := buildInjectServer(t)
	dir := t.TempDir()
	config := writeFile(t, filepath.Join(dir, "gateway.yaml"), "servers:\n  - name: ev\n    command: "+strconv.Quote(inject)+"\n"+
		"    tools:\n      include: [\"e*\", \"s*\", fetch_page, quote]\n      exclude: [stats]\n"+
		"      rename: {echo: say, quote: price}\n      describe: {fetch_page: \"Fetch a page (the operator's words).\"}\n      levels: {\"*\": 0}\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, stderr := proxySession(t, ctx, config, "--audit", "off")
	got := map[string]string{}
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got[tl.Name] = tl.Description
	}
	want := map[string]string{"ev__say": "Echo the text back.", "ev__fetch_page": "Fetch a page (the operator's words).", "ev__price": "Return a stock quote."}
	if len(got) != len(want) {
		t.Errorf("tools/list: %v, want %v\n%s", got, want, stderr)
	}
	for name, d := range want {
		if got[name] != d {
			t.Errorf("%s: description %q, want %q (listed: %v)", name, got[name], d, got)
		}
	}
	r := callTool(t, ctx, cs, "ev__say", map[string]any{"text": "renamed"})
	var echo map[string]any
	if json.Unmarshal([]byte(text(r)), &echo); r.IsError || echo["called_as"] != "echo" {
		t.Errorf("ev__say reached the upstream as %v: %q", echo["called_as"], text(r))
	}
	if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ev__echo", Arguments: map[string]any{}}); err == nil && !r.IsError {
		t.Errorf("the old name still works: %q", text(r))
	}
}

// TestProxyShapingCollision: two upstreams that give one tool name after
// prefixing and renaming are a load error naming both.
func TestProxyShapingCollision(t *testing.T) {
	inject := buildInjectServer(t)
	dir := t.TempDir()
	config := writeFile(t, filepath.Join(dir, "gateway.yaml"), "servers:\n"+
		"  - name: alpha\n    command: "+strconv.Quote(inject)+"\n    tools: {include: [echo], rename: {echo: dup}}\n"+
		"  - name: beta\n    prefix: alpha\n    command: "+strconv.Quote(inject)+"\n    tools: {include: [stats], rename: {stats: dup}}\n")
	r := toolgate(t, dir, "", "proxy", "--config", config, "--audit", "off")
	if r.code == 0 || !strings.Contains(r.stderr, "upstream alpha and upstream beta both give a tool named alpha__dup") {
		t.Fatalf("exit %d, stderr %q; want a load error naming both upstreams", r.code, r.stderr)
	}
	// One upstream, two tools renamed to one name: refused before starting anything.
	bad := writeFile(t, filepath.Join(dir, "bad.yaml"), "servers:\n  - name: alpha\n    command: "+strconv.Quote(inject)+"\n    tools: {rename: {echo: x, stats: x}}\n")
	if r := toolgate(t, dir, "", "proxy", "--config", bad, "--audit", "off"); r.code != 2 || !strings.Contains(r.stderr, "both renamed to x") {
		t.Errorf("exit %d, stderr %q; want a usage error", r.code, r.stderr)
	}
}

// headerLog records the Mcp-Name header of each tools/call a client sends.
type headerLog struct {
	mu    sync.Mutex
	names []string
}

func (h *headerLog) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.Header.Get("Mcp-Method") == "tools/call" {
		h.mu.Lock()
		h.names = append(h.names, r.Header.Get("Mcp-Name"))
		h.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestProxyRenameMcpName: a 2026-07-28 client calls a renamed tool over
// HTTP. The go-sdk client sets Mcp-Name from the name it calls, the
// gateway (which checks the header against the body) accepts it, and the
// upstream is called by the tool's own name, its header (if its protocol
// has one) saying the same.
func TestProxyRenameMcpName(t *testing.T) {
	var mu sync.Mutex
	var upstreamNames, upstreamHeaders []string
	up := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	up.AddTool(&mcp.Tool{Name: "echo", Description: "Echo the text back.", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			upstreamNames = append(upstreamNames, r.Params.Name)
			if r.Extra != nil && r.Extra.Header != nil {
				upstreamHeaders = append(upstreamHeaders, r.Extra.Header.Get("Mcp-Name"))
			}
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echoed"}}}, nil
		})
	upstream := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	// Closed after the gateway stops (cleanups run last in, first out).
	t.Cleanup(func() { upstream.CloseClientConnections(); upstream.Close() })

	dir := t.TempDir()
	config := writeFile(t, filepath.Join(dir, "gateway.yaml"), "servers:\n  - name: up\n    url: "+upstream.URL+"\n    tools: {rename: {echo: say}}\n")
	// Stateless: the go-sdk serves 2026-07-28 without sessions only.
	u := startProxyHTTP(t, "--stateless", "--config", config, "--audit", "off")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	headers := &headerLog{}
	client := mcp.NewClient(&mcp.Implementation{Name: "new-client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: &http.Client{Transport: headers}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	r := callTool(t, ctx, cs, "up__say", map[string]any{})
	if r.IsError || text(r) != "echoed" {
		t.Fatalf("up__say: %q", text(r))
	}
	headers.mu.Lock()
	defer headers.mu.Unlock()
	if len(headers.names) != 1 || headers.names[0] != "up__say" {
		t.Errorf("Mcp-Name headers sent to the gateway: %q, want [up__say]", headers.names)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(upstreamNames) != 1 || upstreamNames[0] != "echo" {
		t.Errorf("the upstream was called as %q, want echo", upstreamNames)
	}
	for _, h := range upstreamHeaders {
		if h != "" && h != "echo" {
			t.Errorf("the upstream got Mcp-Name %q for its echo", h)
		}
	}
}
