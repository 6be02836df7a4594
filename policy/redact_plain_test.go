package policy

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// refPlainJSON is plainJSON as it was before it skipped the UTF-8 and
// U+2028/U+2029 searches for ASCII bytes: the reference
// TestPlainJSONSame holds it to.
func refPlainJSON(b []byte) bool {
	if bytes.IndexByte(b, '<') >= 0 || bytes.IndexByte(b, '>') >= 0 || bytes.IndexByte(b, '&') >= 0 {
		return false
	}
	for rest := b; ; {
		i := bytes.IndexByte(rest, '\\')
		if i < 0 {
			break
		}
		if i+1 == len(rest) || strings.IndexByte(`"\nrt`, rest[i+1]) < 0 {
			return false
		}
		rest = rest[i+2:]
	}
	return utf8.Valid(b) && !bytes.Contains(b, []byte("\u2028")) && !bytes.Contains(b, []byte("\u2029"))
}

// TestPlainJSONSame: plainJSON answers as refPlainJSON on every string of
// up to three bytes from an alphabet of the bytes it looks at (the
// escapes' letters, a backslash last, the first bytes of U+2028 and of
// invalid UTF-8), on random strings of pieces (U+2028/U+2029 whole and cut,
// invalid UTF-8, escapes, ASCII runs of every length around the 32- and
// 8-byte steps of isASCII) and on randomJSON's values.
func TestPlainJSONSame(t *testing.T) {
	check := func(b []byte) bool {
		t.Helper()
		got, want := plainJSON(b), refPlainJSON(b)
		if got != want {
			t.Fatalf("plainJSON(%q) = %v, the reference %v", b, got, want)
		}
		return got
	}
	alphabet := []byte{'a', '"', '\\', 'n', 'r', 't', 'u', 'b', '/', '<', '>', '&', 0xe2, 0x80, 0xa8, 0xa9, 0xff, 0xc3, 0xa9, '\n', 0}
	var all func(prefix []byte, n int)
	all = func(prefix []byte, n int) {
		check(prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			all(append(prefix[:len(prefix):len(prefix)], c), n-1)
		}
	}
	all(nil, 3)
	pieces := []string{
		"a", "line of text ", `\n`, `\"`, `\\`, `\r`, `\t`, `\/`, `\u0041`, `\b`, `\`, `"`, "<", ">", "&",
		"\u2028", "\u2029", "\u2027", "\u202a", "\xe2\x80", "\xe2", "é", "\xc3", "\xff", "\x80", "\U0001F600", "\xf0\x9f\x98",
		strings.Repeat("x", 7), strings.Repeat("y", 31), strings.Repeat("z", 33), "{", "}", ":", ",", "\x00", "\x7f",
	}
	rng := rand.New(rand.NewPCG(30, 46))
	plain := 0
	for range 300000 {
		var b []byte
		for range rng.IntN(12) {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		if check(b) {
			plain++
		}
		// One non-ASCII byte at every place of an ASCII text.
		if len(b) > 0 && rng.IntN(8) == 0 {
			c := append([]byte(nil), b...)
			c[rng.IntN(len(c))] = []byte{0x80, 0xe2, 0xff, 0xc3}[rng.IntN(4)]
			check(c)
		}
	}
	for range 50000 {
		var b strings.Builder
		randomJSON(rng, &b, 0)
		if check([]byte(b.String())) {
			plain++
		}
	}
	if plain < 50000 {
		t.Errorf("only %d inputs were plain: the test says little", plain)
	}
}
