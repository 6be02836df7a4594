// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package json

import (
	"bytes"
	"strings"
	"testing"
)

// PATCH(toolgate): patch 20, bytes checked once. SkipValid passes over a
// value Skip has read as Skip does; a string KeptString read is given back
// for the same bytes as String decodes them.

// checkSkipValid: wherever Skip reads a value whole (data, or an object or
// array that holds it), SkipValid ends where Skip ends at data's start,
// with the same bytes (a number or literal ends before a comma, a brace,
// a bracket or white space).
func checkSkipValid(t *testing.T, data []byte) {
	t.Helper()
	for _, c := range []struct {
		in    []byte
		start int
	}{{data, 0}, {[]byte(`{"a":` + string(data) + `,"b":1}`), 5}, {[]byte(`[` + string(data) + ` ]`), 1}} {
		in, start := c.in, c.start
		if whole := NewPlain(in); !whole.skipsAll() {
			continue // SkipValid reads only what Skip read whole
		}
		p := NewPlain(in)
		p.i = start
		want, ok := p.Skip(0)
		if !ok {
			continue
		}
		q := NewPlain(in)
		q.i = start
		if got := q.SkipValid(); !bytes.Equal(got, want) || q.i != p.i {
			t.Fatalf("%q: SkipValid read %q to %d, Skip %q to %d", in, got, q.i, want, p.i)
		}
	}
}

// skipsAll reports whether Skip reads all of p.
func (p *Plain) skipsAll() bool {
	_, ok := p.Skip(0)
	return ok && p.i == len(p.b)
}

// skipValues are values of every kind (strings ending in escaped quotes
// and backslashes, nesting, numbers and literals), valid or not.
var skipValues = []string{
	`{}`, `[]`, `""`, `"a"`, `"\""`, `"\\"`, `"\\\""`, `"a\\\\"`, `"\\\\\"x"`, `"}]"`, `"{["`, `"\u0022"`, `"\/"`,
	`0`, `-12.5e+3`, `true`, `false`, `null`, `{"a":[1,{"b":"c\"}"},[]],"d":{}}`, `[[[[]]],[{}],"]",1,null]`,
	` { "a" : [ 1 , 2 ] } `, "{\"a\":\"line\\nline\",\n\"b\":\t[1,\r\n2]}", strings.Repeat(`[`, 64) + strings.Repeat(`]`, 64),
	`{"content":[{"type":"text","text":"` + strings.Repeat(`line \"a\" \\ \n`, 40) + `"}]}`,
	`{"a":1,}`, `[1,]`, `"a`, `{"a":"\"}`, `tru`, `01`, "\"a\x01\"", strings.Repeat(`[`, 66) + strings.Repeat(`]`, 66),
}

func TestSkipValid(t *testing.T) {
	for _, v := range skipValues {
		checkSkipValid(t, []byte(v))
	}
	// The values and every cut of them (Skip refuses those cut short).
	for _, v := range skipValues {
		for i := range len(v) {
			checkSkipValid(t, []byte(v[:i]))
		}
	}
}

// FuzzSkipValid: TestSkipValid's comparison on any bytes.
//
//	go test -run '^$' -fuzz FuzzSkipValid -fuzztime 60s ./internal/json/
func FuzzSkipValid(f *testing.F) {
	for _, v := range skipValues {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSkipValid(t, data)
	})
}

// checkKept: after KeptString read first (a string's opening quote and
// what follows), String reads second as a Plain that kept nothing reads it:
// the same string, verdict and end.
func checkKept(t *testing.T, first, second []byte) {
	t.Helper()
	data := append(append([]byte(nil), first...), second...)
	p := NewPlain(data)
	if _, ok := p.KeptString(); !ok {
		return
	}
	at := p.i
	p.i = len(first) // where second starts, if first was read whole
	if at != len(first) {
		return
	}
	got, ok := p.String()
	q := NewPlain(data)
	q.i = len(first)
	want, wantOK := q.String()
	if got != want || ok != wantOK || ok && p.i != q.i {
		t.Fatalf("%q then %q: String %q, %v at %d; without kept %q, %v at %d", first, second, got, ok, p.i, want, wantOK, q.i)
	}
}

// TestKeptString: strings after kept ones that are the same, longer,
// shorter, end in an escaped quote or backslash where the kept one ended,
// or are not valid, are read as without them; the same bytes are given the
// kept string.
func TestKeptString(t *testing.T) {
	bodies := []string{``, `a`, `ab`, `a\\`, `a\"`, `a\\\"b`, `\u00e9x`, `line 1\nline 2`, "caf\xc3\xa9", "\xff", `\ud800`, `\x`, "a\x01",
		strings.Repeat(`line \"a\"\n`, 30)}
	kept := 0
	for _, f := range bodies {
		for _, s := range bodies {
			for _, tail := range []string{`"`, `"x`, `\""`, `\\"`, `b"`, ``, `\`} {
				checkKept(t, []byte(`"`+f+`"`), []byte(`"`+s+tail))
			}
		}
		data := []byte(`"` + f + `""` + f + `"`)
		p := NewPlain(data)
		if s, ok := p.KeptString(); ok {
			kept++
			if p.kept[0].s != s || p.kept[0].body == nil && f != "" {
				t.Fatalf("%q: kept %+v", f, p.kept)
			}
			if got, ok := p.String(); !ok || got != s {
				t.Fatalf("%q: read again as %q, %v", f, got, ok)
			}
		}
	}
	if kept < 10 {
		t.Errorf("%d strings kept", kept)
	}
	// No more than maxKept are kept.
	p := NewPlain([]byte(strings.Repeat(`"a"`, 2*maxKept)))
	for range 2 * maxKept {
		p.KeptString()
	}
	if p.nkept != maxKept { // PATCH(toolgate): patch 40 (was len(p.kept))
		t.Errorf("%d strings kept", p.nkept)
	}
}

// FuzzKeptString: checkKept on any two strings.
//
//	go test -run '^$' -fuzz FuzzKeptString -fuzztime 60s ./internal/json/
func FuzzKeptString(f *testing.F) {
	f.Add([]byte(`a\nb`), []byte(`a\nb"`))
	f.Add([]byte(`a\\`), []byte(`a\\\""`))
	f.Fuzz(func(t *testing.T, first, second []byte) {
		checkKept(t, append(append([]byte{'"'}, first...), '"'), append([]byte{'"'}, second...))
	})
}
