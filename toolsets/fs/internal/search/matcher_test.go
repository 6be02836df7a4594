package search

import (
	"bytes"
	"reflect"
	"regexp"
	"testing"
)

// FuzzLineMatcher checks the matcher (literal prefilters, SWAR pair search,
// line bounds) against the obvious line-by-line regexp.
func FuzzLineMatcher(f *testing.F) {
	f.Add("unexpected eof", true, []byte("x\nUnexpected EOF here\r\nno\nunexpected eof"))
	f.Add(`func \w+Context\(`, false, []byte("func fooContext(ctx)\nfunc Context(\n"))
	f.Add("k", true, []byte("\u212A\nK\nk\n"))
	f.Add(`^$`, false, []byte("\n\n\r\na\n"))
	f.Add("ab|cd", true, []byte("xAB\ncD\n"))
	f.Fuzz(func(t *testing.T, pattern string, fold bool, data []byte) {
		lm, err := newLineMatcher(pattern, fold)
		if err != nil {
			return
		}
		p := pattern
		if fold {
			p = "(?i)" + p
		}
		re := regexp.MustCompile(p)
		var want []int
		lines := bytes.Split(data, []byte("\n"))
		if len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		for i, l := range lines {
			if re.Match(trimCR(l)) {
				want = append(want, i+1)
			}
		}
		var got []int
		for pos := 0; ; {
			start, end, ok := lm.nextLine(data, pos)
			if !ok {
				break
			}
			if start < pos || end < start || end > len(data) || end < len(data) && data[end] != '\n' {
				t.Fatalf("bad bounds [%d,%d) from %d", start, end, pos)
			}
			got = append(got, bytes.Count(data[:start], []byte("\n"))+1)
			pos = end + 1
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q fold %v on %q: lines %v, want %v", pattern, fold, data, got, want)
		}
	})
}
