// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package jsonrpc2

import (
	"encoding/json"
	"errors"
	"math"
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
