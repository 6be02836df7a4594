// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package jsonrpc2

import (
	"bytes"
	"context"
	"reflect"
	"testing"
)

// PATCH(toolgate): patch 39. A call's params laid after room for its head
// (CallFramed) are written around in place, in v1.8.0's bytes.

// framedCall is markedRequest.fill of params laid in a buffer after room
// bytes, with after bytes of capacity after them.
func framedCall(id ID, method string, params []byte, room, after int) *Request {
	f := append(make([]byte, room, room+len(params)+after), params...)
	return new(markedRequest).fill(id, method, Compact(f[room:]), f)
}

// TestEncodeFramedCallMatchesV180: every id, method and params of patch
// 9's tests, with the room CallRoom gives, less, none, and no room after
// them, encode as v1.8.0 encodes the same request, twice over; the params
// are not changed, and with room the message is the buffer's own bytes.
func TestEncodeFramedCallMatchesV180(t *testing.T) {
	inPlace := 0
	for _, id := range patchIDs {
		if !id.IsValid() {
			continue
		}
		for _, method := range patchMethods {
			for _, params := range patchResults {
				r0, err := NewCall(id, method, params)
				if err != nil || len(r0.Params) == 0 {
					continue
				}
				want := encodeV180(t, r0)
				room := CallRoom(method)
				for _, c := range []struct{ room, after int }{{room, 2}, {room + 5, 9}, {room - 1, 2}, {room / 2, 2}, {0, 2}, {room, 1}, {room, 0}} {
					if c.room < 0 {
						continue
					}
					r := framedCall(id, method, r0.Params, c.room, c.after)
					for range 2 {
						got, err := EncodeMessage(r)
						if err != nil || !bytes.Equal(got, want) {
							t.Fatalf("id %v, method %q, params %s, room %d, %d after:\n got %s (%v)\nwant %s", id.value, method, r0.Params, c.room, c.after, got, err, want)
						}
						if !bytes.Equal(r.Params, r0.Params) || cap(r.Params) != len(r.Params) {
							t.Fatalf("params %s (cap %d), were %s", r.Params, cap(r.Params), r0.Params)
						}
						f := r.Extra.(*compactParams).frame
						if within(got, f[:cap(f)]) {
							inPlace++
							if cap(got)-len(got) < 1 {
								t.Fatalf("%s: no room for a newline", got)
							}
						}
					}
				}
			}
		}
	}
	if inPlace < 100 {
		t.Errorf("%d written in place", inPlace)
	}
	// Params replaced are not the buffer's: compacted as before.
	r := framedCall(Int64ID(3), "tools/call", []byte(`{"a":1}`), CallRoom("tools/call"), 2)
	r.Params = []byte(` { "b" : 2 } `)
	if got, err := EncodeMessage(r); err != nil || string(got) != `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"b":2}}` {
		t.Errorf("replaced params: %s, %v", got, err)
	}
}

// TestCallFramed: CallFramed sends what CallCompact sends of the same
// params, and its call gets its response; a buffer without room after the
// params goes as CallCompact's params.
func TestCallFramed(t *testing.T) {
	p := newInflightConn(func(context.Context, *Request) (any, error) { return nil, nil }, nil)
	defer p.Close()
	params := `{"name":"t","arguments":{"a":"\u00e9"}}`
	room := CallRoom("tools/call")
	framed := append(make([]byte, room, room+len(params)+2), params...)
	short := append(make([]byte, room, room+len(params)), params...) // no room after
	ac1 := p.CallCompact(context.Background(), "tools/call", Compact(params))
	ac2 := p.CallFramed(context.Background(), "tools/call", framed)
	ac3 := p.CallFramed(context.Background(), "tools/call", short)
	var sent [3][]byte
	for i := range sent {
		m := (<-p.out).(*Request)
		if string(m.Params) != params || reflect.TypeOf(m.Extra) != reflect.TypeOf(&compactParams{}) {
			t.Errorf("request %d: %#v", i, m)
		}
		sent[i], _ = EncodeMessage(m)
	}
	for i, id := range []string{`"id":1`, `"id":2`, `"id":3`} {
		if want := bytes.Replace(sent[0], []byte(`"id":1`), []byte(id), 1); !bytes.Equal(sent[i], want) {
			t.Errorf("call %d wrote %s; CallCompact %s", i, sent[i], sent[0])
		}
	}
	if !within(sent[1], framed[:cap(framed)]) || within(sent[2], short[:cap(short)]) {
		t.Error("the framed call not written in its buffer, or the one without room written in its")
	}
	for _, ac := range []*AsyncCall{ac1, ac2, ac3} {
		p.in <- &Response{ID: ac.ID(), Result: []byte(`{"ok":true}`)}
		var got map[string]any
		if err := ac.Await(context.Background(), &got); err != nil || got["ok"] != true {
			t.Errorf("Await: %v, %v", got, err)
		}
	}
}
