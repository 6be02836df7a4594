// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package jsonrpc2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
)

// PATCH(toolgate): patch 37. The in-flight bookkeeping costs less per
// call: updateInFlight reads a flag set as done is closed instead of
// trying to receive from done; Call and processResult make write's check
// (shuttingDown) in the update they make anyway and then send; runQueue
// says how to hand the queue on instead of returning a closure; the
// handler queue keeps its array when it empties; a request's releaser is
// allocated with it. These tests use only v1.8.0's API and pass on
// v1.8.0's conn.go too (its module copy, with this file added: see
// PATCHES.md): what a peer sees, the errors the calls, Close and Wait
// return, and the causes handlers are cancelled with are v1.8.0's, on the
// paths the merged checks take (a Call and a response while the
// connection closes, a write that fails), and the queue's order in bursts.

var errInflightBoom = errors.New("boom")

// inflightConn is a Connection whose peer is the test: requests and
// responses are sent to it on in, and what it writes is read from out.
// Its Closer closes in once (the peer hangs up), as a pipe's does.
type inflightConn struct {
	*Connection
	in   chan Message
	out  chan Message
	fail func(Message) bool // which writes fail (errInflightBoom)

	closeOnce sync.Once
}

type inflightReader chan Message

func (r inflightReader) Read(ctx context.Context) (Message, error) {
	m, ok := <-r
	if !ok {
		return nil, io.EOF
	}
	return m, nil
}

type inflightWriter struct{ p *inflightConn }

func (w inflightWriter) Write(_ context.Context, m Message) error {
	if w.p.fail != nil && w.p.fail(m) {
		return errInflightBoom
	}
	w.p.out <- m
	return nil
}

func (p *inflightConn) Close() error {
	p.closeOnce.Do(func() { close(p.in) })
	return nil
}

func newInflightConn(h HandlerFunc, fail func(Message) bool) *inflightConn {
	p := &inflightConn{in: make(chan Message), out: make(chan Message, 1000), fail: fail}
	p.Connection = NewConnection(context.Background(), ConnectionConfig{
		Reader: inflightReader(p.in),
		Writer: inflightWriter{p},
		Closer: closerFunc(p.Close),
		Bind:   func(*Connection) Handler { return h },
	})
	return p
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// send sends m to the connection unless the connection hung up.
func (p *inflightConn) send(m Message) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false // in closed: the connection is done with it
		}
	}()
	p.in <- m
	return true
}

func inflightCall(t *testing.T, id int64, method string) *Request {
	t.Helper()
	req, err := NewCall(Int64ID(id), method, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func inflightResult(t *testing.T, id ID, result string) *Response {
	t.Helper()
	r, err := NewResponse(id, result, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// errText is err's message, "<nil>" for none.
func errText(err error) string { return fmt.Sprint(err) }

// TestInflightCalls: outgoing calls, one at a time and 8 at once, are
// written with ids 1, 2, ... and get their own answers (answers with an id
// of no call in flight, the id as a string or none are ignored); a call whose
// write fails gets the write's error, and breaks the connection: while a
// call from the peer is still handled, the next call fails with
// ErrClientClosing wrapping it, unwritten (a notification is still
// written), and the handled call's answer is not written; then the
// connection closes itself.
func TestInflightCalls(t *testing.T) {
	held, release := make(chan struct{}), make(chan struct{})
	p := newInflightConn(func(ctx context.Context, req *Request) (any, error) {
		close(held)
		<-release // the connection stays busy until then
		return "held", nil
	}, func(m Message) bool { r, ok := m.(*Request); return ok && r.Method == "nosend" })
	ctx := context.Background()
	answer := func() {
		req := (<-p.out).(*Request)
		if !p.send(inflightResult(t, req.ID, "re "+idText(req.ID))) {
			t.Fatal("connection hung up")
		}
	}
	for i := int64(1); i <= 20; i++ {
		ac := p.Call(ctx, "m", nil)
		if ac.ID() != Int64ID(i) {
			t.Fatalf("call %d has id %v", i, ac.ID())
		}
		answer()
		var got string
		if err := ac.Await(ctx, &got); err != nil || got != fmt.Sprintf("re #%d", i) {
			t.Fatalf("call %d: %q, %v", i, got, err)
		}
	}
	// Answers with another call's id, the id as a string, no id: ignored.
	ac := p.Call(ctx, "m", nil)
	req := (<-p.out).(*Request)
	for _, id := range []ID{Int64ID(1), Int64ID(1000), StringID(fmt.Sprint(req.ID.Raw())), {}} {
		p.send(inflightResult(t, id, "wrong"))
	}
	p.send(inflightResult(t, req.ID, "right"))
	var got string
	if err := ac.Await(ctx, &got); err != nil || got != "right" {
		t.Fatalf("call %v answered by other ids first: %q, %v", req.ID, got, err)
	}
	var acs []*AsyncCall
	for range 8 {
		acs = append(acs, p.Call(ctx, "m", nil))
	}
	for range 8 {
		answer()
	}
	for _, ac := range acs {
		var got string
		if err := ac.Await(ctx, &got); err != nil || got != "re "+idText(ac.ID()) {
			t.Fatalf("call %v: %q, %v", ac.ID(), got, err)
		}
	}

	p.send(inflightCall(t, 100, "hold"))
	<-held
	ac = p.Call(ctx, "nosend", nil)
	if err := ac.Await(ctx, nil); !errors.Is(err, errInflightBoom) || errText(err) != "boom" {
		t.Fatalf("a call whose write fails: %v", err)
	}
	ac = p.Call(ctx, "m", nil)
	if err := ac.Await(ctx, nil); errText(err) != "client is closing: boom" || !errors.Is(err, ErrClientClosing) {
		t.Fatalf("a call after a write failed: %v", err)
	}
	// A notification still goes while a call is in flight (it may be a
	// cancellation), past write's check.
	if err := p.Notify(ctx, "n", nil); err != nil {
		t.Fatalf("a notification after a write failed: %v", err)
	}
	if r, ok := (<-p.out).(*Request); !ok || r.Method != "n" || r.IsCall() {
		t.Fatalf("written: %#v, want the notification", r)
	}
	select {
	case m := <-p.out:
		t.Fatalf("written after the write failed: %#v", m)
	default:
	}
	close(release) // idle and broken: the connection closes itself
	if err := p.Wait(); errText(err) != "boom" {
		t.Fatalf("Wait: %v", err)
	}
}

func idText(id ID) string { return fmt.Sprintf("#%v", id.Raw()) }

// TestInflightClosing: Close while a call is being handled. Until the
// connection is closing, calls are written; then a call fails at once
// with ErrClientClosing, unwritten, and the handled call's answer is not
// written either (the response's write is refused: ErrServerClosing, which
// Wait reports). Close returns nil; later calls and notifications fail.
func TestInflightClosing(t *testing.T) {
	hold, held := make(chan struct{}), make(chan struct{})
	p := newInflightConn(func(ctx context.Context, req *Request) (any, error) {
		close(held)
		<-hold
		return "done", nil
	}, nil)
	ctx := context.Background()
	if !p.send(inflightCall(t, 7, "hold")) {
		t.Fatal("connection hung up")
	}
	<-held
	closed := make(chan error, 1)
	go func() { closed <- p.Connection.Close() }()
	probes := 0
	for {
		ac := p.Call(ctx, "probe", nil)
		select {
		case m := <-p.out:
			// Written before Close began: answer it.
			req := m.(*Request)
			p.send(inflightResult(t, req.ID, "ok"))
			if err := ac.Await(ctx, nil); err != nil {
				t.Fatalf("probe %v, written: %v", req.ID, err)
			}
			probes++
			continue
		default:
		}
		err := ac.Await(ctx, nil)
		if err == nil {
			// Written and answered between the two looks at out: read it.
			m := <-p.out
			p.send(inflightResult(t, m.(*Request).ID, "ok"))
			probes++
			continue
		}
		if errText(err) != "client is closing" || !errors.Is(err, ErrClientClosing) {
			t.Fatalf("a call while closing: %v", err)
		}
		break
	}
	select {
	case m := <-p.out:
		t.Fatalf("written while closing: %#v", m)
	default:
	}
	close(hold)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case m := <-p.out:
		t.Fatalf("written once closing (the held call's answer): %#v", m)
	default:
	}
	if err := p.Wait(); errText(err) != "server is closing" {
		t.Fatalf("Wait: %v", err)
	}
	if err := p.Call(ctx, "m", nil).Await(ctx, nil); errText(err) != "client is closing" {
		t.Fatalf("a call once done: %v", err)
	}
	if err := p.Notify(ctx, "n", nil); errText(err) != "client is closing" {
		t.Fatalf("a notification once done: %v", err)
	}
	if err := p.Connection.Close(); err != nil {
		t.Fatalf("Close again: %v", err)
	}
}

// TestInflightWriteFails: an answer whose write fails breaks the
// connection: a call still being handled is cancelled with
// ErrServerClosing wrapping the failure, a new call fails with
// ErrClientClosing wrapping it, and once idle the connection closes
// itself, Wait reporting the failure.
func TestInflightWriteFails(t *testing.T) {
	held, release := make(chan struct{}), make(chan struct{})
	cause := make(chan string, 1)
	p := newInflightConn(func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "hold" {
			Async(ctx)
			close(held)
			<-ctx.Done()
			cause <- errText(context.Cause(ctx))
			<-release // the connection stays busy until then
			return nil, ctx.Err()
		}
		return "answer", nil
	}, func(m Message) bool { r, ok := m.(*Response); return ok && r.ID == Int64ID(2) })
	ctx := context.Background()
	p.send(inflightCall(t, 1, "hold"))
	<-held
	p.send(inflightCall(t, 2, "failwrite"))
	if got := <-cause; got != "server is closing: boom" {
		t.Fatalf("the held call's cause: %q", got)
	}
	if err := p.Call(ctx, "m", nil).Await(ctx, nil); errText(err) != "client is closing: boom" {
		t.Fatalf("a call after the write failed: %v", err)
	}
	close(release) // idle and broken: the connection closes itself
	if err := p.Wait(); errText(err) != "boom" {
		t.Fatalf("Wait: %v", err)
	}
	select {
	case m := <-p.out:
		t.Fatalf("written: %#v", m)
	default:
	}
}

// TestInflightQueueBursts: requests that do not call Async, sent in
// bursts of 1 to 6 while the ones before are still queued or being
// handled, are handled one at a time in the order they came and answered
// once each, in that order; bursts with an Async request among them too
// (its answer may come later).
func TestInflightQueueBursts(t *testing.T) {
	var mu sync.Mutex
	var order []int64
	running := 0
	overlap := false
	p := newInflightConn(func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "async" {
			Async(ctx)
			return "a", nil
		}
		mu.Lock()
		running++
		overlap = overlap || running > 1
		order = append(order, req.ID.Raw().(int64))
		mu.Unlock()
		mu.Lock()
		running--
		mu.Unlock()
		return "s", nil
	}, nil)
	id := int64(0)
	var want []int64
	answered := map[int64]int{}
	for round := range 60 {
		n := 1 + round%6
		for range n {
			id++
			method := "sync"
			if round >= 30 && id%5 == 0 {
				method = "async"
			} else {
				want = append(want, id)
			}
			p.send(inflightCall(t, id, method))
		}
		for range n {
			r := (<-p.out).(*Response)
			if r.Error != nil {
				t.Fatalf("call %v: %v", r.ID, r.Error)
			}
			answered[r.ID.Raw().(int64)]++
		}
	}
	p.Close()
	if err := p.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if overlap {
		t.Error("two requests that did not call Async were handled at once")
	}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("handled in the order\n%v\nwant\n%v", order, want)
	}
	for i := int64(1); i <= id; i++ {
		if answered[i] != 1 {
			t.Errorf("call %d answered %d times", i, answered[i])
		}
	}
}
