// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

// PATCH(toolgate): patch 18's tests.

package mcp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// jsonAnswerServer serves tools that answer at once, after progress
// notifications, after asking the client for its roots, and with an error;
// with sse, every stream is SSE, as in v1.8.0.
func jsonAnswerServer(t *testing.T, sse bool) *httptest.Server {
	server := NewServer(testImpl, nil)
	type in struct {
		Text string `json:"text"`
	}
	AddTool(server, &Tool{Name: "plain"}, func(ctx context.Context, req *CallToolRequest, a in) (*CallToolResult, any, error) {
		return &CallToolResult{Content: []Content{&TextContent{Text: a.Text}}}, map[string]any{"text": a.Text}, nil
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
	ts := httptest.NewServer(NewStreamableHTTPHandler(func(*http.Request) *Server { return server }, &StreamableHTTPOptions{sseAnswers: sse}))
	t.Cleanup(ts.Close)
	return ts
}

// TestJSONAnswerMatchesV180: a client gets the same results, and the same
// notifications and requests in the same order, whether a stream whose
// only message is its answer is written as application/json (the patch)
// or as SSE (v1.8.0, sseAnswers), over calls that answer at once,
// after progress notifications, after a request to the client, and with an
// error; the content type is application/json exactly when nothing came
// before the answer.
func TestJSONAnswerMatchesV180(t *testing.T) {
	type seen struct {
		Results  []string
		Progress []float64
		Types    []string
	}
	run := func(on bool) seen {
		ts := jsonAnswerServer(t, !on)
		var mu sync.Mutex
		var s seen
		var types []string
		hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := http.DefaultTransport.RoundTrip(r)
			if err == nil && r.Method == http.MethodPost && resp.StatusCode == http.StatusOK {
				mu.Lock()
				types = append(types, resp.Header.Get("Content-Type"))
				mu.Unlock()
			}
			return resp, err
		})}
		client := NewClient(testImpl, &ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *ProgressNotificationClientRequest) {
			mu.Lock()
			s.Progress = append(s.Progress, req.Params.Progress)
			mu.Unlock()
		}})
		client.AddRoots(&Root{URI: "file:///a"})
		cs, err := client.Connect(context.Background(), &StreamableClientTransport{Endpoint: ts.URL, HTTPClient: hc}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		for _, name := range []string{"plain", "progress", "roots", "fails", "plain"} {
			mu.Lock()
			types = nil
			mu.Unlock()
			params := &CallToolParams{Name: name, Arguments: map[string]any{"text": "<a & b>\n\u2028"}}
			params.SetProgressToken("tok")
			res, err := cs.CallTool(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := res.MarshalJSON()
			s.Results = append(s.Results, string(b))
			mu.Lock()
			s.Types = append(s.Types, name+": "+strings.Join(types, " "))
			mu.Unlock()
		}
		return s
	}
	v180, patched := run(false), run(true)
	if diff := cmp.Diff(v180.Results, patched.Results); diff != "" {
		t.Errorf("results differ (-v1.8.0 +patched):\n%s", diff)
	}
	if diff := cmp.Diff(v180.Progress, patched.Progress); diff != "" || len(v180.Progress) != 3 {
		t.Errorf("progress differs (-v1.8.0 +patched):\n%s", diff)
	}
	wantV180 := []string{"plain: text/event-stream", "progress: text/event-stream", "roots: text/event-stream", "fails: text/event-stream", "plain: text/event-stream"}
	want := []string{"plain: application/json", "progress: text/event-stream", "roots: text/event-stream", "fails: application/json", "plain: application/json"}
	if diff := cmp.Diff(wantV180, v180.Types); diff != "" {
		t.Errorf("v1.8.0's content types (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, patched.Types); diff != "" {
		t.Errorf("patched content types (-want +got):\n%s", diff)
	}
}

// TestJSONAnswerRaw: a tools/call POST is answered with its JSON-RPC
// response as the whole body, with its length, where v1.8.0 wrote one SSE
// event of the same bytes.
func TestJSONAnswerRaw(t *testing.T) {
	bodies := map[bool]string{}
	for _, on := range []bool{false, true} {
		resp := callPlain(t, jsonAnswerServer(t, !on), "application/json, text/event-stream")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(b)
		if on {
			if resp.Header.Get("Content-Type") != "application/json" || resp.ContentLength != int64(len(b)) {
				t.Errorf("patched: %s, length %d of %d", resp.Header.Get("Content-Type"), resp.ContentLength, len(b))
			}
		} else {
			body = strings.TrimSuffix(strings.TrimPrefix(body, "event: message\ndata: "), "\n\n")
		}
		bodies[on] = body
	}
	if bodies[false] != bodies[true] || !strings.Contains(bodies[true], `"text":"hi"`) {
		t.Errorf("v1.8.0's event data %q, patched body %q", bodies[false], bodies[true])
	}
}

// callPlain initialises a session on ts and posts tools/call "plain" with
// accept as its Accept header.
func callPlain(t *testing.T, ts *httptest.Server, accept ...string) *http.Response {
	post := func(sid, body string, accept ...string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header["Accept"] = accept
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	both := "application/json, text/event-stream"
	init := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, both)
	io.Copy(io.Discard, init.Body)
	init.Body.Close()
	sid := init.Header.Get("Mcp-Session-Id")
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, both).Body.Close()
	return post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"plain","arguments":{"text":"hi"}}}`, accept...)
}

// TestJSONAnswerAccept: the answer is application/json only when the
// POST's Accept takes application/json with a quality above 0 (the most
// specific matching range deciding, q=0 or an invalid q not taking it);
// otherwise it is SSE, as in v1.8.0, and the status is v1.8.0's for every
// header.
func TestJSONAnswerAccept(t *testing.T) {
	v180, patched := jsonAnswerServer(t, true), jsonAnswerServer(t, false)
	for _, c := range []struct {
		accept []string
		want   string // patched Content-Type, or the status
	}{
		{[]string{"application/json, text/event-stream"}, "application/json"},
		{[]string{"text/event-stream", "application/json"}, "application/json"},
		{[]string{" TEXT/Event-Stream ; q=0.5 ,Application/JSON;Q=0.001"}, "application/json"},
		{[]string{"text/event-stream, application/json;charset=utf-8"}, "application/json"},
		{[]string{"*/*"}, "application/json"},
		{[]string{"text/event-stream, application/json;q=0"}, "text/event-stream"},
		{[]string{"text/event-stream, application/json ; Q = 0.000"}, "text/event-stream"},
		{[]string{"text/event-stream, application/json;q=0.", "application/json;q=nan"}, "text/event-stream"},
		{[]string{"text/event-stream, application/json;q=bad"}, "text/event-stream"},
		{[]string{"text/event-stream, application/json;q=2"}, "text/event-stream"},
		{[]string{"text/event-stream, application/json;q=0, */*"}, "text/event-stream"},
		{[]string{"text/event-stream, application/*;q=0"}, "text/event-stream"},
		{[]string{"text/event-stream, application/json;q=0, application/json;q=0.5"}, "application/json"},
		{[]string{"text/event-stream"}, "400"},
	} {
		want := c.want
		for _, ts := range []*httptest.Server{patched, v180} {
			resp := callPlain(t, ts, c.accept...)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got := resp.Header.Get("Content-Type")
			if resp.StatusCode != http.StatusOK {
				got = fmt.Sprint(resp.StatusCode)
			} else if !strings.Contains(string(b), `"text":"hi"`) {
				t.Errorf("%q: body %q", c.accept, b)
			}
			if got != want {
				t.Errorf("%q: got %s, want %s", c.accept, got, want)
			}
			if want == "application/json" {
				want = "text/event-stream" // v1.8.0's
			}
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
