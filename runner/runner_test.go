package runner

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// TestManage: PUT makes a sandbox once, its MCP path answers only once it
// exists, GET /sandboxes lists it under ListID's token alone, DELETE
// closes it and removes its workspace, twice without error.
func TestManage(t *testing.T) {
	secret := []byte("runner-test-secret-0123")
	dir := t.TempDir()
	closed := map[string]int{}
	r, err := New(Options{Dir: dir, Secret: secret, Open: func(id, ws string) (Sandbox, error) {
		return Sandbox{MCP: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "sandbox "+id) }),
			Close: func() error { closed[id]++; return nil }}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	do := func(method, path, id string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		if id != "" {
			req.Header.Set("Authorization", "Bearer "+Token(secret, id))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := do("POST", "/sandboxes/sb-a/mcp", "sb-a"); code != 404 || !strings.Contains(body, "PUT /sandboxes/sb-a") {
		t.Errorf("MCP before PUT: %d %s", code, body)
	}
	if code, body := do("PUT", "/sandboxes/sb-a", "sb-a"); code != 201 || !strings.Contains(body, `"created":true`) {
		t.Errorf("first PUT: %d %s", code, body)
	}
	if code, body := do("PUT", "/sandboxes/sb-a", "sb-a"); code != 200 || !strings.Contains(body, `"created":false`) {
		t.Errorf("second PUT: %d %s", code, body)
	}
	if code, _ := do("PUT", "/sandboxes/sb-a", "sb-b"); code != 401 {
		t.Errorf("PUT with another sandbox's token: %d", code)
	}
	if code, body := do("POST", "/sandboxes/sb-a/mcp", "sb-a"); code != 200 || body != "sandbox sb-a" {
		t.Errorf("MCP after PUT: %d %s", code, body)
	}
	for _, id := range []string{"", "sb-a"} {
		if code, _ := do("GET", "/sandboxes", id); code != 401 {
			t.Errorf("GET /sandboxes with the token of %q: %d, want 401", id, code)
		}
	}
	code, body := do("GET", "/sandboxes", ListID)
	var list struct{ Sandboxes []string }
	json.Unmarshal([]byte(body), &list)
	if code != 200 || len(list.Sandboxes) != 1 || list.Sandboxes[0] != "sb-a" {
		t.Errorf("GET /sandboxes: %d %s", code, body)
	}
	if code, _ := do("POST", "/sandboxes/sb-a", "sb-a"); code != 405 {
		t.Errorf("POST /sandboxes/sb-a: %d, want 405", code)
	}
	os.WriteFile(filepath.Join(dir, "sb-a", "f"), []byte("x"), 0o600)
	for range 2 {
		if code, _ := do("DELETE", "/sandboxes/sb-a", "sb-a"); code != 204 {
			t.Errorf("DELETE: %d", code)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sb-a")); !os.IsNotExist(err) || closed["sb-a"] != 1 {
		t.Errorf("after DELETE: %v, closed %d times", err, closed["sb-a"])
	}
	if code, _ := do("POST", "/sandboxes/sb-a/mcp", "sb-a"); code != 404 {
		t.Errorf("MCP after DELETE: %d, want 404", code)
	}
}

// TestCall: POST /sandboxes/{id}/call runs one call in an existing
// sandbox, under that sandbox's token alone: its progress comes as lines
// before its result, an approved call is run approved, a caller that goes
// away cancels it, and a body over MaxCallBytes or not a call is refused;
// through net/http (Handler) and through Serve (its lean path, and what it
// hands to net/http).
func TestCall(t *testing.T) {
	t.Run("Handler", func(t *testing.T) {
		testCall(t, func(r *Runner) string {
			srv := httptest.NewServer(r.Handler())
			t.Cleanup(srv.Close)
			return srv.URL
		})
	})
	t.Run("Serve", func(t *testing.T) {
		testCall(t, func(r *Runner) string { return "http://" + serve(t, r) })
	})
}

// serve serves r with Serve on a loopback port until the test ends and
// returns its address.
func serve(t *testing.T, r *Runner) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func testCall(t *testing.T, serve func(*Runner) string) {
	secret := []byte("runner-test-secret-0123")
	started, cancelled := make(chan struct{}), make(chan struct{})
	r, err := New(Options{Dir: t.TempDir(), Secret: secret, Open: func(id, ws string) (Sandbox, error) {
		return Sandbox{MCP: http.NotFoundHandler(), Close: func() error { return nil },
			Call: func(ctx context.Context, name string, args json.RawMessage) tool.Result {
				if name == "block" {
					close(started)
					<-ctx.Done()
					close(cancelled)
					return tool.ErrorResult(tool.AsError(ctx.Err()))
				}
				if name == "unencodable" { // a NaN, with the events it carries
					res := tool.TextResult("x")
					res.Structured = math.NaN()
					res.SetMeta(MetaProcessEvents, ProcessEvents{Epoch: "e1", Events: []ProcessEvent{{Seq: 1, Kind: "start", ID: "p1", Command: "make"}}})
					return res
				}
				tool.ReportProgress(ctx, 1, 2, "half")
				res := tool.TextResult(id + " " + name + " " + string(args))
				res.SetMeta("approved", tool.Approved(ctx))
				return res
			}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	url := serve(r)
	do := func(ctx context.Context, method, id, tokenOf, body string, header ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, url+"/sandboxes/"+id+"/call", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+Token(secret, tokenOf))
		req.Header.Set(VersionHeader, CallVersion)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == 200 && (resp.Header.Get(VersionHeader) != CallVersion || resp.Header.Get("Content-Type") != CallContentType) {
			t.Errorf("an answer of %s %q, %s %q", VersionHeader, resp.Header.Get(VersionHeader), "Content-Type", resp.Header.Get("Content-Type"))
		}
		return resp.StatusCode, string(b)
	}
	ctx := context.Background()
	call := `{"name":"echo","arguments":{"x":1}}`
	if code, body := do(ctx, "POST", "sb-a", "sb-a", call); code != 404 || !strings.Contains(body, "PUT /sandboxes/sb-a") {
		t.Errorf("a call before PUT: %d %s", code, body)
	}
	if _, err := r.Ensure("sb-a"); err != nil {
		t.Fatal(err)
	}
	if code, _ := do(ctx, "POST", "sb-a", "sb-b", call); code != 401 {
		t.Errorf("a call with another sandbox's token: %d, want 401", code)
	}
	code, body := do(ctx, "POST", "sb-a", "sb-a", call)
	lines := strings.Split(strings.TrimSpace(body), "\n")
	var progress, result Answer
	if code != 200 || len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &progress) != nil || json.Unmarshal([]byte(lines[1]), &result) != nil {
		t.Fatalf("a call: %d %q", code, body)
	}
	if p := progress.Progress; p == nil || p.Done != 1 || p.Total != 2 || p.Message != "half" || progress.Result != nil {
		t.Errorf("its first line is not its progress: %s", lines[0])
	}
	if res := result.Result; res == nil || res.Tool().Text() != `sb-a echo {"x":1}` || res.Meta["approved"] != false || result.Progress != nil {
		t.Errorf("its last line is not its result: %s", lines[1])
	}
	if _, body := do(ctx, "POST", "sb-a", "sb-a", call, ApprovedHeader, "1"); !strings.Contains(body, `"approved":true`) {
		t.Errorf("an approved call: %s", body)
	}
	// A call of another version of the format (a gateway of another
	// release) is refused before it runs, saying what to do.
	for _, v := range []string{"", "1", "3"} {
		if code, body := do(ctx, "POST", "sb-a", "sb-a", call, VersionHeader, v); code != 400 || !strings.Contains(body, "same release") || strings.Contains(body, "sb-a echo") {
			t.Errorf("a call of version %q: %d %s, want 400 saying to run the same release", v, code, body)
		}
	}
	// A result that cannot be encoded is an internal error that keeps its
	// process events.
	code, body = do(ctx, "POST", "sb-a", "sb-a", `{"name":"unencodable"}`)
	var bad Answer
	if code != 200 || json.Unmarshal([]byte(body), &bad) != nil || bad.Result == nil || bad.Result.Error == nil || bad.Result.Error.Type != tool.Internal {
		t.Fatalf("an unencodable result: %d %s", code, body)
	}
	if !strings.Contains(body, `"toolgate/process_events":{"epoch":"e1","events":[{"seq":1,"kind":"start","id":"p1","command":"make"}]}`) {
		t.Errorf("an unencodable result's process events are lost: %s", body)
	}
	for _, c := range []struct {
		method, body string
		want         int
	}{
		{"GET", "", 405},
		{"POST", `{"arguments":{}}`, 400},
		{"POST", `not json`, 400},
		{"POST", `{"name":"echo","arguments":"` + strings.Repeat("x", MaxCallBytes) + `"}`, 413},
	} {
		if code, body := do(ctx, c.method, "sb-a", "sb-a", c.body); code != c.want {
			t.Errorf("%s %.40s: %d %s, want %d", c.method, c.body, code, body, c.want)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(cctx, "POST", url+"/sandboxes/sb-a/call", strings.NewReader(`{"name":"block"}`))
	req.Header.Set("Authorization", "Bearer "+Token(secret, "sb-a"))
	req.Header.Set(VersionHeader, CallVersion)
	go http.DefaultClient.Do(req)
	<-started
	cancel()
	<-cancelled // the call's context ended with its request
}

// TestResultRoundTrip: a result crosses a call's answer whole: every kind
// of block, a structured value, metadata and an error.
func TestResultRoundTrip(t *testing.T) {
	for _, r := range []tool.Result{
		{Content: []tool.Content{tool.TextContent("a"), tool.TextContent(""), tool.ImageContent([]byte{0, 1, 2}, "image/png"),
			{Type: "resource", URI: "file:///x", MIMEType: "text/plain", Text: "x"}}, Structured: map[string]any{"n": 1.5, "s": []any{"a", true, nil}},
			Meta: map[string]any{"total_lines": 3.0}},
		tool.ErrorResult(tool.Errorf(tool.NotFound, "no x").WithSuggestion("look").WithDetail("path", "x").WithRetry(2 * time.Second)),
	} {
		b, err := json.Marshal(Answer{Result: NewResult(r)})
		if err != nil {
			t.Fatal(err)
		}
		var a Answer
		if err := json.Unmarshal(b, &a); err != nil || a.Result == nil {
			t.Fatalf("%s: %v", b, err)
		}
		if got := a.Result.Tool(); !reflect.DeepEqual(got, r) {
			t.Errorf("%s\n got %#v\nwant %#v", b, got, r)
		}
	}
}
