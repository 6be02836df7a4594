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
