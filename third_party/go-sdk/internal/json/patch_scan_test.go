// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package json

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// PATCH(toolgate): String and skipString pass over 8 bytes at a time
// (stops). These tests check that they read exactly what they read byte by
// byte before (stringBytewise and skipStringBytewise, patch 11's code word
// for word), the reading patches 11-13's tests compare with v1.8.0's.

func (p *Plain) stringBytewise() (string, bool) {
	if !p.Next('"') {
		return "", false
	}
	var s strings.Builder // only for a string with an escape
	b := p.b
	for start, i, ascii := p.i, p.i, true; ; {
		if i >= len(b) {
			return "", false
		}
		c := b[i]
		if c != '"' && c != '\\' {
			if c < 0x20 {
				return "", false
			}
			if c >= 0x80 {
				ascii = false
			}
			i++
			continue
		}
		run := b[start:i]
		if !ascii && !utf8.Valid(run) {
			return "", false
		}
		if c == '"' {
			p.i = i + 1
			if s.Cap() == 0 {
				return string(run), true
			}
			s.Write(run)
			return s.String(), true
		}
		if s.Cap() == 0 { // room for the string up to the next quote
			s.Grow(i - start + bytes.IndexByte(b[i:], '"') + 1)
		}
		s.Write(run)
		if i+1 >= len(b) {
			return "", false
		}
		switch e := b[i+1]; e {
		case '"', '\\', '/':
			s.WriteByte(e)
		case 'b':
			s.WriteByte('\b')
		case 'f':
			s.WriteByte('\f')
		case 'n':
			s.WriteByte('\n')
		case 'r':
			s.WriteByte('\r')
		case 't':
			s.WriteByte('\t')
		case 'u':
			if i+6 > len(b) {
				return "", false
			}
			u, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
			if err != nil || u >= 0xd800 && u < 0xe000 {
				return "", false
			}
			s.WriteRune(rune(u))
			i += 4
		default:
			return "", false
		}
		i += 2
		start, ascii = i, true
	}
}

func (p *Plain) skipStringBytewise() ([]byte, bool) {
	if !p.Next('"') {
		return nil, false
	}
	b := p.b
	for i := p.i; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			s := b[p.i:i]
			p.i = i + 1
			return s, true
		case c < 0x20:
			return nil, false
		case c == '\\':
			if i+1 >= len(b) {
				return nil, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+6 > len(b) {
					return nil, false
				}
				for _, h := range b[i+2 : i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return nil, false
					}
				}
				i += 5
			default:
				return nil, false
			}
		}
	}
	return nil, false
}

// checkScans compares String and skipString with their bytewise forms on
// data (a string's opening quote and what follows).
func checkScans(t *testing.T, data []byte) {
	t.Helper()
	p, q := NewPlain(data), NewPlain(data)
	got, ok := p.String()
	want, wantOK := q.stringBytewise()
	if got != want || ok != wantOK || ok && p.i != q.i {
		t.Fatalf("String(%q) = %q, %v at %d; byte by byte %q, %v at %d", data, got, ok, p.i, want, wantOK, q.i)
	}
	p, q = NewPlain(data), NewPlain(data)
	gotB, ok := p.skipString()
	wantB, wantOK := q.skipStringBytewise()
	if !bytes.Equal(gotB, wantB) || ok != wantOK || ok && p.i != q.i {
		t.Fatalf("skipString(%q) = %q, %v at %d; byte by byte %q, %v at %d", data, gotB, ok, p.i, wantB, wantOK, q.i)
	}
}

// TestStringScans: each byte or escape that ends a run, or that a run may
// hold (non-ASCII, invalid UTF-8, DEL, the bytes next to 0x20, '"' and
// '\\'), at every place of strings of up to 40 bytes, and the string cut
// there or after it.
func TestStringScans(t *testing.T) {
	specials := []string{`"`, `\\`, `\"`, `\n`, `\/`, `\u00e9`, `\ud800`, `\u12`, `\x`, `\`, "\x00", "\x01", "\x1f",
		"\x20", "\x21", "\x23", "\x5b", "\x5d", "\x7f", "\x80", "\xff", "\xc3\xa9", "\xc3", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xed\xa0\x80"}
	for n := 0; n <= 40; n++ {
		for k := 0; k <= n; k++ {
			for _, s := range specials {
				body := strings.Repeat("a", k) + s + strings.Repeat("\xc3\xa9", (n-k)%3) + strings.Repeat("b", n-k)
				for _, data := range []string{`"` + body + `"`, `"` + body + `"` + body, `"` + body, `"` + body[:len(body)/2]} {
					checkScans(t, []byte(data))
				}
			}
		}
	}
}

// FuzzStringScans: String and skipString read any bytes as they did byte
// by byte.
//
//	go test -run '^$' -fuzz FuzzStringScans -fuzztime 60s ./internal/json/
func FuzzStringScans(f *testing.F) {
	for _, s := range []string{`"abc"`, `"line 1\nline 2 of a file"`, "\"caf\xc3\xa9 0123456789\"", `"0123456789abcdef\u00e9"`, "\"0123456\x01\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkScans(t, append([]byte{'"'}, data...))
	})
}
