package fs

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// formatLineBefore is formatLine as it was before short valid lines were
// appended as they are: the reference of TestFormatLineSameAsBefore.
func formatLineBefore(s *Set, w *window, n int, b []byte, total int) {
	cut := len(b) < total
	if !cut {
		b = bytes.TrimSuffix(b, []byte{'\n'})
		b = bytes.TrimSuffix(b, []byte{'\r'})
	}
	text := strings.ToValidUTF8(string(b), "\uFFFD")
	if utf8.RuneCountInString(text) > MaxLineChars {
		i, c := 0, 0
		for i = range text {
			if c == MaxLineChars {
				break
			}
			c++
		}
		text, cut = text[:i], true
	}
	if cut {
		w.cut++
		text += fmt.Sprintf(" … [line cut: %d bytes in all]", total)
	}
	prefix := strconv.Itoa(n) + "|"
	if w.text.Len()+len(prefix)+len(text)+1 > s.opts.MaxOutputBytes && w.shown > 0 {
		w.capped = true
		return
	}
	if w.shown > 0 {
		w.text.WriteByte('\n')
	}
	w.text.WriteString(prefix)
	w.text.WriteString(text)
	w.shown++
}

// formatLine builds the same text, counts and cap as before for lines of
// every kind: empty, CR LF, at and around MaxLineChars in bytes and in
// runes, multi-byte runes across the limit, invalid UTF-8, cut lines, and
// an output cap reached at various points.
func TestFormatLineSameAsBefore(t *testing.T) {
	long := func(unit string, n int) string { return strings.Repeat(unit, n) }
	lines := []string{"", "\n", "\r\n", "\r", "a", "a\n", "a\r\n", "a\r\r\n", "\ta b\n", "é\n", "\xff\n", "a\xc3\n", "\xe2\x82\n",
		long("a", MaxLineChars), long("a", MaxLineChars) + "\n", long("a", MaxLineChars+1), long("a", MaxLineChars-1) + "\r\n",
		long("é", MaxLineChars/2), long("é", MaxLineChars/2+1), long("é", MaxLineChars), long("é", MaxLineChars+1) + "\n",
		long("a", MaxLineChars-1) + "é", long("a", MaxLineChars-1) + "\xff", long("\xff", MaxLineChars+5), long("€", 700) + "\n",
		long("x", 4*MaxLineChars+4), "line 20 of a small file read by the MCP benchmark\n"}
	for _, maxOut := range []int{1 << 20, 4096, 100, 10} {
		s := &Set{opts: Options{MaxOutputBytes: maxOut}}
		var got, want window
		for i, l := range lines {
			b := []byte(l)
			total := len(b)
			if i%3 == 2 && len(b) > 1 { // a line only partly kept
				total += 7
			}
			s.formatLine(&got, i+1, bytes.Clone(b), total)
			formatLineBefore(s, &want, i+1, bytes.Clone(b), total)
			if got.text.String() != want.text.String() || got.shown != want.shown || got.cut != want.cut || got.capped != want.capped {
				t.Fatalf("max %d, line %d %.40q: got %d shown, %d cut, capped %v, %.80q; before %d, %d, %v, %.80q", maxOut, i+1, l,
					got.shown, got.cut, got.capped, got.text.String(), want.shown, want.cut, want.capped, want.text.String())
			}
		}
	}
}
