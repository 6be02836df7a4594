package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/toolsets/fs"
)

// wait bounds every wait on the server; generous, since the machine may be loaded.
const wait = 60 * time.Second

type echoIn struct {
	Text string `json:"text" jsonschema:"what to echo"`
}
type echoOut struct {
	Echo   string `json:"echo"`
	Length int    `json:"length"`
}

// fixture is a server over real file tools in a temporary root, with a real
// audit log.
type fixture struct {
	root     string
	reg      *registry.Registry
	srv      *mcpserver.Server
	auditLog string
	started  chan struct{}
	stopped  chan error
	rootsNew chan struct{} // the server took note of notifications/roots/list_changed
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{root: t.TempDir(), started: make(chan struct{}, 1), stopped: make(chan error, 1), rootsNew: make(chan struct{}, 10)}
	if err := os.MkdirAll(filepath.Join(f.root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"a.txt": "hello\nworld\n", "sub/b.txt": "inside sub\n"} {
		if err := os.WriteFile(filepath.Join(f.root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	roots, err := fs.OpenRoots(f.root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { roots.Close() })
	fsTools, err := fs.Tools(roots, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.reg = registry.New()
	if err := f.reg.Register(fsTools...); err != nil {
		t.Fatal(err)
	}
	err = f.reg.Register(
		tool.New("echo", "Echo the text back.", func(_ context.Context, in echoIn) (echoOut, error) {
			return echoOut{Echo: in.Text, Length: len(in.Text)}, nil
		}, tool.WithTitle("Echo"), tool.ReadOnly()),
		tool.Func(tool.Definition{Name: "fail", Description: "Always fails.", Annotations: tool.Annotations{Destructive: true, OpenWorld: true}},
			func(context.Context, tool.Call) (tool.Result, error) {
				return tool.Result{}, tool.Errorf(tool.NotFound, "the widget is gone").WithSuggestion("make a new widget")
			}),
		tool.Func(tool.Definition{Name: "progress", Description: "Reports progress and logs."},
			func(ctx context.Context, _ tool.Call) (tool.Result, error) {
				for _, p := range []float64{1, 1, 2, 0.5, 3} {
					tool.ReportProgress(ctx, p, 3, "step")
				}
				tool.Logger(ctx).InfoContext(ctx, "progress done")
				return tool.TextResult("done"), nil
			}),
		tool.Func(tool.Definition{Name: "block", Description: "Blocks until cancelled."},
			func(ctx context.Context, _ tool.Call) (tool.Result, error) {
				f.started <- struct{}{}
				<-ctx.Done()
				f.stopped <- ctx.Err()
				return tool.Result{}, ctx.Err()
			}),
	)
	if err != nil {
		t.Fatal(err)
	}
	f.auditLog = filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(f.auditLog, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	eng := engine.New(engine.Options{Registry: f.reg, Auditor: log, Limiter: mcpserver.ClientRoots(nil, mcpserver.Opaque(mcpserver.DefaultPaths, "apply_patch"))})
	f.srv, err = mcpserver.New(mcpserver.Options{Engine: eng, Roots: []string{f.root}, MCP: &mcp.ServerOptions{
		RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) { f.rootsNew <- struct{}{} },
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.srv.Close() })
	return f
}

// connect starts a session between a go-sdk client and the server on
// protocol 2025-11-25, what today's clients (Claude, Cursor, VS Code, the
// TypeScript SDK) speak.
func (f *fixture) connect(t *testing.T, c *mcp.Client) *mcp.ClientSession {
	t.Helper()
	return f.connectVersion(t, c, "2025-11-25")
}

func (f *fixture) connectVersion(t *testing.T, c *mcp.Client, version string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := f.srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func client(name string, o *mcp.ClientOptions) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0"}, o)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

func (f *fixture) records(t *testing.T) []audit.Record {
	t.Helper()
	file, err := os.Open(f.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	recs, err := audit.Select(file, audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestToolsListed(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, client("lister", nil))
	res, err := cs.ListTools(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		byName[tl.Name] = tl
	}
	for _, n := range []string{"read_file", "list_directory", "write_file", "echo", "fail", "progress", "block"} {
		if byName[n] == nil {
			t.Errorf("tools/list lacks %s", n)
		}
	}
	echo := byName["echo"]
	if echo == nil {
		t.FailNow()
	}
	if echo.Title != "Echo" || echo.Annotations == nil || !echo.Annotations.ReadOnlyHint || !echo.Annotations.IdempotentHint ||
		echo.Annotations.DestructiveHint == nil || *echo.Annotations.DestructiveHint {
		t.Errorf("echo's title/annotations = %q %+v", echo.Title, echo.Annotations)
	}
	in, _ := json.Marshal(echo.InputSchema)
	out, _ := json.Marshal(echo.OutputSchema)
	if !strings.Contains(string(in), `"text"`) || !strings.Contains(string(out), `"length"`) {
		t.Errorf("echo schemas: in %s out %s", in, out)
	}
	if fail := byName["fail"]; fail.Annotations.DestructiveHint == nil || !*fail.Annotations.DestructiveHint || !*fail.Annotations.OpenWorldHint {
		t.Errorf("fail's annotations = %+v", fail.Annotations)
	}
}

func TestCallResults(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, client("caller", nil))
	ctx := ctxT(t)

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "héllo"}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(res.StructuredContent)
	if res.IsError || string(got) != `{"echo":"héllo","length":6}` {
		t.Errorf("echo: isError=%v structured=%s", res.IsError, got)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail"})
	if err != nil {
		t.Fatalf("a tool error must not be a protocol error: %v", err)
	}
	var e struct {
		Type, Message, Suggestion string
	}
	raw, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(raw, &e)
	if !res.IsError || e.Type != "not_found" || e.Message != "the widget is gone" || e.Suggestion != "make a new widget" {
		t.Errorf("fail: isError=%v structured=%s", res.IsError, raw)
	}
	if len(res.Content) != 1 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "Error [not_found]: the widget is gone\nWhat to do: make a new widget") {
		t.Errorf("fail content = %+v", res.Content)
	}

	// Invalid arguments are the engine's structured error, not a crash.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": 42}})
	if err != nil || !res.IsError {
		t.Fatalf("echo with a number: err=%v isError=%v", err, res != nil && res.IsError)
	}
	raw, _ = json.Marshal(res.StructuredContent)
	if !strings.Contains(string(raw), `"invalid_arguments"`) {
		t.Errorf("echo with a number: %s", raw)
	}
}

func TestUnknownToolIsProtocolError(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, client("caller", nil))
	_, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "no_such_tool"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("unknown tool: err = %v, want a JSON-RPC invalid-params error", err)
	}
}

func TestAuditNamesClientAndSession(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, client("audited-client", nil))
	ctx := ctxT(t)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "/etc/passwd"}}); err != nil {
		t.Fatal(err)
	}
	recs := f.records(t)
	if len(recs) != 2 {
		t.Fatalf("%d audit records, want 2", len(recs))
	}
	for _, r := range recs {
		if r.Principal != "audited-client" || r.Session == "" || r.Session != recs[0].Session {
			t.Errorf("record principal=%q session=%q", r.Principal, r.Session)
		}
	}
	if recs[0].Outcome != "ok" || recs[1].Outcome != "denied" {
		t.Errorf("outcomes = %q, %q; want ok, denied", recs[0].Outcome, recs[1].Outcome)
	}
}

func TestProgressAndLogging(t *testing.T) {
	f := newFixture(t)
	progress := make(chan float64, 10)
	logs := make(chan *mcp.LoggingMessageParams, 10)
	cs := f.connect(t, client("watcher", &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress <- r.Params.Progress
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { logs <- r.Params },
	}))
	ctx := ctxT(t)
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	p := &mcp.CallToolParams{Name: "progress"}
	p.SetProgressToken("tok-1")
	res, err := cs.CallTool(ctx, p)
	if err != nil || res.IsError {
		t.Fatalf("progress: %v %+v", err, res)
	}
	var got []float64
	for len(got) < 3 {
		select {
		case v := <-progress:
			got = append(got, v)
		case <-ctx.Done():
			t.Fatalf("progress notifications: got %v, want [1 2 3]", got)
		}
	}
	if got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Errorf("progress = %v, want [1 2 3] (non-increasing values dropped)", got)
	}
	seen := map[string]bool{}
	for !seen["progress"] || !seen["toolgate"] {
		select {
		case m := <-logs:
			seen[m.Logger] = true
		case <-ctx.Done():
			t.Fatalf("log notifications from loggers %v, want progress and toolgate", seen)
		}
	}

	// Without a token, no progress notification is sent.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "progress"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-progress:
		t.Errorf("progress %v sent without a progress token", v)
	default:
	}
}

func TestCancellationCancelsTheCall(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, client("canceller", nil))
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block"})
		done <- err
	}()
	select {
	case <-f.started:
	case <-time.After(wait):
		t.Fatal("the tool did not start")
	}
	cancel()
	select {
	case err := <-f.stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the tool's context ended with %v, want context.Canceled", err)
		}
	case <-time.After(wait):
		t.Fatal("client cancellation did not cancel the tool's context")
	}
	if err := <-done; err == nil {
		t.Error("a cancelled call returned no error to the client")
	}
}

func TestToolListChanged(t *testing.T) {
	f := newFixture(t)
	changed := make(chan struct{}, 10)
	cs := f.connect(t, client("follower", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}))
	ctx := ctxT(t)
	names := func() map[string]bool {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, tl := range res.Tools {
			m[tl.Name] = true
		}
		return m
	}
	if err := f.reg.Register(tool.Func(tool.Definition{Name: "newcomer", Description: "new"}, nil)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed after Register")
	}
	if !names()["newcomer"] {
		t.Error("newcomer not listed after Register")
	}
	if err := f.reg.Disable("echo"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed after Disable")
	}
	if names()["echo"] {
		t.Error("a disabled tool is still listed")
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err == nil {
		t.Error("a disabled tool is still callable")
	}
}

func TestResources(t *testing.T) {
	f := newFixture(t)
	big := strings.Repeat("0123456789\n", 4500) // three read_file windows
	var wide strings.Builder                    // windows the output budget cuts mid-line
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&wide, "%04d %s\n", i, strings.Repeat("é", 60))
	}
	for name, content := range map[string]string{"big.txt": big, "wide.txt": wide.String()} {
		if err := os.WriteFile(filepath.Join(f.root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cs := f.connect(t, client("reader", nil))
	ctx := ctxT(t)
	list, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(f.root)
	if len(list.Resources) != 1 || list.Resources[0].MIMEType != "inode/directory" || !strings.HasSuffix(list.Resources[0].URI, filepath.ToSlash(f.root)) {
		t.Fatalf("resources = %+v", list.Resources)
	}
	tpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tpl.ResourceTemplates) != 1 || tpl.ResourceTemplates[0].URITemplate != "file:///{+path}" {
		t.Fatalf("templates = %+v, %v", tpl, err)
	}

	dir, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: list.Resources[0].URI})
	if err != nil || !strings.Contains(dir.Contents[0].Text, "a.txt") || !strings.Contains(dir.Contents[0].Text, "sub/") {
		t.Fatalf("reading the root: %v %+v", err, dir)
	}
	for name, want := range map[string]string{"a.txt": "hello\nworld\n", "big.txt": big, "wide.txt": wide.String()} {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file://" + filepath.ToSlash(filepath.Join(real, name))})
		if err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		if got := res.Contents[0].Text; got != want {
			t.Errorf("%s: got %d bytes, want %d", name, len(got), len(want))
		}
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///etc/hostname"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || !strings.Contains(je.Message, "permission_denied") {
		t.Errorf("reading outside the roots: %v, want a permission_denied error", err)
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file://" + filepath.ToSlash(filepath.Join(real, "missing.txt"))})
	if !errors.As(err, &je) || je.Code != mcp.CodeResourceNotFound {
		t.Errorf("reading a missing file: %v, want resource not found", err)
	}
	// Every read went through the engine: audited as read_file / list_directory calls.
	counts := map[string]int{}
	for _, r := range f.records(t) {
		counts[r.Tool+":"+r.Outcome]++
	}
	if counts["list_directory:ok"] != 1 || counts["read_file:ok"] < 7 || counts["read_file:denied"] != 1 {
		t.Errorf("audit records by tool:outcome = %v", counts)
	}
}

func TestClientRootsNarrow(t *testing.T) {
	f := newFixture(t)
	real, _ := filepath.EvalSymlinks(f.root)
	c := client("rooted", nil)
	c.AddRoots(&mcp.Root{URI: "file://" + filepath.ToSlash(filepath.Join(real, "sub"))})
	cs := f.connect(t, c)
	ctx := ctxT(t)
	call := func(path string) (bool, string) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": path}})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		return res.IsError, string(raw)
	}
	if isErr, raw := call("a.txt"); !isErr || !strings.Contains(raw, "permission_denied") || !strings.Contains(raw, "roots") {
		t.Errorf("a.txt outside the client's root: isError=%v %s", isErr, raw)
	}
	if isErr, raw := call("sub/b.txt"); isErr {
		t.Errorf("sub/b.txt inside the client's root: %s", raw)
	}
	if isErr, _ := call("sub/../a.txt"); !isErr {
		t.Error("sub/../a.txt escapes the client's root but was allowed")
	}
	// apply_patch names its paths inside the patch: refused while narrowed.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "apply_patch", Arguments: map[string]any{"patch": "*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch"}})
	if err != nil || !res.IsError {
		t.Errorf("apply_patch while narrowed: err=%v isError=%v", err, res != nil && res.IsError)
	}
	if _, err := os.Stat(filepath.Join(f.root, "x.txt")); err == nil {
		t.Error("apply_patch wrote a file while narrowed")
	}
	// Widening the client's roots to the whole root is followed…
	c.AddRoots(&mcp.Root{URI: "file://" + filepath.ToSlash(real)})
	f.awaitRoots(t)
	if isErr, raw := call("a.txt"); isErr {
		t.Errorf("after roots/list_changed a.txt is still refused: %s", raw)
	}
	// …but a client root above the server root never widens beyond it.
	c.AddRoots(&mcp.Root{URI: "file:///"})
	f.awaitRoots(t)
	if isErr, _ := call("/etc/passwd"); !isErr {
		t.Error("a client root of / widened the server's roots")
	}
	// Denials are audited like any call.
	denied := 0
	for _, r := range f.records(t) {
		if r.Outcome == "denied" && r.ErrorType == "permission_denied" {
			denied++
		}
	}
	if denied < 4 {
		t.Errorf("%d denied records, want at least 4", denied)
	}
}

func TestPrompts(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, client("prompter", nil))
	ctx := ctxT(t)
	list, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range list.Prompts {
		names[p.Name] = p.Description != ""
	}
	if !names["code_review"] || !names["explore_project"] {
		t.Fatalf("prompts = %v", names)
	}
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "code_review", Arguments: map[string]string{"language": "Go", "code": "func f() {}\n```\n"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Messages[0].Content.(*mcp.TextContent).Text
	if !strings.Contains(text, "func f() {}") || !strings.Contains(text, "````go") {
		t.Errorf("code_review text:\n%s", text)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "code_review", Arguments: map[string]string{"language": "Go"}}); err == nil {
		t.Error("code_review without code: no error")
	}
	res, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "explore_project", Arguments: map[string]string{"focus": "the tests"}})
	if err != nil || !strings.Contains(res.Messages[0].Content.(*mcp.TextContent).Text, "the tests") {
		t.Errorf("explore_project: %v %+v", err, res)
	}
}

func (f *fixture) awaitRoots(t *testing.T) {
	t.Helper()
	select {
	case <-f.rootsNew:
	case <-time.After(wait):
		t.Fatal("the server got no notifications/roots/list_changed")
	}
}

// On protocol 2026-07-28 the server may not ask for roots: calls work,
// confined to the server's roots only.
func TestNewProtocolSession(t *testing.T) {
	f := newFixture(t)
	c := client("modern", nil)
	c.AddRoots(&mcp.Root{URI: "file:///nonexistent"})
	cs := f.connectVersion(t, c, "")
	ctx := ctxT(t)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
	if err != nil || res.IsError {
		t.Fatalf("read_file on the new protocol: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "/etc/passwd"}})
	if err != nil || !res.IsError {
		t.Fatalf("read_file outside the roots on the new protocol: %v %+v", err, res)
	}
}

// TestCallLogLevels: the gateway's own log of a call (logger toolgate) is
// at info for a call that succeeded and at warning for one that failed, so
// a client at level warning gets the failures only. Notifications arrive
// in order: the failure's is the first after the level was set, unless
// the call before it (read_file, not called before in this session) was
// logged too.
func TestCallLogLevels(t *testing.T) {
	f := newFixture(t)
	logs := make(chan *mcp.LoggingMessageParams, 10)
	cs := f.connect(t, client("warned", &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			if r.Params.Logger == "toolgate" {
				logs <- r.Params
			}
		},
	}))
	ctx := ctxT(t)
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	// At info: the call that succeeds is logged (else the test below
	// proves nothing).
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "y"}}); err != nil {
		t.Fatal(err)
	}
	toolOf := func(m *mcp.LoggingMessageParams) string {
		data, _ := m.Data.(map[string]any)
		name, _ := data["tool"].(string)
		return name
	}
	select {
	case m := <-logs:
		if toolOf(m) != "echo" || m.Level != "info" {
			t.Fatalf("at level info, a call that succeeded logged %s at %q, want echo at info", toolOf(m), m.Level)
		}
	case <-ctx.Done():
		t.Fatal("at level info, a call that succeeded was not logged")
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}}); err != nil || res.IsError {
		t.Fatalf("read_file: %v %+v", err, res)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail"}); err != nil || !res.IsError {
		t.Fatalf("fail: %v %+v", err, res)
	}
	select {
	case m := <-logs:
		data, _ := m.Data.(map[string]any)
		if toolOf(m) != "fail" || m.Level != "warning" || data["outcome"] != "error" {
			t.Fatalf("at level warning, the first call logged is %s at %q (%v), want fail at warning: a call that succeeded is logged at info", toolOf(m), m.Level, m.Data)
		}
	case <-ctx.Done():
		t.Fatal("at level warning, a call that failed was not logged")
	}
}

// TestToolLoggers checks that tool.Logger's records reach the session that
// made the call, named for the tool that logged, with every tool and
// session apart, under concurrent calls (each session keeps one logger per
// tool).
func TestToolLoggers(t *testing.T) {
	f := newFixture(t)
	tools := []string{"say_a", "say_b", "say_c"}
	for _, name := range tools {
		err := f.reg.Register(tool.Func(tool.Definition{Name: name, Description: "Logs its argument.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, c tool.Call) (tool.Result, error) {
				tool.Logger(ctx).InfoContext(ctx, "said", "tool", name, "args", string(c.Args))
				return tool.TextResult("ok"), nil
			}))
		if err != nil {
			t.Fatal(err)
		}
	}
	const sessions, calls = 2, 12
	type note struct{ logger, data string }
	var notes [sessions]chan note
	var css [sessions]*mcp.ClientSession
	for i := range sessions {
		notes[i] = make(chan note, 4*calls)
		css[i] = f.connect(t, client(fmt.Sprintf("logger-%d", i), &mcp.ClientOptions{
			LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
				if r.Params.Logger != "toolgate" {
					data, _ := json.Marshal(r.Params.Data)
					notes[i] <- note{r.Params.Logger, string(data)}
				}
			},
		}))
		if err := css[i].SetLoggingLevel(ctxT(t), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, sessions*calls)
	for i := range sessions {
		for j := range calls {
			go func() {
				_, err := css[i].CallTool(ctxT(t), &mcp.CallToolParams{Name: tools[j%len(tools)], Arguments: map[string]any{"session": i, "n": j}})
				errs <- err
			}()
		}
	}
	for range sessions * calls {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ctx := ctxT(t)
	for i := range sessions {
		seen := map[int]bool{}
		for len(seen) < calls {
			select {
			case n := <-notes[i]:
				var rec struct {
					Tool, Args string
				}
				if err := json.Unmarshal([]byte(n.data), &rec); err != nil {
					t.Fatalf("session %d: log data %s: %v", i, n.data, err)
				}
				var args struct{ Session, N int }
				if err := json.Unmarshal([]byte(rec.Args), &args); err != nil {
					t.Fatalf("session %d: args %q: %v", i, rec.Args, err)
				}
				if args.Session != i || n.logger != rec.Tool || rec.Tool != tools[args.N%len(tools)] || seen[args.N] {
					t.Fatalf("session %d got the notification of logger %q: %s", i, n.logger, n.data)
				}
				seen[args.N] = true
			case <-ctx.Done():
				t.Fatalf("session %d: log notifications of calls %v, want all %d", i, seen, calls)
			}
		}
	}
}
