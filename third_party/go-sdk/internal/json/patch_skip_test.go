// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package json

import (
	"bytes"
	"strings"
	"testing"
)

// PATCH(toolgate): patch 40. skipString finds a string's quote and
// backslashes with bytes.IndexByte and checks its runs with runBits: it
// reads what it read byte by byte (skipStringBytewise, patch 11's, which
// patches 11-13's tests compare with v1.8.0's) on strings longer than
// TestStringScans's, whose runs between escapes are long (up to 300 bytes,
// more than one vector of IndexByte), with escaped quotes (the quote found
// first is not the end), and with a byte each run may hold or that ends
// one put at every place of the second and last runs.
func TestSkipStringLongRuns(t *testing.T) {
	specials := []string{`"`, `\\`, `\"`, `\n`, `\u00e9`, `\u12`, `\x`, `\`, "\x00", "\x1f", "\x20", "\x7f", "\x80", "\xc3\xa9", "\xff"}
	for _, n := range []int{7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 300} {
		run := strings.Repeat("line of a file ", n)[:n]
		for _, esc := range []string{`\n`, `\"`, `\\`, `\u00e9`, `\/`} {
			body := run + esc + run + esc + run
			for k := len(run) + len(esc); k <= len(body); k++ {
				for _, s := range specials {
					b := body[:k] + s + body[k:]
					for _, data := range []string{`"` + b + `"`, `"` + b + `"` + b, `"` + b, `"` + b + `\"`} {
						checkScans(t, []byte(data))
					}
				}
			}
		}
	}
}

// TestSpace: Space skips what v1.8.0's (patch 11's) loop skipped: runs of
// each pair of bytes, every byte value, before any byte or the end.
func TestSpace(t *testing.T) {
	old := func(b []byte) int {
		i := 0
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
		return i
	}
	for c := range 256 {
		for d := range 256 {
			for _, b := range [][]byte{{byte(c)}, {byte(c), byte(d)}, {' ', byte(c), '\t', byte(d)}, {byte(c), byte(c), byte(c), byte(d)}} {
				p := NewPlain(b)
				if p.Space(); p.i != old(b) {
					t.Fatalf("Space(%q) at %d; v1.8.0's loop %d", b, p.i, old(b))
				}
			}
		}
	}
}

// TestShortString: shortString finds the first quote, or gives up (-1),
// and gives up on a string with a backslash or a control byte before it:
// Object then reads the key as before (the first quote, a backslash
// refused). Bodies of up to 24 bytes with each of TestStringScans's
// bytes put at every place, and the bytes cut after each.
func TestShortString(t *testing.T) {
	specials := []string{`"`, `\`, "\x00", "\x1f", "\x20", "\x7f", "\x80", "\xff", "é"}
	for n := 0; n <= 24; n++ {
		for k := 0; k <= n; k++ {
			for _, s := range specials {
				body := strings.Repeat("k", k) + s + strings.Repeat("y", n-k) + `"` + "tail"
				for cut := 0; cut <= len(body); cut++ {
					b := []byte(body[:cut])
					j := shortString(b, 0)
					q := bytes.IndexByte(b, '"')
					if j >= 0 && (j != q || bytes.ContainsFunc(b[:q], func(r rune) bool { return r == '\\' || r < 0x20 })) {
						t.Fatalf("shortString(%q) = %d; first quote %d", b, j, q)
					}
					if j < 0 && q >= 0 && q < 8 && len(b) >= 16 && !bytes.ContainsAny(b[:q], "\\\x00\x1f") {
						t.Fatalf("shortString(%q) gave up on a quote at %d", b, q)
					}
				}
			}
		}
	}
}
