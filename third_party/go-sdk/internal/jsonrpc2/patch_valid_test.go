// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package jsonrpc2

import (
	"reflect"
	"testing"
	"unsafe"

	internaljson "github.com/modelcontextprotocol/go-sdk/internal/json"
)

// PATCH(toolgate): patch 20, a frame checked once. DecodeValidMessage
// decodes what DecodeMessage decodes (and so v1.8.0, patch 12's tests) from
// every object Plain reads whole, its params and result slices of it.

// checkValidMessage compares DecodeValidMessage with DecodeMessage on
// data when Plain reads data whole as an object (what a stdio connection
// hands it), and reports whether it compared.
func checkValidMessage(t *testing.T, data []byte) bool {
	t.Helper()
	p := internaljson.NewPlain(data)
	if len(data) == 0 || data[0] != '{' {
		return false
	}
	if _, ok := p.Skip(0); !ok || p.Offset() != len(data) {
		return false
	}
	want, wantErr := DecodeMessage(append([]byte(nil), data...))
	// PATCH(toolgate): patch 39. With Skip's ASCII mark, which a kept
	// result carries; else the same message.
	got, gotErr := DecodeValidASCIIMessage(data, p.ASCII())
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%q: error %v, DecodeMessage %v", data, gotErr, wantErr)
	}
	if r, ok := got.(*Response); ok && r.Extra != nil {
		if k := r.Extra.(*keptResult); k.ascii != p.ASCII() {
			t.Fatalf("%q: kept with ASCII %v, Skip's %v", data, k.ascii, p.ASCII())
		}
		k := *r.Extra.(*keptResult)
		k.ascii = false
		c := *r
		c.Extra = &k
		got = &c
	}
	// Patch 29: a response whose result is kept is marked so (its Extra,
	// which DecodeMessage leaves nil); the rest is DecodeMessage's.
	var w0 wireDecode
	marked := false
	if r, ok := got.(*Response); ok && r.Extra != nil {
		if !w0.plain(data, true) || len(r.Result) == 0 || !r.kept() {
			t.Fatalf("%q: Extra %#v", data, r.Extra)
		}
		c := *r
		c.Extra, marked = nil, true
		got = &c
	} else if ok && len(r.Result) > 0 && w0.plain(data, true) {
		t.Fatalf("%q: a kept result not marked", data)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: %#v, DecodeMessage %#v", data, got, want)
	}
	if r, ok := got.(*Response); marked && ok && (!within(r.Result, data) || cap(r.Result) != len(r.Result)) {
		t.Fatalf("%q: a marked result %q is not a slice of it", data, r.Result)
	}
	// What it keeps of data is data's own bytes, and no more.
	var kept []byte
	switch m := got.(type) {
	case *Request:
		kept = m.Params
	case *Response:
		kept = m.Result
	}
	var w wireDecode
	if len(kept) > 0 && w.plain(data, true) && (!within(kept, data) || cap(kept) != len(kept)) {
		t.Fatalf("%q: kept %q is not a slice of it", data, kept)
	}
	return true
}

// within reports whether b lies in data.
func within(b, data []byte) bool {
	s, d := uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	return s >= d && s+uintptr(len(b)) <= d+uintptr(len(data))
}

// TestDecodeValidMessage: on patch 12's messages (plain and not, every id,
// value and method, members twice, errors) that Plain reads whole,
// DecodeValidMessage decodes the same message or error as DecodeMessage.
func TestDecodeValidMessage(t *testing.T) {
	compared, plain := 0, 0
	for _, in := range plainMessages() {
		if checkValidMessage(t, []byte(in)) {
			compared++
			var w wireDecode
			if w.plain([]byte(in), true) {
				plain++
			}
		}
	}
	if compared < 80 || plain < 60 {
		t.Errorf("%d messages compared, %d plain", compared, plain)
	}
	// A message's result that repeats its text in structuredContent is kept
	// as its bytes.
	in := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\"}\nb\\"}],"structuredContent":{"content":"a\"}\nb\\"}}}`)
	if !checkValidMessage(t, in) {
		t.Fatal("not compared")
	}
	m, _ := DecodeValidMessage(in)
	if r := m.(*Response).Result; string(r) != string(in[33:len(in)-1]) {
		t.Fatalf("result %s", r)
	}
}

// FuzzDecodeValidMessage: checkValidMessage on any bytes.
//
//	go test -run '^$' -fuzz FuzzDecodeValidMessage -fuzztime 60s ./internal/jsonrpc2/
func FuzzDecodeValidMessage(f *testing.F) {
	for _, in := range plainMessages() {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkValidMessage(t, data)
	})
}
