// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// PATCH(toolgate): patch 36. plainValid accepts only what json.Valid
// (v1.8.0's check of a tools/call's arguments) accepts, and accepts all of
// it that starts with a value and nests at most 64 deep: seeds of every
// kind of value and of broken JSON, and 200,000 of their mutations (a byte
// replaced, inserted, removed, a cut, two joined).
func TestPlainValid(t *testing.T) {
	seeds := []string{
		`{}`, `[]`, `""`, `0`, `-0`, `1.5e+3`, `-12.25E-2`, `true`, `false`, `null`,
		`{"path":"/tmp/a b.txt"}`, `{"a":[1,2.5e3,true,null,{"b":"<&>\u2028"}]}`,
		`{"s":"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"}`, "{\"s\":\"\xff\xfe\"}", "{\"s\":\"\u2028é\"}",
		`[1,[2,[3,[4,{"k":{"k":[]}}]]]]`, `{"a":1,"b":{"c":[true,false]},"d":"x"}`, `[ 1 , { "a" : 2 } ]`,
		`{"a":`, `{"a"}`, `{"a":1,}`, `[1,]`, `[01]`, `[1.]`, `[.5]`, `[1e]`, `[-]`, `[+1]`, `[0x1]`,
		`"\x"`, `"\u12g4"`, "\"a\x01b\"", `{'a':1}`, `[tru]`, `[nul]`, `[True]`, `{}{}`, `{} `, ` {}`, `[1 2]`,
		`{"a" 1}`, `{1:2}`, `["a",]`, `[NaN]`, `[Infinity]`, `"unterminated`, `[`, `]`, ``,
	}
	alphabet := []byte("{}[]\",:\\ 0123456789.eE+-truefalsnul\n\tx\x00\x7f\xc3\xa9\xff")
	check := func(a []byte) {
		got, want := plainValid(a), json.Valid(a)
		if got && !want {
			t.Fatalf("plainValid(%q) = true, json.Valid false", a)
		}
		if want && !got && len(a) > 0 && !strings.ContainsRune(" \t\n\r", rune(a[0])) && depth(a) <= 64 {
			t.Fatalf("plainValid(%q) = false, json.Valid true", a)
		}
	}
	for _, s := range seeds {
		check([]byte(s))
	}
	rng := rand.New(rand.NewPCG(3, 6))
	for i := 0; i < 200000; i++ {
		a := []byte(seeds[rng.IntN(len(seeds))])
		for n := 1 + rng.IntN(3); n > 0; n-- {
			switch op := rng.IntN(5); {
			case op == 0 && len(a) > 0:
				a[rng.IntN(len(a))] = alphabet[rng.IntN(len(alphabet))]
			case op == 1:
				k := rng.IntN(len(a) + 1)
				a = append(a[:k:k], append([]byte{alphabet[rng.IntN(len(alphabet))]}, a[k:]...)...)
			case op == 2 && len(a) > 0:
				k := rng.IntN(len(a))
				a = append(a[:k:k], a[k+1:]...)
			case op == 3:
				a = a[:rng.IntN(len(a)+1)]
			case op == 4:
				a = append(a[:len(a):len(a)], seeds[rng.IntN(len(seeds))]...)
			}
		}
		check(a)
	}
	for _, n := range []int{63, 64, 65, 200} {
		check([]byte(strings.Repeat("[", n) + strings.Repeat("]", n)))
		check([]byte(strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n)))
	}
}

// depth is how deep a's arrays and objects nest (brackets outside strings).
func depth(a []byte) int {
	d, most, in := 0, 0, false
	for i := 0; i < len(a); i++ {
		switch c := a[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case in:
		case c == '[' || c == '{':
			d++
			most = max(most, d)
		case c == ']' || c == '}':
			d--
		}
	}
	return most
}

var plainValidSink bool

// PATCH(toolgate): patch 36's figure. plainValid against json.Valid (what
// v1.8.0 ran) on a tools/call's arguments: a gateway's read of a file
// (~40 bytes) and a write of ~1 KB of text with escaped line breaks.
func BenchmarkPlainValid(b *testing.B) {
	var text strings.Builder
	for i := 1; text.Len() < 950; i++ {
		text.WriteString("line " + strings.Repeat("x", i%7) + " of a file written by the MCP benchmark\\n")
	}
	args := []struct{ name, a string }{
		{"40B", `{"path":"/tmp/toolgate-bench/small.txt"}`},
		{"1KB", `{"path":"/tmp/toolgate-bench/notes.txt","content":"` + text.String() + `"}`},
	}
	checks := []struct {
		name string
		f    func([]byte) bool
	}{{"plain", plainValid}, {"json", json.Valid}}
	for _, a := range args {
		arg := []byte(a.a)
		if !plainValid(arg) || !json.Valid(arg) {
			b.Fatalf("%s: not valid", a.name)
		}
		for _, c := range checks {
			b.Run(c.name+"/"+a.name, func(b *testing.B) {
				b.SetBytes(int64(len(arg)))
				b.ReportAllocs()
				for b.Loop() {
					plainValidSink = c.f(arg)
				}
			})
		}
	}
}
