// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package json

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// PATCH(toolgate): patch 33. Every common string, and strings next to one
// (cut, grown, another case, a byte escaped, one changed, empty), read as a
// value, an object's key and member, an array's element and by String:
// Value gives v1.8.0's decoding (decoderUnmarshal into an any), String what
// it reads byte by byte, Object the key Unmarshal sees, each read as far;
// and a common string read without an escape is the common string itself,
// made without an allocation.
func TestCommonStrings(t *testing.T) {
	var bodies []string
	for _, c := range commonStrings {
		bodies = append(bodies, c, c[:len(c)-1], c[1:], c+"x", "x"+c, strings.ToUpper(c), c+c)
		for i := range len(c) {
			bodies = append(bodies, c[:i]+fmt.Sprintf(`\u%04x`, c[i])+c[i+1:], c[:i]+"\xff"+c[i+1:], c[:i]+"\x01"+c[i+1:], c[:i]+`"`+c[i+1:])
			if c[i] == '/' {
				bodies = append(bodies, c[:i]+`\/`+c[i+1:])
			}
		}
	}
	bodies = append(bodies, "", "a", `\"`, strings.Repeat("x", 200))
	// Which bodies are common is read from the list, not from the lookup:
	// a lookup that misses one of them fails the allocation checks below.
	isCommon := map[string]bool{}
	for i, c := range commonStrings {
		isCommon[c] = true
		if j := commonAt([]byte(c)); j != i {
			t.Fatalf("commonAt(%q) = %d, want %d", c, j, i)
		}
	}
	common := map[string]bool{}
	for _, body := range bodies {
		for _, data := range []string{`"` + body + `"`, `{"` + body + `":"` + body + `"}`, `["` + body + `",1,"` + body + `"]`, `"` + body, `"` + body + `"x`} {
			var want any
			wantErr := decoderUnmarshal([]byte(data), &want)
			p := NewPlain([]byte(data))
			got, ok := p.Value(0)
			if ok && p.End() {
				if wantErr != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("Value(%q) = %#v; v1.8.0: %#v, %v", data, got, want, wantErr)
				}
			}
			checkScans(t, []byte(data))
			if data[0] == '{' {
				var keys []string
				p := NewPlain([]byte(data))
				p.Object(func(key string) bool {
					keys = append(keys, key)
					_, ok := p.Skip(0)
					return ok
				})
				// A key Object reads is its bytes (it reads none with an
				// escape), as string(key) made it before the patch.
				if len(keys) > 0 && keys[0] != body {
					t.Fatalf("Object(%q) read key %q, want %q", data, keys[0], body)
				}
			}
		}
		if isCommon[body] {
			key := []byte(`{"` + body + `":1}`)
			var k string
			if n := testing.AllocsPerRun(100, func() {
				NewPlain(key).Object(func(s string) bool { k = s; return false })
			}); n != 0 || k != body {
				t.Errorf("Object's key %q: %v allocations, want 0", body, n)
			}
			common[body] = true
			data := []byte(`"` + body + `"`)
			var p Plain
			if n := testing.AllocsPerRun(100, func() { p = Plain{b: data}; p.String() }); n != 0 {
				t.Errorf("String of %q: %v allocations, want 0", body, n)
			}
			if n := testing.AllocsPerRun(100, func() { p = Plain{b: data}; p.Value(0) }); n != 0 {
				t.Errorf("Value of %q: %v allocations, want 0", body, n)
			}
			if s, _ := NewPlain(data).String(); s != body || !utf8.ValidString(s) {
				t.Fatalf("String of %q: %q", body, s)
			}
		}
	}
	if len(common) != len(commonStrings) {
		t.Fatalf("%d common strings read, want %d", len(common), len(commonStrings))
	}
	// A common string with an escape is String's to read (and a new
	// string): the same value.
	p := NewPlain([]byte(`"2\u002e0"`))
	if v, ok := p.Value(0); !ok || v != "2.0" || !p.End() {
		t.Fatalf("escaped 2.0: %#v, %v", v, ok)
	}
	if !bytes.Equal([]byte(commonStrings[1]), []byte("2.0")) {
		t.Fatal("commonStrings changed order")
	}
}
