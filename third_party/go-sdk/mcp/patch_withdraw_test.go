// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

// PATCH(toolgate): patch 19's test.

package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestWithdrawalAfterAnswer: a server asks its client (an elicitation
// made in a tools/call), answers the call, and only then withdraws the
// question; the withdrawal (notifications/cancelled) reaches the client on
// the standalone SSE stream and ends its handler. In v1.8.0 the answer had
// ended the POST's stream and the withdrawal was rejected ("write to closed
// stream"), the client's user left with a question no one waited for. Both
// ways go-sdk sends a withdrawal: waiting for it (MCPGODEBUG
// blockingcancelnotify=1, where its error is the caller's) and off the
// caller's path (the default).
func TestWithdrawalAfterAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		withdraws = make(chan context.CancelFunc, 1)
		elicitErr = make(chan error, 1)
		asked     = make(chan struct{}, 1)
		withdrawn = make(chan struct{}, 1)
		listening = make(chan struct{}, 1)
	)
	server := NewServer(testImpl, nil)
	AddTool(server, &Tool{Name: "asks"}, func(ctx context.Context, req *CallToolRequest, _ map[string]any) (*CallToolResult, any, error) {
		// The question outlives the call: only its withdrawal ends it.
		ectx, withdraw := context.WithCancel(context.WithoutCancel(ctx))
		withdraws <- withdraw
		go func() {
			_, err := req.Session.Elicit(ectx, &ElicitParams{Message: "go on?", RequestedSchema: map[string]any{"type": "object"}})
			elicitErr <- err
		}()
		select {
		case <-asked:
		case <-ctx.Done():
		}
		return &CallToolResult{Content: []Content{&TextContent{Text: "answered"}}}, nil, nil
	})
	ts := httptest.NewServer(NewStreamableHTTPHandler(func(*http.Request) *Server { return server }, nil))
	defer ts.Close()
	client := NewClient(testImpl, &ClientOptions{
		ElicitationHandler: func(hctx context.Context, _ *ElicitRequest) (*ElicitResult, error) {
			asked <- struct{}{}
			select {
			case <-hctx.Done(): // withdrawn
				withdrawn <- struct{}{}
				return nil, hctx.Err()
			case <-ctx.Done(): // never withdrawn: the test fails
				return nil, ctx.Err()
			}
		},
		ToolListChangedHandler: func(context.Context, *ToolListChangedRequest) {
			select {
			case listening <- struct{}{}:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, &StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel() // a question never withdrawn must not hold Close
		cs.Close()
	}()
	// A notification of no request comes on the standalone stream: once one
	// has come, the client listens there.
	AddTool(server, &Tool{Name: "more"}, func(context.Context, *CallToolRequest, map[string]any) (*CallToolResult, any, error) {
		return nil, nil, nil
	})
	<-listening

	defer func(v string) { blockingcancelnotify = v }(blockingcancelnotify)
	for _, blocking := range []string{"1", ""} {
		blockingcancelnotify = blocking
		res, err := cs.CallTool(ctx, &CallToolParams{Name: "asks"})
		if err != nil || res.IsError {
			t.Fatalf("blockingcancelnotify=%q: the call: %v, %v", blocking, res, err)
		}
		(<-withdraws)() // the call's stream has ended: its answer came
		if err := <-elicitErr; !errors.Is(err, context.Canceled) || err.Error() != context.Canceled.Error() {
			t.Fatalf("blockingcancelnotify=%q: the withdrawn question's error %v, want only %v", blocking, err, context.Canceled)
		}
		select {
		case <-withdrawn:
		case <-ctx.Done():
			t.Fatalf("blockingcancelnotify=%q: the client's question was not withdrawn", blocking)
		}
	}
}
