package tool

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestAppendJSONStringMatchesEncodingJSON compares AppendJSONString with
// json.Marshal over every byte at every place of a string longer than two
// words, each character that needs escaping (and each invalid or cut UTF-8
// sequence) across each word boundary, and random strings of an
// adversarial alphabet.
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	check := func(s string) {
		t.Helper()
		want, _ := json.Marshal(s)
		if got := AppendJSONString([]byte("x"), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	}
	pad := "abcdefghijklmnopqrstuvwx"
	for c := range 256 {
		for at := range len(pad) + 1 {
			check(pad[:at] + string([]byte{byte(c)}) + pad[at:])
		}
	}
	specials := []string{"\"", "\\", "<", ">", "&", "\n", "\x00", "\x1f", "\x7f", "\b", "\f", "\r", "\t",
		"\u2028", "\u2029", "é", "😀", "\xff", "\xc3", "\xe2\x80", "\xed\xa0\x80", "\xf0\x9f\x98", "\u2027", "\u202a"}
	for _, sp := range specials {
		for at := range 20 {
			for tail := range 10 {
				check(pad[:at] + sp + pad[:tail])
				check(pad[:at] + sp + sp + pad[:tail])
			}
		}
	}
	alphabet := append(specials, "a", "0", " ", "~", "ab", "12345678")
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		check(b.String())
	}
	for range 2000 {
		b := make([]byte, r.IntN(64))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		check(string(b))
	}
}

// TestSpecial checks special, byte by byte, against its definition.
func TestSpecial(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	look := func(c byte) bool {
		return c < 0x20 || c >= 0x80 || strings.IndexByte(`"\<>&`, c) >= 0
	}
	for n := range 300000 {
		var w uint64
		if n < 256*8 {
			w = 0x4141414141414141&^(0xff<<(8*(n%8))) | uint64(n/8)<<(8*(n%8))
		} else {
			w = r.Uint64()
		}
		m := special(w)
		for i := range 8 {
			c := byte(w >> (8 * i))
			bit := m >> (8 * i) & 0xff
			if (bit == 0x80) != look(c) || bit&0x7f != 0 {
				t.Fatalf("special(%#x): byte %d (%#x): %#x", w, i, c, bit)
			}
		}
	}
}

// FuzzAppendString checks AppendJSONString against encoding/json.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "<a href=\"x\">&amp;</a>", "tab\tnl\nbs\\\x00\x1f\x7f\b\f\r", "\u2028\u2029é😀", "\xff\xfe", "a\xc3", "\xed\xa0\x80", "0123456\n0123457\n\u2028\xe2\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}

// BenchmarkAppendJSONString encodes 8 KiB of `seq` output (a line break
// every 7 or 8 bytes) and of prose.
func BenchmarkAppendJSONString(b *testing.B) {
	var seq strings.Builder
	for i := 1000000; seq.Len() < 8192; i++ {
		seq.WriteString(string(rune('0'+i%10)) + "234567\n")
	}
	prose := strings.Repeat("The quick brown fox jumps over the lazy dog; it said \"hello\".\n", 140)
	for _, c := range []struct{ name, s string }{{"seq", seq.String()}, {"prose", prose}} {
		buf := make([]byte, 0, 2*len(c.s))
		b.Run(c.name+"/AppendJSONString", func(b *testing.B) {
			b.SetBytes(int64(len(c.s)))
			for b.Loop() {
				buf = AppendJSONString(buf[:0], c.s)
			}
		})
		b.Run(c.name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(c.s)))
			var w bytes.Buffer
			enc := json.NewEncoder(&w)
			for b.Loop() {
				w.Reset()
				enc.Encode(c.s)
			}
		})
	}
}
