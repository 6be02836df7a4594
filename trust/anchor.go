package trust

import (
	"bytes"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// An anchor runs an expression only where a match may start. Go's matcher,
// asked whether a sentence holds a match, tries the expression at every
// byte: for a cue that starts with one of a dozen verbs and then reads an
// identifier, most of a long result's check. Every match of such a cue
// begins with one of a few strings (its starts), so the check looks for
// them in the sentence's lower case and runs, at each place one begins, the
// expression anchored there: `^(?s:.)(?:EXPR)` on the text from the byte
// before that place (a blank before the sentence's first byte), which
// matches exactly when EXPR has a match starting at the place, the byte
// before giving \b its context. The starts are looked for in the sentence
// with its ASCII letters lowered (every byte keeps its place), so the
// anchor is not used on a sentence with a Kelvin sign or a long s (which
// (?i) matches as k and s; folded text has none), nor, when some match may
// begin outside ASCII (asciiOnly: those starts are dropped), on a sentence
// outside ASCII. Expressions with ^ (which the byte before would hide) have
// none.
type anchor struct {
	starts    []anchorStart
	asciiOnly bool
	// prog is the program, as regexp compiles it (parsed, simplified,
	// syntax.Compile), of `^(?s:.)(?:EXPR)`, EXPR the cue's expression,
	// and for a cue compileMatch makes, of that as ordered writes it:
	// branches sorted, case-insensitive literals kept as they are (the
	// smaller program). It is run by anchorProg.match, and written with
	// the anchor at development time (result_prefilters.go; the
	// expression it is compiled from is anchorSource's, in the tests), so
	// that no process parses and compiles the expressions of the anchors
	// it runs at its first check (most of that check's cost, with the
	// matcher's 32 KiB visited bitmap each).
	prog *anchorProg
}

// anchorStart is a string a match may begin with (lower case), and whether
// the expression has a \b right before it.
type anchorStart struct {
	lit  string
	word bool
	id   int32  // in the index's literals (bind)
	b    []byte // lit (bind)
}

// maxStarts bounds an anchor's starts: beyond, the expression is run as it
// is.
const maxStarts = 40

// newAnchor returns the anchor of src (as regexp.Compile parses it), nil
// when not every match is known to begin with one of a few strings.
func newAnchor(src string) *anchor {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil || hasBegin(re) {
		return nil
	}
	starts, ok := firsts(re, false)
	if !ok || len(starts) > maxStarts {
		return nil
	}
	// A place that begins with "calling" begins with "call": keep the
	// shorter, with a \b before it only when there is one before both.
	slices.SortFunc(starts, func(a, b anchorStart) int { return strings.Compare(a.lit, b.lit) })
	var out []anchorStart
	asciiOnly := false
	for _, s := range starts {
		if !isASCII(s.lit) {
			// Never in an ASCII sentence, nor, with only a Kelvin sign or a
			// long s outside ASCII, in one an anchor reads.
			for _, r := range s.lit {
				asciiOnly = asciiOnly || r >= 0x80 && r != '\u212A' && r != '\u017F'
			}
			continue
		}
		if n := len(out); n > 0 && strings.HasPrefix(s.lit, out[n-1].lit) {
			out[n-1].word = out[n-1].word && s.word
			continue
		}
		out = append(out, s)
	}
	return &anchor{starts: out, asciiOnly: asciiOnly}
}

// hasBegin reports whether re holds ^ or \A.
func hasBegin(re *syntax.Regexp) bool {
	if re.Op == syntax.OpBeginLine || re.Op == syntax.OpBeginText {
		return true
	}
	return slices.ContainsFunc(re.Sub, hasBegin)
}

// firsts returns the strings every match of re begins with, in lower case,
// and whether it knows them (every match is non-empty and begins with one
// of them). word says a \b comes right before re.
func firsts(re *syntax.Regexp, word bool) ([]anchorStart, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return []anchorStart{{lit: strings.ToLower(string(re.Rune)), word: word}}, true
	case syntax.OpCharClass:
		var out []anchorStart
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1] && len(out) <= 16; r++ {
				lit := strings.ToLower(string(r))
				if !slices.ContainsFunc(out, func(s anchorStart) bool { return s.lit == lit }) {
					out = append(out, anchorStart{lit: lit, word: word})
				}
			}
		}
		return out, len(out) <= 16
	case syntax.OpCapture, syntax.OpPlus:
		return firsts(re.Sub[0], word)
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return firsts(re.Sub[0], word)
		}
	case syntax.OpAlternate:
		var out []anchorStart
		for _, sub := range re.Sub {
			f, ok := firsts(sub, word)
			if !ok {
				return nil, false
			}
			out = append(out, f...)
		}
		return out, true
	case syntax.OpConcat:
		subs := re.Sub
		for len(subs) > 0 && subs[0].Op == syntax.OpWordBoundary {
			word, subs = true, subs[1:]
		}
		if len(subs) == 0 {
			return nil, false
		}
		if q := subs[0]; q.Op == syntax.OpQuest {
			// x?y begins as xy or as y.
			with, ok1 := firsts(&syntax.Regexp{Op: syntax.OpConcat, Sub: append([]*syntax.Regexp{q.Sub[0]}, subs[1:]...)}, word)
			without, ok2 := firsts(&syntax.Regexp{Op: syntax.OpConcat, Sub: subs[1:]}, word)
			return append(with, without...), ok1 && ok2
		}
		first := analyse(subs[0])
		if !first.exactOK || slices.Contains(first.exact, "") {
			return firsts(subs[0], word)
		}
		// What the parts match, while each matches one of a few strings
		// (analyse knows all of them): "send" "\s" "it" begins "send it", … .
		out := []anchorStart{{word: word}}
		for _, sub := range subs {
			// The part lengthens them by what it matches, when that is one
			// of a few strings, else by what it begins with, and ends them.
			next, last := analyse(sub), false
			ext := next.exact
			if !next.exactOK || len(out)*len(ext) > maxStarts {
				f, ok := firsts(sub, false)
				if !ok {
					break
				}
				ext, last = nil, true
				for _, e := range f {
					ext = append(ext, e.lit)
				}
			}
			if slices.ContainsFunc(ext, blank) || len(out)*len(ext) > maxStarts {
				break // "the" finds what "the " does
			}
			var longer []anchorStart
			for _, s := range out {
				for _, e := range ext {
					longer = append(longer, anchorStart{lit: s.lit + e, word: s.word})
				}
			}
			out = longer
			if last {
				break
			}
		}
		return out, true
	}
	return nil, false
}

// blank reports whether s is one blank (\s).
func blank(s string) bool { return len(s) == 1 && strings.IndexByte(" \t\n\v\f\r", s[0]) >= 0 }

// bind gives a's (nil: none) starts their ids in l (before l is built).
func (a *anchor) bind(l *literals) {
	if a == nil {
		return
	}
	for i := range a.starts {
		a.starts[i].id = l.add(a.starts[i].lit)
		a.starts[i].b = []byte(a.starts[i].lit)
	}
}

// mark sets in set the ids of a's starts (a nil: none).
func (a *anchor) mark(set []uint64) {
	if a == nil {
		return
	}
	for _, st := range a.starts {
		set[st.id>>6] |= 1 << (st.id & 63)
	}
}

// mayStart reports whether one of a's starts occurs in a sentence whose
// literals are found: where none does, match is false.
func (a *anchor) mayStart(found []uint64) bool {
	for _, st := range a.starts {
		if found[st.id>>6]&(1<<(st.id&63)) != 0 {
			return true
		}
	}
	return false
}

// match reports whether the expression a anchors matches the sentence s
// (read: its literals found, its lower case and padding made).
func (a *anchor) match(s *readSentence) bool {
	for _, st := range a.starts {
		if s.found[st.id>>6]&(1<<(st.id&63)) == 0 {
			continue
		}
		for from := 0; ; {
			j := bytes.Index(s.lower[from:], st.b)
			if j < 0 {
				break
			}
			at := from + j
			from = at + 1
			if st.word && wordByte(s.padded[at]) == wordByte(st.lit[0]) {
				continue // no \b here
			}
			if a.prog.match(s.padded[at:]) {
				return true
			}
		}
	}
	return false
}

// wordByte reports whether c is a word character for \b (ASCII).
func wordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// lowerInto writes s into b (as long) with its ASCII capitals lowered.
func lowerInto(b []byte, s string) {
	for i := range len(b) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
}

// used reports whether a (nil: none) is used on s: else the expression
// is run as it is.
func (a *anchor) used(s *readSentence) bool {
	return a != nil && (s.ascii || !a.asciiOnly && !s.anchorless())
}

// holds reports whether p, which a (nil: none) anchors, matches s.
func (a *anchor) holds(p *pattern, s *readSentence) bool {
	if !a.used(s) {
		return p.MatchString(s.text)
	}
	if !s.made {
		// Made in place when they have room (see setTo).
		n := len(s.text)
		if cap(s.padded) < n+1 {
			s.lower, s.padded = make([]byte, n, 2*n+1), make([]byte, n+1, 2*n+1)
		}
		s.lower, s.padded = s.lower[:n], s.padded[:n+1]
		lowerInto(s.lower, s.text)
		s.padded[0] = ' '
		copy(s.padded[1:], s.text)
		s.made = true
	}
	return a.match(s)
}

// anchorless reports whether s holds a Kelvin sign or a long s, which
// anchors cannot find.
func (s *readSentence) anchorless() bool {
	return strings.Contains(s.text, "\u212A") || strings.Contains(s.text, "\u017F")
}

// anchorProg is a program of regexp/syntax, laid out by the linker with no
// pointer in it (the collector has nothing to read there).
type anchorProg struct {
	inst  []progInst
	runes []rune // of every instruction, one after the other
	start uint32
}

// progInst is a syntax.Inst whose runes are those of its program from lo
// to hi.
type progInst struct {
	op               syntax.InstOp
	out, arg         uint32
	runesLo, runesHi uint32
}

// progMachine is what anchorProg.match runs with: the instructions of its
// two lists of threads, and when each was last added to one (gen: the list
// being made).
type progMachine struct {
	now, next, stack []uint32
	added            []uint32
	gen              uint32
}

var progMachines = sync.Pool{New: func() any { return new(progMachine) }}

// match reports whether p, whose expression begins with \A, matches at the
// start of b: what regexp's Match of the expression answers. It follows
// every thread of the program a rune at a time (Pike's machine, as
// regexp's own does): its cost is bounded by the runes read times the
// program's size, and it ends when no thread is left or one matches.
func (p *anchorProg) match(b []byte) bool {
	m := progMachines.Get().(*progMachine)
	defer progMachines.Put(m)
	if len(m.added) < len(p.inst) {
		m.added, m.gen = make([]uint32, len(p.inst)), 0
	}
	r, w := runeAt(b, 0)
	m.newList()
	m.now = m.follow(p, m.now[:0], p.start, syntax.EmptyOpContext(-1, r))
	for at := 0; len(m.now) > 0; {
		at += w
		r2, w2 := runeAt(b, at)
		context := syntax.EmptyOpContext(r, r2) // after r
		m.next = m.next[:0]
		m.newList()
		for _, pc := range m.now {
			in := &p.inst[pc]
			var ok bool
			switch in.op {
			case syntax.InstMatch:
				return true
			case syntax.InstRune:
				ok = w > 0 && (&syntax.Inst{Op: in.op, Arg: in.arg, Rune: p.runes[in.runesLo:in.runesHi]}).MatchRune(r)
			case syntax.InstRune1:
				ok = w > 0 && r == p.runes[in.runesLo]
			case syntax.InstRuneAny:
				ok = w > 0
			case syntax.InstRuneAnyNotNL:
				ok = w > 0 && r != '\n'
			}
			if ok {
				m.next = m.follow(p, m.next, in.out, context)
			}
		}
		if w == 0 {
			return false
		}
		m.now, m.next = m.next, m.now
		r, w = r2, w2
	}
	return false
}

// runeAt decodes the rune at i of b as regexp does (-1 and 0 at the end).
func runeAt(b []byte, i int) (rune, int) {
	if i >= len(b) {
		return -1, 0
	}
	if c := b[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRune(b[i:])
}

// newList starts a list of threads: no instruction is in it.
func (m *progMachine) newList() {
	if m.gen++; m.gen == 0 {
		clear(m.added)
		m.gen = 1
	}
}

// follow adds to list the threads pc leads to in context (the empty-width
// assertions that hold where it is) without reading a rune: the
// instructions that read one, or match.
func (m *progMachine) follow(p *anchorProg, list []uint32, pc uint32, context syntax.EmptyOp) []uint32 {
	stack := append(m.stack[:0], pc)
	for len(stack) > 0 {
		pc, stack = stack[len(stack)-1], stack[:len(stack)-1]
		if m.added[pc] == m.gen {
			continue
		}
		m.added[pc] = m.gen
		switch in := &p.inst[pc]; in.op {
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, in.arg, in.out)
		case syntax.InstNop, syntax.InstCapture:
			stack = append(stack, in.out)
		case syntax.InstEmptyWidth:
			if syntax.EmptyOp(in.arg)&^context == 0 {
				stack = append(stack, in.out)
			}
		case syntax.InstFail:
		default:
			list = append(list, pc)
		}
	}
	m.stack = stack
	return list
}
