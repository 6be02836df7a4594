package policy

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// scanByTwo is a reference for prefilter.scan: one triple every other
// byte, each from a load of four bytes, tested against the first set only
// (f.has), as scan was before it read three triples per load and kept a
// second set.
func (f *prefilter) scanByTwo(s string, may []bool) {
	if len(s) == 0 {
		return
	}
	i := 0
	var high uint32
	if f.triples {
		for ; i+3 < len(s); i += 2 {
			b := s[i : i+4]
			w := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
			high |= w
			if f.has(triple(w & 0xFFFFFF)) {
				f.match(s[max(i, 1)-1:], may)
				f.match(s[i:], may)
			}
		}
		i = max(i, 1) - 1
	} else {
		for ; i < len(s)-1; i++ {
			high |= uint32(s[i])
			if f.has(uint(s[i])<<8 | uint(s[i+1])) {
				f.match(s[i:], may)
			}
		}
	}
	for ; i < len(s); i++ {
		high |= uint32(s[i])
		f.match(s[i:], may)
	}
	if high&0x80808080 != 0 {
		for _, i := range f.fold {
			may[i] = true
		}
	}
}

// TestScanMatchesByTwo: scan finds what scanByTwo found, pattern for
// pattern, in random texts of every length up to 64 made of pieces of the
// default patterns' literals, digits, line breaks and non-ASCII runes, at
// every offset of a longer text.
func TestScanMatchesByTwo(t *testing.T) {
	r, err := NewRedactor(DefaultSecrets())
	if err != nil {
		t.Fatal(err)
	}
	f := r.filter
	if !f.triples {
		t.Fatal("the default patterns' prefilter reads pairs: this test needs triples")
	}
	pieces := []string{"AKIA", "ASIA", "gh", "p_", "github_pat_", "sk-", "sk", "-", "xox", "b-", "AIza", "eyJ", ".eyJ", "://", ":/",
		"password", "PASSWD", "secret", "api", "_", "key", "KEY", "token", "access", "auth", "PRIVATE KEY-----", "ho_", "hp_",
		"\u212A", "\u017F", "é", "0123456789", "156771\n", "\n", " ", "\"", "\\n", "x", "a", "rk_live_"}
	rng := rand.New(rand.NewPCG(3, 4))
	found := 0
	for range 30000 {
		var b strings.Builder
		for b.Len() < 64 {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := b.String()
		for _, s := range []string{text[:rng.IntN(len(text)+1)], text[rng.IntN(len(text)):]} {
			got, want := make([]bool, len(r.patterns)), make([]bool, len(r.patterns))
			f.scan(s, got)
			f.scanByTwo(s, want)
			if !slices.Equal(got, want) {
				t.Fatalf("scan(%q) = %v, scanByTwo %v", s, got, want)
			}
			if slices.Contains(got, true) {
				found++
			}
		}
	}
	if found == 0 {
		t.Fatal("no text held a literal: the test compares nothing")
	}
}

// scanInline is a reference for prefilter.scan: the loop before the
// triples' tests moved to nextTriple, three triples from each load of
// eight bytes and each hit compared inside the loop.
func (f *prefilter) scanInline(s string, may []bool) {
	if len(s) == 0 {
		return
	}
	i := 0
	var high uint64
	if f.triples {
		for ; i+7 < len(s); i += 6 {
			b := s[i : i+8]
			w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
				uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
			high |= w
			if f.hasTriple(uint32(w) & 0xFFFFFF) {
				f.matchAround(s, i, may)
			}
			if f.hasTriple(uint32(w>>16) & 0xFFFFFF) {
				f.matchAround(s, i+2, may)
			}
			if f.hasTriple(uint32(w>>32) & 0xFFFFFF) {
				f.matchAround(s, i+4, may)
			}
		}
		for ; i+3 < len(s); i += 2 {
			b := s[i : i+4]
			w := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
			high |= uint64(w)
			if f.hasTriple(w & 0xFFFFFF) {
				f.matchAround(s, i, may)
			}
		}
		i = max(i, 1) - 1
	} else {
		for ; i < len(s)-1; i++ {
			high |= uint64(s[i])
			if f.has(uint(s[i])<<8 | uint(s[i+1])) {
				f.match(s[i:], may)
			}
		}
	}
	for ; i < len(s); i++ {
		high |= uint64(s[i])
		f.match(s[i:], may)
	}
	if high&0x8080808080808080 != 0 {
		for _, i := range f.fold {
			may[i] = true
		}
	}
}

// TestScanMatchesInline: scan finds what scanInline found, pattern for
// pattern, and what the definition (mayOccur) says, in random texts of
// every length up to 300 made of prose, the default patterns' literals
// and pieces of them, whole secrets, line breaks, JSON escapes and
// non-ASCII runes (one at the end of an eight-byte word too), so that
// literals and secrets fall at every offset of a load, at the text's
// start and end, and several in one text (a hit and the scan resumed
// after it); and the whole redaction (Redact, Quiet, RedactJSON of the
// text as a JSON string) gives what the reference redaction gives.
func TestScanMatchesInline(t *testing.T) {
	r, err := NewRedactor(DefaultSecrets())
	if err != nil {
		t.Fatal(err)
	}
	_, ref := reference(t, DefaultSecrets())
	f := r.filter
	pieces := []string{"AKIA", "ASIA", "gh", "p_", "github_pat_", "sk-", "sk", "-", "xox", "b-", "AIza", "eyJ", ".eyJ", "://", ":/",
		"password", "PASSWD", "secret", "SeCrEt", "api", "_", "key", "KEY", "token", "access", "auth", "PRIVATE KEY-----", "ho_", "hp_",
		"\u212A", "\u017F", "é", "0123456789", "156771\n", "\n", " ", "\"", "\\n", "x", "a", "rk_live_", "line 1 of a small file read by the MCP benchmark\n",
		"AKIAIOSFODNN7EXAMPLE", "ghp_" + strings.Repeat("a1B2", 9), "sk-ant-api03-abcdefghijklmnopqrstuvwx", "PassWord=hunter2hunter2",
		"https://u:pw123@host", "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4", "xoxp-1234567890-abc", "sk_live_0123456789abcdefghij",
		"AIza" + strings.Repeat("x", 35), "-----BEGIN EC PRIVATE KEY-----\nabc\n-----END EC PRIVATE KEY-----", "\xff", "1234567\u00e9"}
	rng := rand.New(rand.NewPCG(5, 6))
	found := 0
	for range 20000 {
		var b strings.Builder
		n := rng.IntN(300)
		for b.Len() < n {
			if rng.IntN(3) == 0 {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			} else {
				b.WriteString("some prose, "[:1+rng.IntN(12)])
			}
		}
		text := b.String()
		for _, s := range []string{text, text[:rng.IntN(len(text)+1)], text[rng.IntN(len(text)+1):]} {
			got, want := make([]bool, len(r.patterns)), make([]bool, len(r.patterns))
			f.scan(s, got)
			f.scanInline(s, want)
			if !slices.Equal(got, want) {
				t.Fatalf("scan(%q) = %v, scanInline %v", s, got, want)
			}
			sameScan(t, r, s)
			sameRedaction(t, r, ref, s)
			if slices.Contains(got, true) {
				found++
			}
		}
	}
	if found < 10000 {
		t.Fatalf("%d texts held a literal: the test compares too little", found)
	}
}
