// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package jsonrpc2

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"testing"
)

// PATCH(toolgate): patch 40. An integer ID's value is allocated with its
// message or call (int64IDAt), a call with its request, and processResult's
// response with its request. These tests check that the IDs are v1.8.0's
// Int64ID in every way a caller sees one, that what is decoded and written
// is v1.8.0's, and the allocations the patch spares.

// idAtSink holds TestInt64IDAt's objects that take freed memory.
var idAtSink []*[4]int64

var idAtValues = []int64{0, 1, 255, 256, 300, -1, -256, 1 << 40, math.MaxInt64, math.MinInt64}

// TestInt64IDAt: int64IDAt(&n) is Int64ID(n): ==, as a map key both ways,
// Raw's type and value, its text, reflect.DeepEqual; and it keeps its
// value through collections while only the ID holds n's object.
func TestInt64IDAt(t *testing.T) {
	ids := map[ID]int{}
	for i, n := range idAtValues {
		ids[Int64ID(n)] = i
	}
	held := make([]ID, len(idAtValues))
	for i, n := range idAtValues {
		box := &struct {
			pad [3]int64
			num int64
		}{num: n}
		got, want := int64IDAt(&box.num), Int64ID(n)
		if got != want || !reflect.DeepEqual(got, want) || fmt.Sprintf("%v %#v", got, got.Raw()) != fmt.Sprintf("%v %#v", want, want.Raw()) {
			t.Errorf("int64IDAt(%d) = %#v; Int64ID %#v", n, got, want)
		}
		if r, ok := got.Raw().(int64); !ok || r != n {
			t.Errorf("int64IDAt(%d).Raw() = %#v", n, got.Raw())
		}
		if j, ok := ids[got]; !ok || j != i {
			t.Errorf("int64IDAt(%d) as a key: %d, %v", n, j, ok)
		}
		if m := map[ID]bool{got: true}; !m[want] {
			t.Errorf("Int64ID(%d) does not find int64IDAt's key", n)
		}
		held[i] = got
	}
	for range 3 {
		for range 1000 {
			// Reuse what was freed: objects of the boxes' size, on the
			// heap (a make that does not escape is on the stack, and
			// reuses nothing), filled with another value.
			idAtSink = append(idAtSink, &[4]int64{-7, -7, -7, -7})
		}
		runtime.GC()
	}
	idAtSink = nil
	for i, n := range idAtValues {
		if held[i] != Int64ID(n) {
			t.Errorf("after collections: %#v; want %d", held[i], n)
		}
	}
}

// TestDecodeIntegerIDAllocs: a plain request and response with an integer
// id decode to v1.8.0's messages (TestPlainIDMatchesV180 checks every
// id) in one allocation each (were two: the message and its id's value).
func TestDecodeIntegerIDAllocs(t *testing.T) {
	for _, data := range []string{
		`{"jsonrpc":"2.0","id":300,"method":"tools/call","params":{"name":"t"}}`,
		`{"jsonrpc":"2.0","id":300,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":-4096,"result":{"content":[]}}`,
	} {
		want, _ := decodeMessageV180([]byte(data))
		got, err := DecodeMessage([]byte(data))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %#v, %v; v1.8.0 %#v", data, got, err, want)
		}
		b := []byte(data)
		if n := testing.AllocsPerRun(100, func() { DecodeValidMessage(b) }); n != 1 {
			t.Errorf("%s: %v allocations, want 1", data, n)
		}
	}
}

// TestProcessResultResponse: what processResult writes for a handler's
// result or error is v1.8.0's NewResponse of it (its response is now
// allocated with the request), encoded as v1.8.0 encoded it.
func TestProcessResultResponse(t *testing.T) {
	for i, res := range patchResults {
		if res == nil {
			continue // a nil result and nil error: an internal error
		}
		for _, rerr := range []error{nil, fmt.Errorf("boom")} {
			p := newInflightConn(func(context.Context, *Request) (any, error) {
				if rerr != nil {
					return nil, rerr
				}
				return res, nil
			}, nil)
			id := Int64ID(int64(300 + i))
			p.in <- inflightCall(t, 300+int64(i), "m")
			got := (<-p.out).(*Response)
			wantRes := res
			if rerr != nil {
				wantRes = nil
			}
			want, err := NewResponse(id, wantRes, rerr)
			if err != nil {
				t.Fatal(err)
			}
			g, _ := EncodeMessage(got)
			if w := encodeV180(t, want); string(g) != string(w) || got.ID != id {
				t.Errorf("result %#v, error %v: wrote %s; v1.8.0 %s", res, rerr, g, w)
			}
			p.Close()
		}
	}
}

// TestCallIDs: a call's ID is Int64ID of its number, past 255 too (no
// longer a value of its own), and its response, matched by it, is the
// call's.
func TestCallIDs(t *testing.T) {
	p := newInflightConn(func(context.Context, *Request) (any, error) { return nil, nil }, nil)
	defer p.Close()
	for n := int64(1); n <= 300; n++ {
		var ac *AsyncCall
		if n%2 == 0 {
			ac = p.CallCompact(context.Background(), "m", Compact(`{"n":1}`))
		} else {
			ac = p.Call(context.Background(), "m", map[string]int{"n": 1})
		}
		req := (<-p.out).(*Request)
		if ac.ID() != Int64ID(n) || req.ID != Int64ID(n) {
			t.Fatalf("call %d: ID %#v, request's %#v", n, ac.ID(), req.ID)
		}
		p.in <- &Response{ID: Int64ID(n), Result: []byte(fmt.Sprint(n))}
		var got int64
		if err := ac.Await(context.Background(), &got); err != nil || got != n {
			t.Fatalf("call %d: Await %d, %v", n, got, err)
		}
	}
}

// TestRetiredInNextUpdate: handleAsync retires a request it answered in
// its next update (or in park's): after requests handled in turn, released
// (Async) or cancelled before they ran, every one is answered and retired
// (the count of incoming requests is back at 0, so Close returns and the
// connection is done, as on v1.8.0).
func TestRetiredInNextUpdate(t *testing.T) {
	block := make(chan struct{})
	p := newInflightConn(func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "async":
			Async(ctx)
		case "block":
			<-block
		}
		return req.Method, nil
	}, nil)
	methods := []string{"plain", "async", "plain", "async", "async", "plain"}
	for i := range 40 {
		p.in <- inflightCall(t, int64(i+1), methods[i%len(methods)])
	}
	for range 40 {
		<-p.out
	}
	p.in <- inflightCall(t, 100, "block")
	p.in <- inflightCall(t, 101, "plain")
	p.Cancel(Int64ID(101))
	close(block)
	<-p.out
	<-p.out
	p.Close()
	if err := p.Connection.Close(); err != nil {
		t.Fatal(err)
	}
	p.updateInFlight(func(s *inFlightState) {
		if s.incoming != 0 {
			t.Errorf("%d incoming requests left", s.incoming)
		}
	})
}
