package patch

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// ApplyError is a hunk that could not be placed in the file.
type ApplyError struct {
	Hunk    int    // which hunk of the file, from 1
	Line    int    // the hunk's line in the patch
	Context string // the hunk's "@@" context line, if it could not be found; else ""
	Lines   []string
	// Near lists the lines of the file (from 1) where the first line of
	// the hunk occurs, to help write a hunk that matches.
	Near []int
	Msg  string
}

func (e *ApplyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hunk %d (patch line %d): %s", e.Hunk, e.Line, e.Msg)
	if len(e.Lines) > 0 {
		b.WriteString(":")
		for _, l := range e.Lines {
			b.WriteString("\n\t")
			b.WriteString(clip(l))
		}
	}
	if len(e.Near) > 0 {
		fmt.Fprintf(&b, "\nits first line is at line(s) %s of the file, but the lines after it differ", joinInts(e.Near))
	}
	return b.String()
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

type replacement struct {
	hunk     int
	start, n int // the old lines [start, start+n)
	lines    []string
}

// ApplyHunks applies the hunks of an update to the original content of a
// file and returns the new content, which ends with a newline. A file whose
// lines end with CRLF keeps CRLF. Its errors are *ApplyError.
func ApplyHunks(original string, hunks []Hunk) (string, error) {
	eol := "\n"
	if crlf(original) {
		eol = "\r\n"
	}
	lines := strings.Split(original, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	var reps []replacement
	next := 0 // hunks are searched for after the previous one
	for hi, h := range hunks {
		fail := func(msg string, lines []string) error {
			return &ApplyError{Hunk: hi + 1, Line: h.Line, Lines: lines, Msg: msg}
		}
		if h.Context != "" {
			at, ok := seek(lines, []string{h.Context}, next, false)
			if !ok {
				err := fail("could not find its context line", []string{h.Context}).(*ApplyError)
				err.Context = h.Context
				return "", err
			}
			next = at + 1
		}
		if len(h.Old) == 0 {
			at := len(lines)
			if h.Context != "" && !h.EOF {
				at = next
			}
			reps = append(reps, replacement{hunk: hi + 1, start: at, lines: h.New})
			next = at
			continue
		}
		old, repl := h.Old, h.New
		at, ok := seek(lines, old, next, h.EOF)
		if !ok && old[len(old)-1] == "" {
			// A trailing empty line stands for the file's final newline.
			old = old[:len(old)-1]
			if len(repl) > 0 && repl[len(repl)-1] == "" {
				repl = repl[:len(repl)-1]
			}
			at, ok = seek(lines, old, next, h.EOF)
		}
		if !ok {
			err := fail("could not find these lines in the file", h.Old).(*ApplyError)
			err.Near = near(lines, h.Old)
			return "", err
		}
		if kept, ok := keepContext(h, lines[at:at+len(old)]); ok {
			repl = kept
		}
		reps = append(reps, replacement{hunk: hi + 1, start: at, n: len(old), lines: repl})
		next = at + len(old)
	}
	sort.SliceStable(reps, func(i, j int) bool { return reps[i].start < reps[j].start })
	for i := 1; i < len(reps); i++ {
		if prev := reps[i-1]; reps[i].start < prev.start+prev.n {
			return "", &ApplyError{Hunk: reps[i].hunk, Line: hunks[reps[i].hunk-1].Line,
				Msg: fmt.Sprintf("it overlaps hunk %d (the same lines would change twice)", prev.hunk)}
		}
	}
	var b strings.Builder
	b.Grow(len(original) + 64)
	pos := 0
	write := func(ls []string) {
		for _, l := range ls {
			b.WriteString(l)
			b.WriteString(eol)
		}
	}
	for _, r := range reps {
		write(lines[pos:r.start])
		write(r.lines)
		pos = r.start + r.n
	}
	write(lines[pos:])
	return b.String(), nil
}

// keepContext rebuilds the new lines of h with the file's own text for the
// context lines, matched (maybe loosely) at matched. A context line past
// matched (the empty line standing for the final newline) is dropped. ok is
// false when h has no usable Ops.
func keepContext(h Hunk, matched []string) ([]string, bool) {
	var olds, news int
	for i := 0; i < len(h.Ops); i++ {
		switch h.Ops[i] {
		case ' ':
			olds++
			news++
		case '-':
			olds++
		case '+':
			news++
		default:
			return nil, false
		}
	}
	if olds != len(h.Old) || news != len(h.New) {
		return nil, false
	}
	out := make([]string, 0, len(h.New))
	o, n := 0, 0
	for i := 0; i < len(h.Ops); i++ {
		switch h.Ops[i] {
		case ' ':
			if o < len(matched) {
				out = append(out, matched[o])
			}
			o++
			n++
		case '-':
			o++
		case '+':
			out = append(out, h.New[n])
			n++
		}
	}
	return out, true
}

// crlf reports whether most line endings of s are CRLF.
func crlf(s string) bool {
	n := strings.Count(s, "\n")
	return n > 0 && strings.Count(s, "\r\n")*2 > n
}

// seek finds pattern in lines at or after start, with decreasing
// strictness (exact, then without trailing whitespace, then without
// surrounding whitespace, then with typographic punctuation as ASCII). With
// eof it first tries the end of the file.
func seek(lines, pattern []string, start int, eof bool) (int, bool) {
	if len(pattern) > len(lines) {
		return 0, false
	}
	starts := []int{start}
	if eof {
		starts = []int{len(lines) - len(pattern), start}
	}
	for _, norm := range []func(string) string{
		nil,
		func(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) },
		strings.TrimSpace,
		normalise,
	} {
		ls, ps := lines, pattern
		if norm != nil {
			ls, ps = mapStrings(lines, norm), mapStrings(pattern, norm)
		}
		for _, s := range starts {
			for i := s; i+len(ps) <= len(ls); i++ {
				if equal(ls[i:i+len(ps)], ps) {
					return i, true
				}
			}
		}
	}
	return 0, false
}

func mapStrings(ss []string, f func(string) string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

func equal(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var punctuation = strings.NewReplacer(
	"\u2010", "-", "\u2011", "-", "\u2012", "-", "\u2013", "-", "\u2014", "-", "\u2015", "-", "\u2212", "-",
	"\u2018", "'", "\u2019", "'", "\u201A", "'", "\u201B", "'",
	"\u201C", `"`, "\u201D", `"`, "\u201E", `"`, "\u201F", `"`,
	"\u00A0", " ", "\u2002", " ", "\u2003", " ", "\u2004", " ", "\u2005", " ", "\u2006", " ",
	"\u2007", " ", "\u2008", " ", "\u2009", " ", "\u200A", " ", "\u202F", " ", "\u205F", " ", "\u3000", " ",
)

// normalise trims s and writes typographic dashes, quotes and spaces as ASCII.
func normalise(s string) string {
	return punctuation.Replace(strings.TrimSpace(s))
}

// near returns where the first non-blank line of old occurs in lines (at
// most 5 places), compared without surrounding whitespace.
func near(lines, old []string) []int {
	var first string
	for _, l := range old {
		if strings.TrimSpace(l) != "" {
			first = normalise(l)
			break
		}
	}
	if first == "" {
		return nil
	}
	var at []int
	for i, l := range lines {
		if normalise(l) == first {
			at = append(at, i+1)
			if len(at) == 5 {
				break
			}
		}
	}
	return at
}
