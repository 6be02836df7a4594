// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package jsonrpc2

import (
	"context"
	"encoding/json"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// PATCH(toolgate): patch 34. readIncoming lets the goroutine it handed a
// message to (a handler it woke or started, a caller awaiting a response)
// run before it reads again. What is handled, and in what order, is
// v1.8.0's: TestQueueOrder, TestQueueCancelled and TestQueueMixed (which
// pass on v1.8.0's conn.go too) and patch 14's parked-goroutine tests run
// through the yield at one processor (TestYieldOneProc: the reader yields
// only on one); these tests check the yield itself, and that calls and
// responses read back to back are all answered and delivered once.

// readyReader returns its messages, then io.EOF, each once the test has
// read the answer to the one before (gate), and counts the Reads that
// came after the handler of the request before them had started.
type readyReader struct {
	msgs    []Message
	next    int
	started *atomic.Int64 // requests whose handler started
	after   int           // Reads (past the first) that found the last request's handler started
	gate    chan struct{} // a request answered
}

func (r *readyReader) Read(context.Context) (Message, error) {
	if r.next > 0 {
		if r.started.Load() == int64(r.next) {
			r.after++
		}
		<-r.gate
	}
	if r.next == len(r.msgs) {
		return nil, io.EOF
	}
	r.next++
	return r.msgs[r.next-1], nil
}

// TestYieldToHandler: with one processor, the reader lets the handler it
// woke start before its next Read (v1.8.0's reader went on to its next
// Read first: here, for none of the requests did the handler start before
// it). The runtime runs the yielding goroutine first now and then (its
// scheduler's fairness check, one schedule in 61), so the test asks for
// most Reads, not all.
func TestYieldToHandler(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const n = 200
	var started atomic.Int64
	r := &readyReader{started: &started, gate: make(chan struct{})}
	for i := range n {
		req, err := NewCall(Int64ID(int64(i)), "call", i)
		if err != nil {
			t.Fatal(err)
		}
		r.msgs = append(r.msgs, req)
	}
	out := make(chan *Response, n)
	c := NewConnection(context.Background(), ConnectionConfig{
		Reader: r,
		Writer: chanWriter(out),
		Closer: io.NopCloser(nil),
		Bind: func(*Connection) Handler {
			return HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
				started.Add(1)
				var i int
				if err := json.Unmarshal(req.Params, &i); err != nil {
					return nil, err
				}
				return i, nil
			})
		},
	})
	for i := range n {
		resp := <-out
		var got int
		if resp.Error != nil || json.Unmarshal(resp.Result, &got) != nil || got != i || Int64ID(int64(i)) != resp.ID {
			t.Fatalf("answer %d: %v %s %v", i, resp.ID, resp.Result, resp.Error)
		}
		r.gate <- struct{}{}
	}
	c.Wait()
	if r.after < (n-1)/2 {
		t.Errorf("%d of %d Reads came after the handler of the request before them started; want most", r.after, n-1)
	}
}

// responseReader answers each call written to it, in the order written,
// and returns io.EOF once it has answered n.
type responseReader struct {
	ids  chan ID
	left int
}

func (r *responseReader) Read(ctx context.Context) (Message, error) {
	if r.left == 0 {
		return nil, io.EOF
	}
	r.left--
	id := <-r.ids
	return NewResponse(id, id.Raw(), nil)
}

type idWriter chan ID

func (w idWriter) Write(_ context.Context, m Message) error {
	w <- m.(*Request).ID
	return nil
}

// TestYieldResponses: calls from several goroutines at once, their
// responses read as soon as written: each caller gets its own response,
// once (as in v1.8.0). At one processor, where the reader yields.
func TestYieldResponses(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const callers, calls = 8, 100
	ids := make(chan ID, callers)
	c := NewConnection(context.Background(), ConnectionConfig{
		Reader: &responseReader{ids: ids, left: callers * calls},
		Writer: idWriter(ids),
		Closer: io.NopCloser(nil),
		Bind:   func(*Connection) Handler { return HandlerFunc(nil) },
	})
	var wg sync.WaitGroup
	errs := make(chan error, callers*calls)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				ac := c.Call(context.Background(), "call", nil)
				var got int64
				if err := ac.Await(context.Background(), &got); err != nil {
					errs <- err
				} else if Int64ID(got) != ac.ID() {
					errs <- &WireError{Message: "a response to another call"}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	c.Close()
}

// TestYieldOneProc runs the queue and parked-goroutine tests again at one
// processor, the only count at which the reader yields (at the machine's
// count, as they run on their own, they take v1.8.0's path).
func TestYieldOneProc(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, tt := range []struct {
		name string
		test func(*testing.T)
	}{
		{"QueueOrder", TestQueueOrder},
		{"QueueCancelled", TestQueueCancelled},
		{"QueueMixed", TestQueueMixed},
		{"ParkedHandlerReused", TestParkedHandlerReused},
		{"ParkedEndWithConnection", TestParkedEndWithConnection},
	} {
		t.Run(tt.name, tt.test)
	}
}

// BenchmarkYieldGate: what the reader's gate costs a handed message on any
// processor count, reading runtime.GOMAXPROCS (under the scheduler's lock).
func BenchmarkYieldGate(b *testing.B) {
	n := 0
	for b.Loop() {
		if runtime.GOMAXPROCS(0) == 1 {
			n++
		}
	}
	_ = n
}
