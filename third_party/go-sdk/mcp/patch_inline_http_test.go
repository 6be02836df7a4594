// Copyright 2025 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by an MIT-style
// license that can be found in the LICENSE file.

// PATCH(toolgate): patch 24's tests.

package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// inlineServer serves tools that answer at once, after progress
// notifications, after asking the client for its roots, with an error, after
// their context is cancelled, and with the number of roots/list_changed
// notifications handled so far and whether they run on a goroutine serving
// an HTTP connection; readerHandles makes it v1.8.0's path.
func inlineServer(t *testing.T, readerHandles bool, started chan<- struct{}) *httptest.Server {
	var changed atomic.Int64
	server := NewServer(testImpl, &ServerOptions{RootsListChangedHandler: func(context.Context, *RootsListChangedRequest) {
		changed.Add(1)
	}})
	type in struct {
		Text string `json:"text"`
	}
	AddTool(server, &Tool{Name: "plain"}, func(ctx context.Context, req *CallToolRequest, a in) (*CallToolResult, any, error) {
		return &CallToolResult{Content: []Content{&TextContent{Text: a.Text}}}, nil, nil
	})
	AddTool(server, &Tool{Name: "progress"}, func(ctx context.Context, req *CallToolRequest, a in) (*CallToolResult, any, error) {
		for i := range 3 {
			req.Session.NotifyProgress(ctx, &ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i)})
		}
		return &CallToolResult{Content: []Content{&TextContent{Text: a.Text}}}, nil, nil
	})
	AddTool(server, &Tool{Name: "roots"}, func(ctx context.Context, req *CallToolRequest, a in) (*CallToolResult, any, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		return &CallToolResult{Content: []Content{&TextContent{Text: fmt.Sprint(len(res.Roots), a.Text)}}}, nil, nil
	})
	AddTool(server, &Tool{Name: "fails"}, func(ctx context.Context, req *CallToolRequest, a in) (*CallToolResult, any, error) {
		return nil, nil, fmt.Errorf("no %s", a.Text)
	})
	AddTool(server, &Tool{Name: "waits"}, func(ctx context.Context, req *CallToolRequest, a in) (*CallToolResult, any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	AddTool(server, &Tool{Name: "seen"}, func(ctx context.Context, req *CallToolRequest, a in) (*CallToolResult, any, error) {
		buf := make([]byte, 64<<10)
		onHTTP := strings.Contains(string(buf[:runtime.Stack(buf, false)]), "net/http.(*conn).serve")
		return &CallToolResult{Content: []Content{&TextContent{Text: fmt.Sprint(changed.Load(), onHTTP)}}}, nil, nil
	})
	ts := httptest.NewServer(NewStreamableHTTPHandler(func(*http.Request) *Server { return server }, &StreamableHTTPOptions{readerHandles: readerHandles}))
	t.Cleanup(ts.Close)
	return ts
}

// TestInlineMatchesReaderGoroutine: a go-sdk client gets the same results,
// progress notifications and errors whether a POST's call is handled on
// its own goroutine (the patch) or handed to the reading goroutine and the
// handler queue (v1.8.0, readerHandles): calls that answer at once, after
// progress notifications, after a request to the client, with an error;
// a notification posted just before a call is handled before it, every
// time; a cancelled call's handler sees its context end; 8 clients
// calling at once get their own answers. Only the patch runs a call on the
// goroutine serving the HTTP connection.
func TestInlineMatchesReaderGoroutine(t *testing.T) {
	type seen struct {
		Results  []string
		Progress []float64
		Order    []string
		Where    string
	}
	run := func(readerHandles bool) seen {
		started := make(chan struct{}, 1)
		ts := inlineServer(t, readerHandles, started)
		var mu sync.Mutex
		var s seen
		client := NewClient(testImpl, &ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *ProgressNotificationClientRequest) {
			mu.Lock()
			s.Progress = append(s.Progress, req.Params.Progress)
			mu.Unlock()
		}})
		client.AddRoots(&Root{URI: "file:///a"})
		cs, err := client.Connect(context.Background(), &StreamableClientTransport{Endpoint: ts.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		call := func(name string) string {
			params := &CallToolParams{Name: name, Arguments: map[string]any{"text": "<a & b>\n\u2028"}}
			params.SetProgressToken("tok")
			res, err := cs.CallTool(context.Background(), params)
			if err != nil {
				return "error: " + err.Error()
			}
			b, _ := res.MarshalJSON()
			return string(b)
		}
		for _, name := range []string{"plain", "progress", "roots", "fails", "plain"} {
			s.Results = append(s.Results, call(name))
		}
		// Each notification is published (its POST answered 202) before the
		// call is posted: the call must find it handled.
		for i := range 20 {
			client.AddRoots(&Root{URI: fmt.Sprintf("file:///r%d", i)})
			s.Order = append(s.Order, call("seen"))
		}
		for i := range s.Order {
			text := strings.TrimSuffix(strings.TrimPrefix(s.Order[i], `{"content":[{"type":"text","text":"`), `"}]}`)
			s.Order[i], s.Where, _ = strings.Cut(text, " ")
		}
		// A call cancelled while its handler runs: the handler's context ends.
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &CallToolParams{Name: "waits", Arguments: map[string]any{"text": ""}})
			errc <- err
		}()
		<-started
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call: %v", err)
		}
		s.Results = append(s.Results, call("plain"))
		// 8 clients at once, 25 calls each.
		var wg sync.WaitGroup
		for c := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cs, err := NewClient(testImpl, nil).Connect(context.Background(), &StreamableClientTransport{Endpoint: ts.URL}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				defer cs.Close()
				for i := range 25 {
					text := fmt.Sprint(c, "/", i)
					res, err := cs.CallTool(context.Background(), &CallToolParams{Name: "plain", Arguments: map[string]any{"text": text}})
					if err != nil || res.Content[0].(*TextContent).Text != text {
						t.Errorf("client %d call %d: %v %v", c, i, res, err)
					}
				}
			}()
		}
		wg.Wait()
		return s
	}
	v180, patched := run(true), run(false)
	if diff := cmp.Diff(v180.Results, patched.Results); diff != "" {
		t.Errorf("results differ (-v1.8.0 +patched):\n%s", diff)
	}
	if diff := cmp.Diff(v180.Progress, patched.Progress); diff != "" || len(v180.Progress) != 3 {
		t.Errorf("progress differs (-v1.8.0 +patched):\n%s", diff)
	}
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprint(i+1)) // roots/list_changed once per AddRoots
	}
	for _, s := range []seen{v180, patched} {
		if diff := cmp.Diff(want, s.Order); diff != "" {
			t.Errorf("notifications handled before the call (-want +got):\n%s", diff)
		}
	}
	if v180.Where != "false" || patched.Where != "true" {
		t.Errorf("on the HTTP connection's goroutine: v1.8.0 %q, patched %q", v180.Where, patched.Where)
	}
}

// TestInlinePanicEndsProcess: a tool handler's panic ends the process, as
// it did in v1.8.0 where the handler ran on a goroutine of its own, rather
// than being recovered by net/http on the goroutine serving the POST (the
// test runs itself as a child process that panics).
func TestInlinePanicEndsProcess(t *testing.T) {
	if os.Getenv("MCP_INLINE_PANIC_CHILD") == "1" {
		server := NewServer(testImpl, nil)
		AddTool(server, &Tool{Name: "boom"}, func(context.Context, *CallToolRequest, struct{}) (*CallToolResult, any, error) {
			panic("boom from the tool")
		})
		ts := httptest.NewServer(NewStreamableHTTPHandler(func(*http.Request) *Server { return server }, nil))
		cs, err := NewClient(testImpl, nil).Connect(context.Background(), &StreamableClientTransport{Endpoint: ts.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs.CallTool(context.Background(), &CallToolParams{Name: "boom"})
		t.Fatal("the process outlived the panic")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInlinePanicEndsProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MCP_INLINE_PANIC_CHILD=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "panic: boom from the tool") || strings.Contains(string(out), "outlived") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
