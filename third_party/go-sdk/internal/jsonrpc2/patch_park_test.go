// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package jsonrpc2

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// PATCH(toolgate): patch 14. The goroutine that ran the handler queue parks
// to run it again instead of ending. TestQueueOrder, TestQueueCancelled and
// TestQueueMixed (v1.8.0's order, Async, cancellation, one answer per
// call: they pass on v1.8.0's conn.go too) now go through parked
// goroutines; these tests check the reuse itself and that no goroutine
// outlives its connection.

// goid returns the calling goroutine's id.
func goid() int {
	var buf [64]byte
	b := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	id, _ := strconv.Atoi(string(b[:bytes.IndexByte(b, ' ')]))
	return id
}

// parked waits until n goroutines are parked on c (a liveness check: it
// fails only if they never are).
func parked(t *testing.T, c *Connection, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Microsecond) {
		c.stateMu.Lock()
		got := c.state.parked
		c.stateMu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines parked, want %d", got, n)
		}
	}
}

// TestParkedHandlerReused: calls made one at a time, whether they call
// Async or not, each once the goroutine that answered the last has parked,
// are all handled on that goroutine (v1.8.0 started a new one for each).
func TestParkedHandlerReused(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	p := newPipeConn(t, func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "async" {
			Async(ctx)
		}
		mu.Lock()
		seen[goid()]++
		mu.Unlock()
		return "ok", nil
	})
	for i := range int64(40) {
		method := "sync"
		if i%2 == 1 {
			method = "async"
		}
		p.call(t, i, method)
		if r := <-p.out; r.Error != nil || r.ID != Int64ID(i) {
			t.Fatalf("call %d: answer %v, %v", i, r.ID, r.Error)
		}
		parked(t, p.Connection, 1)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Errorf("40 calls one at a time were handled on %d goroutines, want 1: %v", len(seen), seen)
	}
}

// TestParkedEndWithConnection: after rounds of more calls in flight than
// goroutines are kept parked (each calls Async and waits until all have
// started), every call is answered once, maxParked goroutines are kept,
// they alone handle the calls made one at a time after them, and once the
// connection is done no goroutine of it is left.
func TestParkedEndWithConnection(t *testing.T) {
	before := runtime.NumGoroutine()
	const inFlight = 3 * maxParked
	var (
		mu      sync.Mutex
		started sync.WaitGroup
		later   = map[int]bool{}
		after   bool
	)
	p := &pipeConn{in: make(chan Message), out: make(chan *Response, 1000)}
	p.Connection = NewConnection(context.Background(), ConnectionConfig{
		Reader: chanReader(p.in),
		Writer: chanWriter(p.out),
		Closer: chanCloser{},
		Bind: func(*Connection) Handler {
			return HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
				if req.Method == "wait" {
					Async(ctx)
					started.Done()
					started.Wait()
				}
				mu.Lock()
				if after {
					later[goid()] = true
				}
				mu.Unlock()
				return "ok", nil
			})
		},
	})
	answered := map[ID]int{}
	id := int64(0)
	for range 3 {
		started.Add(inFlight)
		for range inFlight {
			id++
			p.call(t, id, "wait")
		}
		for range inFlight {
			answered[(<-p.out).ID]++
		}
	}
	parked(t, p.Connection, maxParked)
	mu.Lock()
	after = true
	mu.Unlock()
	for range 3 * maxParked {
		id++
		p.call(t, id, "sync")
		answered[(<-p.out).ID]++
	}
	for i := int64(1); i <= id; i++ {
		if answered[Int64ID(i)] != 1 {
			t.Errorf("call %d answered %d times", i, answered[Int64ID(i)])
		}
	}
	if len(later) > maxParked {
		t.Errorf("calls one at a time after the rounds were handled on %d goroutines, want at most %d", len(later), maxParked)
	}
	close(p.in)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	// The parked goroutines end once the connection is done: wait for
	// them (a liveness check; it fails only if one never ends).
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines left after the connection was done, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}

type chanCloser struct{}

func (chanCloser) Close() error { return nil }
