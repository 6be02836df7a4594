// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"

	internaljson "github.com/modelcontextprotocol/go-sdk/internal/json"
	"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2"
)

// PATCH(toolgate): patch 29, a kept result is not copied. A response read
// from a frame (jsonrpc2.DecodeValidMessage) is decoded into a
// CallToolResult as v1.8.0 decodes its result's bytes, and a result decoded
// plain keeps the frame's bytes rather than a copy of them.

// checkKept decodes in as the result of a response in a frame read plain,
// compares the result with v1.8.0's UnmarshalJSON of a copy of in, and
// reports whether the result kept the frame's bytes.
func checkKept(t *testing.T, in string) (compared, kept bool) {
	t.Helper()
	frame := []byte(`{"jsonrpc":"2.0","id":1,"result":` + in + `}`)
	p := internaljson.NewPlain(frame)
	if _, ok := p.Skip(0); !ok || p.Offset() != len(frame) {
		return false, false // not a frame a stdio connection reads plain
	}
	// PATCH(toolgate): patch 39. With Skip's ASCII mark, as a stdio
	// connection reads it (never set for a frame with a byte at or above
	// 0x80), and decoded the same with the mark and without it.
	ascii := p.ASCII()
	if ascii && strings.IndexFunc(string(frame), func(r rune) bool { return r >= 0x80 }) >= 0 {
		t.Fatalf("%q: ASCII", frame)
	}
	m, err := jsonrpc2.DecodeValidASCIIMessage(frame, ascii)
	if err != nil {
		return false, false
	}
	resp := m.(*jsonrpc2.Response)
	var got CallToolResult
	gotErr := jsonrpc2.UnmarshalResult(resp, &got)
	if m2, err := jsonrpc2.DecodeValidASCIIMessage(append([]byte(nil), frame...), false); err == nil {
		var got2 CallToolResult
		err2 := jsonrpc2.UnmarshalResult(m2.(*jsonrpc2.Response), &got2)
		if (err2 == nil) != (gotErr == nil) || !reflect.DeepEqual(got2.Content, got.Content) || !reflect.DeepEqual(got2.StructuredContent, got.StructuredContent) ||
			got2.IsError != got.IsError || got2.DecodedPlain() != got.DecodedPlain() || string(got2.DecodedJSON()) != string(got.DecodedJSON()) {
			t.Fatalf("%q: ASCII %v: %v %s; without the mark %v %s", in, ascii, gotErr, dump(got), err2, dump(got2))
		}
	} else {
		t.Fatal(err)
	}
	var want CallToolResult
	wantErr := unmarshalV180(&want, append([]byte(nil), resp.Result...))
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%q: error %v, v1.8.0 %v", in, gotErr, wantErr)
	}
	if gotErr != nil {
		return true, false
	}
	// Before patch 29: internal/json's Unmarshal of the result's bytes.
	var before CallToolResult
	if err := internaljson.Unmarshal(append([]byte(nil), resp.Result...), &before); err != nil {
		t.Fatalf("%q: %v", in, err)
	}
	if string(got.DecodedJSON()) != string(before.DecodedJSON()) || got.DecodedPlain() != before.DecodedPlain() {
		t.Fatalf("%q: kept %q (plain %v), before %q (plain %v)", in, got.DecodedJSON(), got.DecodedPlain(), before.DecodedJSON(), before.DecodedPlain())
	}
	d := got.DecodedJSON()
	kept = len(d) > 0 && inside(d, frame)
	if kept && ascii {
		keptASCII++
	}
	if kept != got.DecodedPlain() || kept && cap(d) != len(d) {
		t.Fatalf("%q: kept %v, plain %v, cap %d of %d", in, kept, got.DecodedPlain(), cap(d), len(d))
	}
	got.decoded, got.plain = nil, false
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n%s\nv1.8.0\n%s", in, dump(got), dump(want))
	}
	return true, kept
}

// keptASCII counts the results checkKept decoded kept with the ASCII mark.
var keptASCII int

// inside reports whether b lies in data.
func inside(b, data []byte) bool {
	s, d := uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	return s >= d && s+uintptr(len(b)) <= d+uintptr(len(data))
}

// TestUnmarshalKept: patch 11's results, plain and not, valid and not, as a
// response's result in a frame: decoded as v1.8.0 decodes them, with the
// bytes and the plain mark of internal/json's Unmarshal, kept as the frame's
// own bytes exactly when decoded plain.
func TestUnmarshalKept(t *testing.T) {
	compared, kept := 0, 0
	keptASCII = 0
	for _, in := range append(plainInputs(), plainInvalid...) {
		c, k := checkKept(t, in)
		if c {
			compared++
		}
		if k {
			kept++
		}
	}
	if compared < 600 || kept < 300 || keptASCII < 100 || keptASCII == kept {
		t.Errorf("%d compared, %d kept, %d of them with the ASCII mark", compared, kept, keptASCII)
	}
	// A response not marked (DecodeMessage's, or a Result replaced) is
	// copied as before.
	frame := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}`)
	for _, m := range []func() *jsonrpc2.Response{
		func() *jsonrpc2.Response { m, _ := jsonrpc2.DecodeMessage(frame); return m.(*jsonrpc2.Response) },
		func() *jsonrpc2.Response {
			m, _ := jsonrpc2.DecodeValidMessage(frame)
			r := m.(*jsonrpc2.Response)
			c := append([]byte(nil), r.Result...)
			r.Result = c[:len(c):len(c)] // another's bytes, though they could be kept
			return r
		},
	} {
		r := m()
		var got CallToolResult
		if err := jsonrpc2.UnmarshalResult(r, &got); err != nil || !got.DecodedPlain() {
			t.Fatal(err)
		}
		if inside(got.DecodedJSON(), frame) || inside(got.DecodedJSON(), r.Result) {
			t.Errorf("%s: kept", got.DecodedJSON())
		}
	}
}

// FuzzUnmarshalKept: checkKept on any result bytes.
//
//	go test -run '^$' -fuzz FuzzUnmarshalKept -fuzztime 60s ./mcp/
func FuzzUnmarshalKept(f *testing.F) {
	for _, in := range plainInputs() {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		checkKept(t, in)
	})
}
