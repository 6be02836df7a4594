package mcpclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// The test binary doubles as the upstream server: with this variable set
// it serves testServer over stdio (a real process the client starts, can
// crash, and restarts).
const serverEnv = "MCPCLIENT_TEST_SERVER"

// barrierEnv, "DIR N", makes the test server mark its start in DIR and
// serve only once N servers have marked theirs there.
const barrierEnv = "MCPCLIENT_TEST_BARRIER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		if dir, n, ok := strings.Cut(os.Getenv(barrierEnv), " "); ok {
			os.WriteFile(filepath.Join(dir, strconv.Itoa(os.Getpid())), nil, 0o600)
			for {
				if marks, _ := os.ReadDir(dir); strconv.Itoa(len(marks)) == n {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		if err := testServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func ptr[T any](v T) *T { return &v }

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// testServer is the upstream of these tests.
func testServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, &mcp.ServerOptions{Instructions: "test upstream"})
	obj := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}
	s.AddTool(&mcp.Tool{Name: "echo", Description: "echoes", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "Echo"},
		OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"echo": map[string]any{"type": "string"}}}},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Text string }
			json.Unmarshal(r.Params.Arguments, &in)
			res := text(in.Text)
			res.StructuredContent = map[string]any{"echo": in.Text}
			res.Content = append(res.Content, &mcp.ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"},
				&mcp.ResourceLink{URI: "test://x", Name: "x"})
			return res, nil
		})
	s.AddTool(&mcp.Tool{Name: "write stuff", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false)}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("written"), nil })
	s.AddTool(&mcp.Tool{Name: "nuke", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("boom"), nil })
	s.AddTool(&mcp.Tool{Name: "lookahead", InputSchema: map[string]any{"type": "object", "properties": map[string]any{
		"pattern": map[string]any{"type": "string", "pattern": "^(?!secret).*$"},
		"n":       map[string]any{"type": "integer", "minimum": 1},
	}, "required": []string{"n"}}},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("got " + string(r.Params.Arguments)), nil
		})
	s.AddTool(&mcp.Tool{Name: "missing", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res := text("ENOENT: no such file or directory, open 'x.txt'")
			res.IsError = true
			return res, nil
		})
	s.AddTool(&mcp.Tool{Name: "crash", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-time.After(5 * time.Second):
			case <-ctx.Done():
			}
			return text("late"), nil
		})
	s.AddTool(&mcp.Tool{Name: "chatty", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i := 1; i <= 3; i++ {
				r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: r.Params.GetProgressToken(), Progress: float64(i), Total: 3})
				r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: fmt.Sprintf("step %d", i)})
			}
			return text("done"), nil
		})
	s.AddTool(&mcp.Tool{Name: "grow", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.AddTool(&mcp.Tool{Name: "grown", InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("new"), nil })
			return text("grew"), nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + r.Params.Arguments["who"]}}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "test://static", Name: "static", MIMEType: "text/plain"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "static text"}}}, nil
		})
	return s
}

// stdio returns the configuration of the test upstream as a command.
func stdio(t *testing.T, name string) mcpclient.Config {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcpclient.Config{Name: name, Command: exe, Args: []string{"-test.run=^$"}, Env: map[string]string{serverEnv: "1"}, Timeout: 2 * time.Second}
}

func find(t *testing.T, tools []tool.Tool, name string) tool.Tool {
	t.Helper()
	for _, tl := range tools {
		if tl.Definition().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

func run(t *testing.T, tl tool.Tool, args string) tool.Result {
	t.Helper()
	res, err := tl.Run(context.Background(), tool.Call{Name: tl.Definition().Name, Args: json.RawMessage(args)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestDefinitions(t *testing.T) {
	cfg := stdio(t, "up")
	cfg.Levels = map[string]tool.Level{"nuk*": 1, "n*": 2}
	u, err := mcpclient.Connect(context.Background(), cfg, mcpclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	tools := u.Tools()
	if len(tools) != 9 {
		t.Fatalf("%d tools, want 9 (all pages)", len(tools))
	}
	for _, tc := range []struct {
		name  string
		level tool.Level
		ann   tool.Annotations
	}{
		{"up__echo", tool.LevelRead, tool.Annotations{ReadOnly: true, OpenWorld: true}},
		{"up__write_stuff", tool.LevelMedium, tool.Annotations{OpenWorld: true}},              // sanitised name; destructive false → 2
		{"up__missing", tool.LevelHigh, tool.Annotations{Destructive: true, OpenWorld: true}}, // MCP defaults → 3
		{"up__nuke", tool.LevelMedium, tool.Annotations{Destructive: true, OpenWorld: true}},  // two globs: the highest (2) wins
	} {
		def := find(t, tools, tc.name).Definition()
		if def.Level != tc.level || def.Annotations != tc.ann {
			t.Errorf("%s: level %d %+v, want %d %+v", tc.name, def.Level, def.Annotations, tc.level, tc.ann)
		}
		if !def.HasTag("mcp") || !def.HasTag("mcp:up") {
			t.Errorf("%s: tags %v", tc.name, def.Tags)
		}
	}
	echo := find(t, tools, "up__echo").Definition()
	if echo.Title != "Echo" || !bytes.Contains(echo.OutputSchema, []byte(`"echo"`)) {
		t.Errorf("echo: title %q, output schema %s", echo.Title, echo.OutputSchema)
	}

	// Only the tools named by globs.
	cfg = stdio(t, "few")
	cfg.Tools = []string{"ec*", "missing"}
	cfg.NoPrefix = true
	u2, err := mcpclient.Connect(context.Background(), cfg, mcpclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer u2.Close()
	var names []string
	for _, tl := range u2.Tools() {
		names = append(names, tl.Definition().Name)
	}
	if strings.Join(names, ",") != "echo,missing" {
		t.Errorf("tools %v, want echo,missing", names)
	}
}

func TestResults(t *testing.T) {
	u, err := mcpclient.Connect(context.Background(), stdio(t, "up"), mcpclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	tools := u.Tools()
	res := run(t, find(t, tools, "up__echo"), `{"text":"hi"}`)
	if res.Error != nil || res.Content[0].Text != "hi" || res.Content[1].Type != "image" || !strings.Contains(res.Content[2].Text, "test://x") {
		t.Errorf("echo: %+v", res)
	}
	if m, _ := res.Structured.(map[string]any); m["echo"] != "hi" {
		t.Errorf("structured %v", res.Structured)
	}
	res = run(t, find(t, tools, "up__missing"), `{}`)
	if res.Error == nil || res.Error.Type != tool.NotFound || !strings.Contains(res.Error.Message, "ENOENT") {
		t.Errorf("isError result: %+v", res.Error)
	}
	res = run(t, find(t, tools, "up__slow"), `{}`)
	if res.Error == nil || res.Error.Type != tool.Timeout || !res.Error.Retryable {
		t.Errorf("slow call past the timeout: %+v", res.Error)
	}
}

// TestTimeoutThroughEngine: run by the engine as the gateway runs it (its
// timeout the upstream's + 5 s), inline or on a worker, a call past the
// upstream's timeout ends at that timeout with the upstream's own error.
func TestTimeoutThroughEngine(t *testing.T) {
	u, err := mcpclient.Connect(context.Background(), stdio(t, "up"), mcpclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	reg := registry.New()
	if err := reg.Register(find(t, u.Tools(), "up__slow")); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte("allow: [up__slow]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, inline := range []bool{true, false} {
		e := engine.New(engine.Options{Registry: reg, Policy: pol, Inline: inline, Timeout: 2*time.Second + 5*time.Second})
		res := e.Execute(context.Background(), tool.Call{Name: "up__slow", Args: json.RawMessage(`{}`)})
		if res.Error == nil || res.Error.Type != tool.Timeout || res.Error.Message != "upstream up did not answer slow within 2s" {
			t.Errorf("inline %v: %+v", inline, res.Error)
		}
	}
}

// TestLookaheadSchema: a schema with an ECMAScript-only pattern is served
// sanitised (the engine can compile it) and the call still works.
func TestLookaheadSchema(t *testing.T) {
	u, err := mcpclient.Connect(context.Background(), stdio(t, "up"), mcpclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	tl := find(t, u.Tools(), "up__lookahead")
	def := tl.Definition()
	if bytes.Contains(def.InputSchema, []byte("(?!")) || !bytes.Contains(def.InputSchema, []byte(`"minimum"`)) || !strings.Contains(def.Description, "dropped at #/properties/pattern/pattern") {
		t.Errorf("schema %s, description %q", def.InputSchema, def.Description)
	}
	if res := run(t, tl, `{"n":2,"pattern":"abc"}`); res.Error != nil || !strings.Contains(res.Text(), `"n":2`) {
		t.Errorf("call: %+v", res)
	}
}

func TestSanitizeSchema(t *testing.T) {
	for _, tc := range []struct{ in, want, note string }{
		{`{"type":"object","properties":{"a":{"type":"string","pattern":"^a+$"}}}`, `{"type":"object","properties":{"a":{"type":"string","pattern":"^a+$"}}}`, ""},
		{`{"properties":{"pattern":{"type":"string"}}}`, `{"properties":{"pattern":{"type":"string"}},"type":"object"}`, "added"},
		{`{"type":"object","patternProperties":{"^(?=x)":{"type":"string"}},"additionalProperties":false}`, `{"patternProperties":{},"type":"object"}`, "patternProperties"},
		{`{"type":"object","anyOf":[{"properties":{"x":{"items":{"pattern":"\\k<n>"}}}}]}`, `{"anyOf":[{"properties":{"x":{"items":{}}}}],"type":"object"}`, "#/anyOf/0/properties/x/items/pattern"},
		{`{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, `{"type":"object"}`, "replaced"},
		{`[1,2]`, `{"type":"object"}`, "not a JSON object"},
		{`{"type":"string"}`, `{"type":"object"}`, "replaced"},
	} {
		got, note := mcpclient.SanitizeSchema(json.RawMessage(tc.in))
		if string(got) != tc.want || !strings.Contains(note, tc.note) || (tc.note == "") != (note == "") {
			t.Errorf("SanitizeSchema(%s) = %s, %q; want %s, a note with %q", tc.in, got, note, tc.want, tc.note)
		}
	}
}

// TestReconnect: an upstream that crashes fails the call in flight as
// unavailable, and the next call starts it again.
func TestReconnect(t *testing.T) {
	u, err := mcpclient.Connect(context.Background(), stdio(t, "up"), mcpclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	tools := u.Tools()
	res := run(t, find(t, tools, "up__crash"), `{}`)
	if res.Error == nil || res.Error.Type != tool.Unavailable || !res.Error.Retryable {
		t.Fatalf("call that crashed the upstream: %+v", res.Error)
	}
	// Wait until the client has noticed the end of the process.
	deadline := time.Now().Add(10 * time.Second)
	for u.InitializeResult() != nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if res := run(t, find(t, tools, "up__echo"), `{"text":"back"}`); res.Error != nil || res.Content[0].Text != "back" {
		t.Fatalf("call after the crash: %+v", res)
	}
}

// TestReconnectBackoff: while the upstream cannot be started, calls fail at
// once as unavailable with a time to wait.
func TestReconnectBackoff(t *testing.T) {
	dir := t.TempDir()
	exe, _ := os.Executable()
	link := dir + "/server"
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	cfg := stdio(t, "up")
	cfg.Command = link
	u, err := mcpclient.Connect(context.Background(), cfg, mcpclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	tools := u.Tools()
	os.Remove(link) // the upstream can no longer start
	run(t, find(t, tools, "up__crash"), `{}`)
	for u.InitializeResult() != nil {
		time.Sleep(10 * time.Millisecond)
	}
	first := run(t, find(t, tools, "up__echo"), `{}`)
	second := run(t, find(t, tools, "up__echo"), `{}`)
	for _, r := range []tool.Result{first, second} {
		if r.Error == nil || r.Error.Type != tool.Unavailable || !r.Error.Retryable {
			t.Fatalf("call while the upstream cannot start: %+v", r.Error)
		}
	}
	if second.Error.RetryAfter <= 0 {
		t.Errorf("second call during the backoff: retry after %v, want > 0", second.Error.RetryAfter)
	}
}

// recorder is a Peer that records what it is sent.
type recorder struct {
	mu   sync.Mutex
	logs []string
}

func (r *recorder) Log(_ context.Context, p *mcp.LoggingMessageParams) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprint(p.Data))
	return nil
}
func (r *recorder) Elicit(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return nil, errors.New("no")
}
func (r *recorder) CreateMessage(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return nil, errors.New("no")
}

type peerKey struct{}

// TestPassThrough: progress and log messages of a call reach the call's
// progress function and client, before the call returns; over stdio and
// over streamable HTTP.
func TestPassThrough(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := testServer()
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	go hs.Serve(ln)
	defer hs.Close()

	for _, cfg := range []mcpclient.Config{stdio(t, "up"), {Name: "web", URL: "http://" + ln.Addr().String() + "/mcp"}} {
		t.Run(cfg.Name, func(t *testing.T) {
			u, err := mcpclient.Connect(context.Background(), cfg, mcpclient.Options{
				PeerFromContext: func(ctx context.Context) mcpclient.Peer {
					p, _ := ctx.Value(peerKey{}).(*recorder)
					if p == nil {
						return nil
					}
					return p
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer u.Close()
			for range 20 {
				peer := &recorder{}
				var steps []float64
				ctx := context.WithValue(context.Background(), peerKey{}, peer)
				ctx = tool.WithProgress(ctx, func(done, total float64, _ string) { steps = append(steps, done) })
				tl := find(t, u.Tools(), cfg.Name+"__chatty")
				res, err := tl.Run(ctx, tool.Call{Args: json.RawMessage(`{}`)})
				if err != nil || res.Error != nil {
					t.Fatal(err, res.Error)
				}
				peer.mu.Lock()
				logs := strings.Join(peer.logs, ",")
				peer.mu.Unlock()
				if fmt.Sprint(steps) != "[1 2 3]" || logs != "step 1,step 2,step 3" {
					t.Fatalf("progress %v, logs %q; want all three of each before the call returned", steps, logs)
				}
			}
		})
	}
}

// TestGateway: tools in a registry, followed on list_changed; prompts and
// resources on a server; name collisions refused.
func TestGateway(t *testing.T) {
	reg := registry.New()
	ctx := context.Background()
	gw, err := mcpclient.NewGateway(ctx, reg, mcpclient.Options{}, stdio(t, "a"), stdio(t, "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	if _, ok := reg.Lookup("a__echo"); !ok {
		t.Fatalf("a__echo not registered: %v", reg.Names())
	}
	if _, ok := reg.Lookup("b__echo"); !ok {
		t.Fatalf("b__echo not registered: %v", reg.Names())
	}
	changed := make(chan registry.Event, 10)
	reg.Subscribe(func(e registry.Event) { changed <- e })
	grow, _ := reg.Lookup("a__grow")
	run(t, grow, `{}`)
	select {
	case e := <-changed:
		if e.Kind != registry.Added || e.Names[0] != "a__grown" {
			t.Errorf("event %+v, want a__grown added", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no registry change after the upstream's tools/list_changed")
	}

	// Prompts and resources on a served go-sdk server.
	srv := mcp.NewServer(&mcp.Implementation{Name: "gw"}, gw.ServerOptions())
	gw.Mount(srv)
	ct, st := mcp.NewInMemoryTransports()
	go srv.Run(ctx, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "b__greet", Arguments: map[string]string{"who": "you"}})
	if err != nil || p.Messages[0].Content.(*mcp.TextContent).Text != "hello you" {
		t.Fatalf("prompt through the gateway: %v %+v", err, p)
	}
	r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static"})
	if err != nil || r.Contents[0].Text != "static text" {
		t.Fatalf("resource through the gateway: %v %+v", err, r)
	}

	// Two upstreams whose tools end up with one name.
	a, b := stdio(t, "x"), stdio(t, "y")
	a.NoPrefix, b.NoPrefix = true, true
	if _, err := mcpclient.NewGateway(ctx, registry.New(), mcpclient.Options{}, a, b); err == nil || !strings.Contains(err.Error(), "upstream x and upstream y both give a tool named echo") {
		t.Errorf("colliding names: %v, want an error naming both upstreams", err)
	}
}

// TestGatewayStartsSideBySide: the upstreams start at once (each of these
// answers only once all three have started, so starting them one after
// the other never ends: the first would time out), their tools are
// registered in the configuration's order, and when some cannot start the
// error names each of them and nothing is left running.
func TestGatewayStartsSideBySide(t *testing.T) {
	dir := t.TempDir()
	var cfgs []mcpclient.Config
	for _, name := range []string{"c", "a", "b"} {
		c := stdio(t, name)
		c.Timeout = 20 * time.Second
		c.Env[barrierEnv] = dir + " 3"
		cfgs = append(cfgs, c)
	}
	reg := registry.New()
	gw, err := mcpclient.NewGateway(context.Background(), reg, mcpclient.Options{}, cfgs...)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range gw.Upstreams() {
		names = append(names, u.Name())
	}
	gw.Close()
	if strings.Join(names, " ") != "c a b" {
		t.Errorf("upstreams %v, want the configuration's order c a b", names)
	}

	broken := func(name string) mcpclient.Config {
		return mcpclient.Config{Name: name, Command: "sh", Args: []string{"-c", "exit 3"}}
	}
	before := children(t)
	_, err = mcpclient.NewGateway(context.Background(), registry.New(), mcpclient.Options{}, broken("x"), stdio(t, "ok"), broken("y"))
	// The first to fail stops the others' starts: the other may be cut
	// short (not reported) or have failed by itself first (reported).
	if err == nil || !strings.Contains(err.Error(), "connecting to x") && !strings.Contains(err.Error(), "connecting to y") {
		t.Errorf("two upstreams that cannot start: %v, want an error naming one", err)
	}
	if left := children(t) - before; left > 0 {
		t.Errorf("%d processes left running after the gateway failed to start", left)
	}
}

// TestGatewayStartFailureStopsOthers: when an upstream cannot start, the
// starts under way are cut short, not waited for to their end (a first
// npx start can take minutes): the gateway reports the one that failed,
// not the one it stopped, and leaves no process running.
func TestGatewayStartFailureStopsOthers(t *testing.T) {
	slow := mcpclient.Config{Name: "slow", Command: "sh", Args: []string{"-c", "exec sleep 600"}, Timeout: 3 * time.Minute}
	broken := mcpclient.Config{Name: "broken", Command: "sh", Args: []string{"-c", "exit 3"}}
	before := children(t)
	_, err := mcpclient.NewGateway(context.Background(), registry.New(), mcpclient.Options{}, slow, broken)
	if err == nil || !strings.Contains(err.Error(), "connecting to broken") || strings.Contains(err.Error(), "slow") {
		t.Errorf("one upstream that cannot start, one slow: %v, want an error naming the first alone", err)
	}
	if left := children(t) - before; left > 0 {
		t.Errorf("%d processes left running after the gateway failed to start", left)
	}
}

// children counts this process's live child processes.
func children(t *testing.T) int {
	t.Helper()
	var n int
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		n += len(strings.Fields(string(b)))
	}
	return n
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  mcpclient.Config
		want string
	}{
		{mcpclient.Config{Command: "x"}, "needs a name"},
		{mcpclient.Config{Name: "a b", Command: "x"}, "upstream name"},
		{mcpclient.Config{Name: "a"}, "give a command"},
		{mcpclient.Config{Name: "a", Command: "x", URL: "http://h/mcp"}, "not both"},
		{mcpclient.Config{Name: "a", URL: "file:///etc/passwd"}, "not an http(s) URL"},
		{mcpclient.Config{Name: "a", URL: "http://h/mcp", Args: []string{"x"}}, "need a command"},
		{mcpclient.Config{Name: "a", Command: "x", Levels: map[string]tool.Level{"[": 1}}, "not a valid pattern"},
		{mcpclient.Config{Name: "a", Command: "x", Levels: map[string]tool.Level{"*": 9}}, "want 0-3"},
	} {
		if err := tc.cfg.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if got := mcpclient.Sanitize("a b/ç" + strings.Repeat("x", 200)); len(got) != 128 || !strings.HasPrefix(got, "a_b___") {
		t.Errorf("Sanitize: %q", got)
	}
}
