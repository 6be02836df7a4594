// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package json

import (
	"reflect"
	"strings"
	"testing"
)

// PATCH(toolgate): patch 39. Skip's ASCII mark is never set for a value
// with a byte at or above 0x80, is set for any value in bytes that are all
// ASCII, and a Plain of a value so marked (NewASCIIPlain) reads what
// NewPlain reads: the same values, strings and verdicts, at the same
// offsets.

// checkASCII reads data with Skip and, when it reads a value whole, checks
// the mark and reads the value again both ways (String at each string's
// start, Value at the value's).
func checkASCII(t *testing.T, data []byte) {
	t.Helper()
	p := NewPlain(data)
	p.Space()
	v, ok := p.Skip(0)
	if !ok {
		return
	}
	allASCII := func(b []byte) bool {
		for _, c := range b {
			if c >= 0x80 {
				return false
			}
		}
		return true
	}
	if p.ASCII() && !allASCII(v) {
		t.Fatalf("%q: ASCII for a value with a byte at or above 0x80", data)
	}
	if allASCII(data) && !p.ASCII() {
		t.Fatalf("%q: not ASCII for bytes all ASCII", data)
	}
	if !p.ASCII() {
		return
	}
	// The value, and each string in it from its opening quote on.
	a, b := NewASCIIPlain(v), NewPlain(v)
	got, gotOK := a.Value(0)
	want, wantOK := b.Value(0)
	if gotOK != wantOK || a.i != b.i || !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: Value %#v, %v at %d; NewPlain's %#v, %v at %d", v, got, gotOK, a.i, want, wantOK, b.i)
	}
	for i, c := range v {
		if c != '"' {
			continue
		}
		a, b := NewASCIIPlain(v[i:]), NewPlain(v[i:])
		got, gotOK := a.String()
		want, wantOK := b.String()
		if got != want || gotOK != wantOK || a.i != b.i {
			t.Fatalf("%q at %d: String %q, %v at %d; NewPlain's %q, %v at %d", v, i, got, gotOK, a.i, want, wantOK, b.i)
		}
	}
}

var asciiValues = []string{
	`{}`, `[]`, `"abc"`, `{"a":"b"}`, `[1,"x",true,null,{"k":[]}]`,
	`{"content":[{"type":"text","text":"` + strings.Repeat(`line \"a\" \\ \n`, 40) + `"}],"structuredContent":{"content":"x"}}`,
	`"0123456789abcdef0123456789abcdef"`, `"0123456789abcdef01234567\u00e9"`, `"\ud800"`, `"\udc00\ud800"`, `"\u0000\u001f"`,
	"\"caf\xc3\xa9\"", "\"0123456789abcdef\xc3\xa9\"", "\"0123456789abcde\xff\"", "\"0123456\xed\xa0\x80\"",
	"{\"a\":\"x\",\"\xc3\xa9\":1}", "[\"" + strings.Repeat("a", 100) + "\xc3\"]", "\"" + strings.Repeat("a", 17) + "\x80\"",
	"\"a\x01\"", "\"a\x7f\"", `"a\x"`, `"\u12"`, `"a`, "\"abc\"\xff", "\"abcdefghijklmnop\"\xff",
}

// TestASCIIMark: the values, each with a non-ASCII byte, a control byte, a
// quote and a backslash put at every place, and every cut of them.
func TestASCIIMark(t *testing.T) {
	for _, v := range asciiValues {
		checkASCII(t, []byte(v))
		for i := range len(v) {
			checkASCII(t, []byte(v[:i]))
			for _, c := range []string{"\x80", "\xc3\xa9", "\xff", "\x01", "\x7f", `"`, `\`, `\u00e9`} {
				checkASCII(t, []byte(v[:i]+c+v[i:]))
			}
		}
	}
}

// FuzzASCIIMark: checkASCII on any bytes.
//
//	go test -run '^$' -fuzz FuzzASCIIMark -fuzztime 60s ./internal/json/
func FuzzASCIIMark(f *testing.F) {
	for _, v := range asciiValues {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkASCII(t, data)
	})
}
