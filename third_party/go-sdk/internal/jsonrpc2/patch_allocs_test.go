// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package jsonrpc2

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// PATCH(toolgate): patch 38. Allocations off a relayed tools/call: an
// integer id is parsed by hand and kept as an integer, a method MCP names
// is the common string, NewCall's and DecodeValidMessage's marks are
// allocated with their message, processResult's notDone is a pointer, and
// CallCompact sends Compact params without an interface. These tests check
// that what is decoded, written and seen is v1.8.0's.

// TestPlainIDMatchesV180: every integer id a plain message may carry (up
// to 15 digits, signed, zero) decodes to MakeID(float64) of it, as v1.8.0's
// decoder made it, in a request and in a response.
func TestPlainIDMatchesV180(t *testing.T) {
	ids := []string{"0", "-0", "1", "9", "255", "256", "257", "-1", "-256", "4096", "123456789",
		"999999999999999", "-999999999999999", "100000000000000", "9007199254740"}
	for _, id := range ids {
		for _, data := range []string{
			`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{}}`,
			`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[]}}`,
		} {
			want, wantErr := decodeMessageV180([]byte(data))
			got, gotErr := DecodeMessage([]byte(data))
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %#v, %v; v1.8.0 %#v, %v", data, got, gotErr, want, wantErr)
			}
			valid, validErr := DecodeValidMessage([]byte(data))
			if r, ok := valid.(*Response); ok {
				if !r.kept() {
					t.Errorf("%s: result not marked kept", data)
				}
				c := *r
				c.Extra = nil
				valid = &c
			}
			if fmt.Sprint(validErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(valid, want) {
				t.Errorf("%s: DecodeValidMessage %#v, %v; v1.8.0 %#v, %v", data, valid, validErr, want, wantErr)
			}
		}
	}
}

// TestCommonMethod: a method that spells one of MCP's names decodes to
// that string, and any other to its own copy (the same text).
func TestCommonMethod(t *testing.T) {
	for _, m := range []string{"tools/call", "notifications/progress", "tools/list", "x"} {
		data := []byte(`{"jsonrpc":"2.0","id":1,"method":"` + m + `"}`)
		msg, err := DecodeValidMessage(data)
		if err != nil || msg.(*Request).Method != m {
			t.Errorf("%s: %#v, %v", data, msg, err)
		}
	}
}

// TestNewCallMarked: NewCall's request writes as v1.8.0's EncodeMessage
// wrote it, and so does one whose Params were replaced (the mark then no
// longer matches, and the new params are compacted).
func TestNewCallMarked(t *testing.T) {
	for _, params := range []any{Compact(`{"name":"t","arguments":{"a":1}}`), map[string]any{"a": []int{1, 2}}, json2(`{ "x" : 1 }`)} {
		call, err := NewCall(Int64ID(300), "tools/call", params)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := call.Extra.(*compactParams); !ok {
			t.Fatalf("NewCall(%v): Extra %#v", params, call.Extra)
		}
		checkEncodeV180(t, call)
		call.Params = []byte(`{ "y" : [ 1 ] }`)
		checkEncodeV180(t, call)
	}
}

type json2 []byte

func (j json2) MarshalJSON() ([]byte, error) { return j, nil }

// checkEncodeV180 compares EncodeMessage with v1.8.0's encoding of msg (an
// encoder over wireCombined).
func checkEncodeV180(t *testing.T, msg Message) {
	t.Helper()
	wire := wireCombined{VersionTag: wireVersion}
	msg.marshal(&wire)
	want, err := jsonMarshal(&wire)
	if err != nil {
		t.Fatal(err)
	}
	got, err := EncodeMessage(msg)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("EncodeMessage = %s, %v; v1.8.0 %s", got, err, want)
	}
}

// TestCallCompact: CallCompact sends what Call sends of the same Compact
// params (the same message, marked as NewCall marks it), and its call gets
// its response; empty params go as Call's would.
func TestCallCompact(t *testing.T) {
	p := newInflightConn(func(context.Context, *Request) (any, error) { return nil, nil }, nil)
	defer p.Close()
	params := Compact(`{"name":"t","arguments":{"a":"\u00e9"}}`)
	ac1 := p.Call(context.Background(), "tools/call", params)
	ac2 := p.CallCompact(context.Background(), "tools/call", params)
	m1, m2 := (<-p.out).(*Request), (<-p.out).(*Request)
	e1, _ := EncodeMessage(m1)
	e2, _ := EncodeMessage(m2)
	if want := bytes.Replace(e1, []byte(`"id":1`), []byte(`"id":2`), 1); !bytes.Equal(e2, want) {
		t.Errorf("CallCompact wrote %s; Call %s", e2, e1)
	}
	if m2.Method != m1.Method || !bytes.Equal(m2.Params, m1.Params) || reflect.TypeOf(m2.Extra) != reflect.TypeOf(m1.Extra) {
		t.Errorf("CallCompact's request %#v; Call's %#v", m2, m1)
	}
	for _, ac := range []*AsyncCall{ac1, ac2} {
		p.in <- &Response{ID: ac.ID(), Result: []byte(`{"ok":true}`)}
		var got map[string]any
		if err := ac.Await(context.Background(), &got); err != nil || got["ok"] != true {
			t.Errorf("Await: %v, %v", got, err)
		}
	}
	ac3 := p.CallCompact(context.Background(), "m", nil)
	ac4 := p.Call(context.Background(), "m", Compact(nil))
	r3, r4 := ac3.Await(context.Background(), nil), ac4.Await(context.Background(), nil)
	if fmt.Sprint(r3) != fmt.Sprint(r4) {
		t.Errorf("CallCompact of no params: %v; Call: %v", r3, r4)
	}
}

// TestRequestNotDone: the context processResult writes a response with is
// notDone{req.ctx}: its values, no Done, no Err, no deadline.
func TestRequestNotDone(t *testing.T) {
	type key struct{}
	ctx, cancel := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), time.Unix(1, 0))
	defer cancel()
	req := &incomingRequest{ctx: ctx}
	var got, want context.Context = (*requestNotDone)(req), notDone{req.ctx}
	if got.Value(key{}) != want.Value(key{}) || got.Done() != want.Done() || got.Err() != want.Err() {
		t.Errorf("requestNotDone: %v %v %v; notDone %v %v %v", got.Value(key{}), got.Done(), got.Err(), want.Value(key{}), want.Done(), want.Err())
	}
	d1, ok1 := got.Deadline()
	d2, ok2 := want.Deadline()
	if d1 != d2 || ok1 != ok2 {
		t.Errorf("Deadline %v %v; notDone %v %v", d1, ok1, d2, ok2)
	}
}
