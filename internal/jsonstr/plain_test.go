package jsonstr

import (
	"math/rand/v2"
	"testing"
)

// plainRef is Plain a byte at a time.
func plainRef(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return i
		}
	}
	return len(s)
}

// TestPlain: Plain and IsPlain against the byte-at-a-time definition, for
// every byte at every place of strings up to 40 bytes and random strings.
func TestPlain(t *testing.T) {
	check := func(s string) {
		t.Helper()
		want := plainRef(s)
		if got := Plain(s); got != want {
			t.Fatalf("Plain(%q) = %d, want %d", s, got, want)
		}
		if got := Plain([]byte(s)); got != want {
			t.Fatalf("Plain([]byte(%q)) = %d, want %d", s, got, want)
		}
		if got := IsPlain(s); got != (want == len(s)) {
			t.Fatalf("IsPlain(%q) = %v", s, got)
		}
	}
	for n := 0; n <= 40; n++ {
		for at := 0; at < n; at++ {
			for c := range 256 {
				b := []byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"[:n])
				b[at] = byte(c)
				check(string(b))
			}
		}
		check("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"[:n])
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, r.IntN(70))
		for i := range b {
			b[i] = byte(0x20 + r.IntN(0x60))
			if r.IntN(40) == 0 {
				b[i] = byte(r.IntN(256))
			}
		}
		check(string(b))
	}
}
