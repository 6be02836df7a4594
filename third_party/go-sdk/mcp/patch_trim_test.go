// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"bytes"
	"testing"
)

// PATCH(toolgate): patch 41. trimLeftSpace and trimSpace are
// bytes.TrimLeft and bytes.Trim of " \t\r\n" (what v1.8.0's copy and
// patches 26 and 30 called): every string of up to 6 bytes over JSON's
// white space, other spaces (\v, \f, 0x85, 0xa0) and other bytes gives
// the same bytes, the same nil or not, and the same start in memory.
func TestTrimSpaceMatchesBytes(t *testing.T) {
	alphabet := []byte{' ', '\t', '\r', '\n', '\v', '\f', 0x85, 0xa0, 'a', '{', '}', 0}
	var b []byte
	var walk func(n int)
	n := 0
	walk = func(left int) {
		check := func(name string, got, want []byte) {
			if !bytes.Equal(got, want) || (got == nil) != (want == nil) || len(got) > 0 && &got[0] != &want[0] {
				t.Fatalf("%s(%q) = %q (nil %v), bytes' %q (nil %v)", name, b, got, got == nil, want, want == nil)
			}
		}
		for _, in := range [][]byte{b, b[:len(b):len(b)], nil} {
			if in == nil && len(b) > 0 {
				continue
			}
			check("trimLeftSpace", trimLeftSpace(in), bytes.TrimLeft(in, " \t\r\n"))
			check("trimSpace", trimSpace(in), bytes.Trim(in, " \t\r\n"))
		}
		n++
		if left == 0 {
			return
		}
		for _, c := range alphabet {
			b = append(b, c)
			walk(left - 1)
			b = b[:len(b)-1]
		}
	}
	b = []byte{}
	walk(6)
	if n < 3_000_000 {
		t.Fatalf("%d strings", n)
	}
}
