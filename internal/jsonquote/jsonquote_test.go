package jsonquote

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppend checks Append against encoding/json.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "plain", "<a href=\"x\">&amp;</a>", "tab\tnl\nbs\\\x00\x1f\x7f\b\f\r", "\u2028\u2029é😀", "\xff\xfe", "a\xc3", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := Append(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}
