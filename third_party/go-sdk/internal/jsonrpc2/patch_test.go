// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package jsonrpc2

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// PATCH(toolgate): these tests check that a call or a response is encoded
// in the bytes v1.8.0 wrote for it (the encoder over wireCombined), whether
// EncodeMessage takes the shortcut (encodeFast) or not, and that a Compact
// result is written as it is.

// encodeV180 is EncodeMessage as released in v1.8.0.
func encodeV180(t *testing.T, msg Message) []byte {
	t.Helper()
	wire := wireCombined{VersionTag: wireVersion}
	msg.marshal(&wire)
	data, err := jsonMarshal(&wire)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

type patchResult struct {
	Meta    map[string]any `json:"_meta,omitempty"`
	Content []any          `json:"content"`
	IsError bool           `json:"isError,omitempty"`
}

type patchMarshaler struct{ out string }

func (m patchMarshaler) MarshalJSON() ([]byte, error) { return []byte(m.out), nil }

var (
	patchIDs     = []ID{Int64ID(0), Int64ID(1), Int64ID(-7), Int64ID(math.MaxInt64), Int64ID(math.MinInt64), StringID(""), StringID("a<b>&\"c\""), {}}
	patchResults = []any{
		map[string]any{},
		[]any{},
		"text <b>&amp;</b> \u2028 \"quoted\"\n",
		42, 1.5, true, false,
		patchResult{Content: []any{map[string]any{"type": "text", "text": "line 1\nline 2 <&>\t\x01 é ☕"}}},
		patchResult{Meta: map[string]any{"z": 1, "a": []int{1, 2}}, Content: []any{}, IsError: true},
		json.RawMessage(" { \"spaced\" : [ 1 , 2 ] } "),
		patchMarshaler{"{ \"a\" :\n 1 }"},
		(*patchResult)(nil),
		Compact(`{"already":"compact","html":"\u003cb\u003e"}`),
		Compact(`[]`),
		nil,
	}
	patchMethods = []string{"tools/call", "notifications/progress", "", "a b~!<&>", "quote\"d", `back\slash`, "tab\t", "\x7f", "é", "\u2028", "\xff"}
)

func TestEncodeCallMatchesV180(t *testing.T) {
	for _, id := range patchIDs {
		for _, method := range patchMethods {
			for _, params := range patchResults {
				var (
					r   *Request
					err error
				)
				if id.IsValid() {
					r, err = NewCall(id, method, params)
				} else {
					r, err = NewNotification(method, params)
				}
				if err != nil {
					t.Fatalf("NewCall(%v, %q, %#v): %v", id, method, params, err)
				}
				got, err := EncodeMessage(r)
				if err != nil {
					t.Fatal(err)
				}
				if want := encodeV180(t, r); string(got) != string(want) {
					t.Errorf("EncodeMessage(id %v, method %q, params %#v)\n got %s\nwant %s", id.value, method, params, got, want)
				}
			}
		}
	}
}

func TestEncodeResponseMatchesV180(t *testing.T) {
	for _, id := range patchIDs {
		for _, res := range patchResults {
			for _, rerr := range []error{nil, errors.New("boom"), &WireError{Code: -32602, Message: "bad <params>"}} {
				r, err := NewResponse(id, res, rerr)
				if err != nil {
					t.Fatalf("NewResponse(%v, %#v): %v", id, res, err)
				}
				got, err := EncodeMessage(r)
				if err != nil {
					t.Fatal(err)
				}
				if want := encodeV180(t, r); string(got) != string(want) {
					t.Errorf("EncodeMessage(id %v, result %#v, err %v)\n got %s\nwant %s", id.value, res, rerr, got, want)
				}
			}
		}
	}
}

// TestEncodeResponseChangedResult: a Result set or replaced after
// NewResponse is encoded (compacted, checked) as v1.8.0 did.
func TestEncodeResponseChangedResult(t *testing.T) {
	r, err := NewResponse(Int64ID(3), map[string]int{"a": 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Result = json.RawMessage(`{ "b" : 2 }`)
	got, err := EncodeMessage(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":3,"result":{"b":2}}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	r.Result = json.RawMessage(`{"b":`)
	if _, err := EncodeMessage(r); err == nil {
		t.Error("a broken Result set after NewResponse was encoded without an error")
	}
	if _, err := EncodeMessage(&Request{ID: Int64ID(5), Method: "m", Params: json.RawMessage(`{"b":`)}); err == nil {
		t.Error("a call with broken Params was encoded without an error")
	}
	lit := &Response{ID: Int64ID(4), Result: json.RawMessage("[ 1 ]")}
	if got, err := EncodeMessage(lit); err != nil || string(got) != `{"jsonrpc":"2.0","id":4,"result":[1]}` {
		t.Errorf("a Response built without NewResponse: %s, %v", got, err)
	}
}

// TestCompactIsWrittenOnce: a Compact result reaches the wire as it is,
// with one allocation for the message (room for the stream's newline
// included) where v1.8.0 made three.
func TestCompactIsWrittenOnce(t *testing.T) {
	c := Compact(`{"content":[{"type":"text","text":"x"}]}`)
	r, err := NewResponse(Int64ID(9), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if &r.Result[0] != &c[0] {
		t.Error("NewResponse copied or re-encoded a Compact result")
	}
	allocs := testing.AllocsPerRun(100, func() {
		data, _ := EncodeMessage(r)
		_ = append(data, '\n')
	})
	before := testing.AllocsPerRun(100, func() {
		data := encodeV180(t, r)
		_ = append(data, '\n')
	})
	if allocs >= before || allocs > 2 { // 1, 2 with -race
		t.Errorf("encoding a response with a Compact result: %v allocations, want 1 (v1.8.0: %v)", allocs, before)
	}
}

// PATCH(toolgate): a queued request is handled on the goroutine that runs
// the queue (handleAsync), and Async hands the rest of the queue on to a new
// goroutine. These tests check what v1.8.0 promised: requests that do not
// call Async are handled one at a time in the order they came, a request
// that calls Async lets the next ones start while it goes on, every call is
// answered once, a request cancelled while queued is answered with the
// cancellation, and Async twice on one request panics.

// pipeConn is a Connection whose peer is the test: it sends requests with
// send and reads the answers from out.
type pipeConn struct {
	*Connection
	in  chan Message
	out chan *Response
}

type chanReader chan Message

func (r chanReader) Read(ctx context.Context) (Message, error) {
	m, ok := <-r
	if !ok {
		return nil, io.EOF
	}
	return m, nil
}

type chanWriter chan *Response

func (w chanWriter) Write(_ context.Context, m Message) error {
	w <- m.(*Response)
	return nil
}

func idString(id ID) string { return fmt.Sprintf("#%v", id.Raw()) }

func newPipeConn(t *testing.T, h HandlerFunc) *pipeConn {
	t.Helper()
	p := &pipeConn{in: make(chan Message), out: make(chan *Response, 1000)}
	p.Connection = NewConnection(context.Background(), ConnectionConfig{
		Reader: chanReader(p.in),
		Writer: chanWriter(p.out),
		Closer: io.NopCloser(nil),
		Bind:   func(*Connection) Handler { return h },
	})
	t.Cleanup(func() {
		close(p.in)
		p.Wait()
	})
	return p
}

func (p *pipeConn) call(t *testing.T, id int64, method string) {
	t.Helper()
	req, err := NewCall(Int64ID(id), method, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.in <- req
}

func TestQueueOrder(t *testing.T) {
	var (
		mu      sync.Mutex
		log     []string
		running int // sync requests being handled
		overlap bool
	)
	note := func(s string) {
		mu.Lock()
		log = append(log, s)
		mu.Unlock()
	}
	asyncGo := make(chan struct{}) // an async request waits on it
	syncRan := make(chan struct{}, 100)
	p := newPipeConn(t, func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "sync":
			mu.Lock()
			running++
			overlap = overlap || running > 1
			log = append(log, "start "+idString(req.ID))
			mu.Unlock()
			for range 100 {
				runtime.Gosched() // a chance for the next request to start too early
			}
			mu.Lock()
			running--
			log = append(log, "end "+idString(req.ID))
			mu.Unlock()
			syncRan <- struct{}{}
			return "ok", nil
		case "async":
			// Noted before Async: once it is called the next requests may
			// run before this goroutine is scheduled again.
			note("async " + idString(req.ID))
			Async(ctx)
			<-asyncGo // goes on only once requests after it have been handled
			return "ok", nil
		case "twice":
			Async(ctx)
			func() {
				defer func() { note(fmt.Sprint("second Async: ", recover())) }()
				Async(ctx)
			}()
			return "ok", nil
		}
		return nil, ErrNotHandled
	})
	// An async request first: the sync ones after it run while it waits.
	p.call(t, 1, "async")
	for i := int64(2); i <= 21; i++ {
		p.call(t, i, "sync")
	}
	for range 20 {
		<-syncRan
	}
	close(asyncGo)
	p.call(t, 22, "twice")
	answered := map[string]int{}
	for range 22 {
		r := <-p.out
		answered[idString(r.ID)]++
		if r.Error != nil {
			t.Errorf("call %v: %v", r.ID, r.Error)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if overlap {
		t.Error("two requests that did not call Async were handled at once")
	}
	want := []string{"async #1"}
	for i := 2; i <= 21; i++ {
		want = append(want, fmt.Sprintf("start #%d", i), fmt.Sprintf("end #%d", i))
	}
	want = append(want, "second Async: jsonrpc2.Async called multiple times")
	if fmt.Sprint(log) != fmt.Sprint(want) {
		t.Errorf("handled\n%v\nwant\n%v", log, want)
	}
	for i := 1; i <= 22; i++ {
		if n := answered[fmt.Sprintf("#%d", i)]; n != 1 {
			t.Errorf("call %d answered %d times", i, n)
		}
	}
}

// TestQueueCancelled: a call cancelled while it waits in the queue is
// answered with the cancellation, not handled.
func TestQueueCancelled(t *testing.T) {
	hold := make(chan struct{})
	started := make(chan struct{})
	handled := make(chan string, 10)
	p := newPipeConn(t, func(ctx context.Context, req *Request) (any, error) {
		if !req.IsCall() {
			return nil, nil
		}
		handled <- idString(req.ID)
		if req.Method == "hold" {
			close(started)
			<-hold
		}
		return "ok", nil
	})
	p.call(t, 1, "hold")
	<-started
	p.call(t, 2, "next")
	mark, err := NewNotification("mark", nil)
	if err != nil {
		t.Fatal(err)
	}
	p.in <- mark // taken once call 2 is queued
	p.Cancel(Int64ID(2))
	close(hold)
	p.call(t, 3, "next")
	got := map[string]*Response{}
	for range 3 {
		r := <-p.out
		got[idString(r.ID)] = r
	}
	if got["#1"].Error != nil || got["#3"].Error != nil {
		t.Errorf("calls 1 and 3: %v, %v", got["#1"].Error, got["#3"].Error)
	}
	if !errors.Is(got["#2"].Error, context.Canceled) {
		t.Errorf("call 2, cancelled while queued: %v, want context.Canceled", got["#2"].Error)
	}
	close(handled)
	var ids []string
	for id := range handled {
		ids = append(ids, id)
	}
	if fmt.Sprint(ids) != "[#1 #3]" {
		t.Errorf("handled %v, want [#1 #3]", ids)
	}
}

// TestQueueMixed: many calls and notifications, some calling Async at
// once, some after a while, some never: every call is answered once, and
// what does not call Async is handled in the order it came.
func TestQueueMixed(t *testing.T) {
	var (
		mu    sync.Mutex
		order []int64
	)
	p := newPipeConn(t, func(ctx context.Context, req *Request) (any, error) {
		var n int64
		if err := json.Unmarshal(req.Params, &n); err != nil {
			return nil, err
		}
		switch n % 3 {
		case 0:
			Async(ctx)
		case 1:
			runtime.Gosched()
			Async(ctx)
			runtime.Gosched()
		default:
			mu.Lock()
			order = append(order, n)
			mu.Unlock()
		}
		if !req.IsCall() {
			return nil, nil
		}
		return n, nil
	})
	const n = 600
	go func() {
		for i := int64(0); i < n; i++ {
			var (
				req *Request
				err error
			)
			if i%5 == 4 {
				req, err = NewNotification("note", i)
			} else {
				req, err = NewCall(Int64ID(i), "call", i)
			}
			if err != nil {
				panic(err)
			}
			p.in <- req
		}
	}()
	answered := map[int64]int{}
	for range n - n/5 {
		r := <-p.out
		var got int64
		if r.Error != nil || json.Unmarshal(r.Result, &got) != nil || Int64ID(got) != r.ID {
			t.Fatalf("answer %v: %s, %v", r.ID, r.Result, r.Error)
		}
		answered[got]++
	}
	for i := int64(0); i < n; i++ {
		if i%5 != 4 && answered[i] != 1 {
			t.Errorf("call %d answered %d times", i, answered[i])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.IsSorted(order) {
		t.Errorf("requests that never called Async were handled out of order: %v", order)
	}
}

// TestCompactIsNotCompactedAgain: EncodeMessage writes a Compact result's
// bytes as they are (patch 9): what NewResponse was given, byte for byte,
// even where compacting would change them (a Compact must be compact; this
// one is not, to tell the two apart). A result given as json.RawMessage is
// compacted as before.
func TestCompactIsNotCompactedAgain(t *testing.T) {
	for _, c := range []struct {
		result any
		want   string
	}{
		{Compact(`{"a": 1}`), `{"jsonrpc":"2.0","id":3,"result":{"a": 1}}`},
		{Compact(`{"content":[{"type":"text"}]}`), `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text"}]}}`},
		{json.RawMessage(`{"b" : [ 1 ]}`), `{"jsonrpc":"2.0","id":3,"result":{"b":[1]}}`},
	} {
		r, err := NewResponse(Int64ID(3), c.result, nil)
		if err != nil {
			t.Fatal(err)
		}
		data, err := EncodeMessage(r)
		if err != nil || string(data) != c.want {
			t.Errorf("EncodeMessage(%s) = %s, %v; want %s", c.result, data, err, c.want)
		}
	}
}

// TestFramedResult: a Framed result (patch 22) is encoded as the same
// bytes given as a Compact (patch 9) are, whatever the id and whether or
// not the response is an error, again on a second encoding; a response to
// an integer id is written in the frame's own array, the result's bytes
// untouched, with room for a stream's newline after it. A frame without
// that room is taken as a Compact.
func TestFramedResult(t *testing.T) {
	results := []string{`{}`, `{"a":1}`, `{"content":[{"type":"text","text":"x\ny <&>"}],"structuredContent":{"output":"\u003c"}}`}
	ids := []ID{Int64ID(0), Int64ID(7), Int64ID(-1), Int64ID(math.MaxInt64), Int64ID(math.MinInt64), StringID("s"), StringID(`q"`)}
	for _, result := range results {
		for _, id := range ids {
			for _, rerr := range []error{nil, NewError(-32000, "failed")} {
				r, err := NewResponse(id, Compact(result), rerr)
				if err != nil {
					t.Fatal(err)
				}
				want, err := EncodeMessage(r)
				if err != nil {
					t.Fatal(err)
				}
				frame := append(make([]byte, FrameRoom, FrameRoom+len(result)+2), result...)
				fr, err := NewResponse(id, Framed(frame), rerr)
				if err != nil || string(fr.Result) != result {
					t.Fatalf("NewResponse(%v, Framed %s): result %s, %v", id, result, fr.Result, err)
				}
				for range 2 {
					got, err := EncodeMessage(fr)
					if err != nil || string(got) != string(want) {
						t.Errorf("EncodeMessage(Framed %s, id %v, %v) = %s, %v; want %s", result, id, rerr, got, err, want)
						continue
					}
					_, isInt := id.Raw().(int64)
					if inPlace := &got[len(got)-2] == &frame[len(frame)-1]; inPlace != (isInt && rerr == nil) {
						t.Errorf("Framed %s, id %v, %v: written in place %v", result, id, rerr, inPlace)
					}
					if line := append(got, '\n'); string(line[:len(got)]) != string(want) || string(frame[FrameRoom:]) != result {
						t.Errorf("Framed %s, id %v: a newline changed the bytes", result, id)
					}
				}
			}
			short := append(make([]byte, FrameRoom, FrameRoom+len(result)), result...)
			fr, err := NewResponse(id, Framed(short), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := EncodeMessage(fr); err != nil || &got[0] == &short[0] || !strings.Contains(string(got), `"result":`+result+`}`) {
				t.Errorf("Framed %s without room, id %v: %s, %v", result, id, got, err)
			}
		}
	}
}

// TestEncodeCallParamsReplaced: patch 17 writes the params NewCall made as
// they are; params set after NewCall (spaced, invalid, a slice of the same
// bytes cut shorter) are encoded as v1.8.0 encodes them: compacted, or
// refused with its error.
func TestEncodeCallParamsReplaced(t *testing.T) {
	for _, params := range []string{` { "a" : [ 1 , 2 ] } `, `{"a":1,}`, `{"a":`, `[1, 2]`, `{"a":"b"}`} {
		r, err := NewCall(Int64ID(7), "tools/call", json.RawMessage(`{"name":"x","arguments":{"a":"b"}}`))
		if err != nil {
			t.Fatal(err)
		}
		r.Params = json.RawMessage(params)
		got, gotErr := EncodeMessage(r)
		wire := wireCombined{VersionTag: wireVersion}
		r.marshal(&wire)
		want, wantErr := jsonMarshal(&wire)
		if (gotErr == nil) != (wantErr == nil) || string(got) != string(want) {
			t.Errorf("params %q: got %s, %v; v1.8.0 %s, %v", params, got, gotErr, want, wantErr)
		}
	}
	// The same bytes cut shorter are not the bytes NewCall made.
	r, _ := NewCall(Int64ID(7), "m", json.RawMessage(`{"a":[1, 2]}`))
	r.Params = r.Params[:len(r.Params)-2]
	if got, err := EncodeMessage(r); err == nil {
		t.Errorf("params cut short encoded as %s", got)
	}
}
