package policy

import (
	"regexp/syntax"
)

// anchors is a prefilter for a regular expression: a set of literal strings
// of which every match of the expression contains at least one. The zero
// value (no strings) knows nothing and lets every text through.
type anchors struct {
	lits []string
	// fold: the expression ignores case where these came from, so lits are
	// lower case and compared with the text's ASCII lower case. Only an
	// ASCII text can be ruled out that way: (?i) also folds "k" with the
	// Kelvin sign and "s" with the long s, so a text with any other byte is
	// let through.
	fold bool
}

// Bounds on the prefilter's work: exact sets are expanded up to maxExact
// strings, a prefilter keeps at most maxAnchors of them.
const (
	maxExact   = 16
	maxAnchors = 32
)

// prefilter finds, in one pass over a text, which patterns' anchors it
// holds. When every literal has three bytes or more, it looks at every
// other byte only: an occurrence of a literal covers one of those, at its
// byte 0 or 1, and the three bytes from there (the literal's, or its last
// two and whatever follows) are in two 64 Ki-bit sets of every such triple
// of every literal (every ASCII case of them when it ignores case), each
// hashed to 16 bits its own way (with one set, the default patterns'
// ~1,700 triples let one triple in 40 of any text through, and some that
// a text repeats on every line, such as the "n10" of `seq`'s output in its
// JSON encoding, every time); where a triple is in both, the literals
// starting at that byte and at the one before it are compared. Otherwise
// every literal of two bytes or more is keyed by its first two bytes in
// the first set instead, and every byte is looked at. So a triple or pair
// no literal holds costs one or two bit tests; only where one does are the
// literals of its first byte compared. The result is exactly anchors'
// definition: a pattern may occur when the text contains one of its
// literals (compared in ASCII lower case when they ignore case), or when
// it ignores case and the text is not ASCII.
type prefilter struct {
	keys    [1 << 16 / 64]uint64 // triples hashed by triple (or pairs)
	keys2   [1 << 16 / 64]uint64 // triples hashed by triple2
	triples bool                 // keys are hashed triples, looked at every other byte; else pairs
	heads   [256][]head          // literals by their first byte (each case of it when folded)
	minLen  int                  // the shortest literal's length (1 when there is none)
	fold    []int                // the patterns whose literals ignore case
}

// head is one literal of one pattern.
type head struct {
	lit     string // compared in ASCII lower case when fold
	fold    bool
	pattern int
}

// newPrefilter indexes the anchors of patterns (by their index); a pattern
// without anchors is not indexed (it always runs).
func newPrefilter(need []anchors) *prefilter {
	f := &prefilter{triples: true}
	for _, a := range need {
		for _, l := range a.lits {
			f.triples = f.triples && len(l) >= 3
			if f.minLen == 0 || len(l) < f.minLen {
				f.minLen = len(l)
			}
		}
	}
	f.minLen = max(f.minLen, 1)
	any := make([]byte, 256) // any byte may follow, and the text may end here
	for i := range any {
		any[i] = byte(i)
	}
	for i, a := range need {
		if len(a.lits) == 0 {
			continue
		}
		if a.fold {
			f.fold = append(f.fold, i)
		}
		at := func(l string, j int) []byte {
			if j < len(l) {
				return cases(l[j], a.fold)
			}
			return any
		}
		for _, l := range a.lits {
			h := head{lit: l, fold: a.fold, pattern: i}
			for _, c0 := range cases(l[0], a.fold) {
				f.heads[c0] = append(f.heads[c0], h)
			}
			if !f.triples {
				for _, c0 := range at(l, 0) {
					for _, c1 := range at(l, 1) {
						f.set(uint(c0)<<8 | uint(c1))
					}
				}
				continue
			}
			for o := range 2 {
				for _, c0 := range at(l, o) {
					for _, c1 := range at(l, o+1) {
						for _, c2 := range at(l, o+2) {
							w := uint32(c0) | uint32(c1)<<8 | uint32(c2)<<16
							f.set(triple(w))
							f.keys2[triple2(w)/64] |= 1 << (triple2(w) % 64)
						}
					}
				}
			}
		}
	}
	return f
}

func (f *prefilter) set(k uint) {
	f.keys[k/64] |= 1 << (k % 64)
}

func (f *prefilter) has(k uint) bool {
	return f.keys[k/64]&(1<<(k%64)) != 0
}

// hasTriple reports whether the triple w (three bytes, the first the
// lowest) may be one of a literal's: whether each set has its hash.
func (f *prefilter) hasTriple(w uint32) bool {
	if !f.has(triple(w)) {
		return false
	}
	k := triple2(w)
	return f.keys2[k/64]&(1<<(k%64)) != 0
}

// triple and triple2 hash three bytes, the first the lowest, to 16 bits
// each, two ways (the high bits of products by two odd constants).
func triple(w uint32) uint {
	return uint(w * 0x9E3779B1 >> 16)
}

func triple2(w uint32) uint {
	return uint(w * 0x85EBCA6B >> 16)
}

// cases is c, and its other ASCII case when fold and c is a letter.
func cases(c byte, fold bool) []byte {
	if l := lowerByte(c); fold && 'a' <= l && l <= 'z' {
		return []byte{l, l - 'a' + 'A'}
	}
	return []byte{c}
}

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// scan sets may[i] for every pattern i whose anchors s holds (may has one
// entry per pattern; entries are only ever set).
func (f *prefilter) scan(s string, may []bool) {
	if len(s) == 0 {
		return
	}
	i := 0
	var high uint64 // every byte looked at, or'ed: a non-ASCII one sets 0x80 of one of its bytes
	if f.triples {
		// The triples at every other byte that have four bytes from
		// there, in order, each hit compared where it is (nextTriple
		// stays a loop without calls).
		for {
			var h uint64
			i, h = f.nextTriple(s, i)
			high |= h
			if i+4 > len(s) {
				break
			}
			f.matchAround(s, i, may)
			i += 2
		}
		// The last bytes, each compared: a literal starting there has
		// its first triple, or its second, from i-1 on.
		i = max(i, 1) - 1
	} else {
		for ; i < len(s)-1; i++ {
			high |= uint64(s[i])
			if f.has(uint(s[i])<<8 | uint(s[i+1])) {
				f.match(s[i:], may)
			}
		}
	}
	// A literal starts no later than minLen bytes before the end.
	for ; i <= len(s)-f.minLen; i++ {
		high |= uint64(s[i])
		f.match(s[i:], may)
	}
	for ; i < len(s); i++ {
		high |= uint64(s[i])
	}
	if high&0x8080808080808080 != 0 {
		for _, i := range f.fold {
			may[i] = true
		}
	}
}

// nextTriple returns the first of the bytes i, i+2, i+4... (i even) with
// four bytes from there whose triple is in both sets, or the first byte
// of them without four bytes from there when there is none, and the bytes
// it loaded, or'ed. Three triples, at j, j+2 and j+4, come from one load
// of eight bytes, then one from four. It calls nothing, so that its
// variables stay in registers (with the hits' calls in the loop, the
// compiler kept them on the stack and checked two bounds a load: about an
// eighth of the scan's instructions).
func (f *prefilter) nextTriple(s string, i int) (int, uint64) {
	var high uint64
	for t := s[i:]; len(t) >= 8; t = t[6:] {
		w := load64(t) // one load on amd64 and arm64
		high |= w
		if f.hasTriple(uint32(w) & 0xFFFFFF) {
			return i, high
		}
		if f.hasTriple(uint32(w>>16) & 0xFFFFFF) {
			return i + 2, high
		}
		if f.hasTriple(uint32(w>>32) & 0xFFFFFF) {
			return i + 4, high
		}
		i += 6
	}
	for ; i+3 < len(s); i += 2 {
		b := s[i : i+4] // one load on amd64 and arm64
		w := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		high |= uint64(w)
		if f.hasTriple(w & 0xFFFFFF) {
			return i, high
		}
	}
	return i, high
}

// matchAround sets may for the literals that start at i-1 or at i, where a
// triple of a literal begins at i.
func (f *prefilter) matchAround(s string, i int, may []bool) {
	f.match(s[max(i, 1)-1:], may)
	f.match(s[i:], may)
}

// match sets may for the literals s starts with.
func (f *prefilter) match(s string, may []bool) {
	for _, h := range f.heads[s[0]] {
		if !may[h.pattern] && h.at(s) {
			may[h.pattern] = true
		}
	}
}

// at reports whether s starts with the literal, in ASCII lower case when
// it ignores case (its bytes are lowered too: an exact part, such as a
// class, may have joined a folded run).
func (h head) at(s string) bool {
	if len(s) < len(h.lit) {
		return false
	}
	if !h.fold {
		return s[:len(h.lit)] == h.lit
	}
	for j := 0; j < len(h.lit); j++ {
		if lowerByte(s[j]) != lowerByte(h.lit[j]) {
			return false
		}
	}
	return true
}

// asciiLower lowers the ASCII letters of s and leaves every other byte.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// anchorsFor derives the prefilter of a regular expression parsed as
// regexp.Compile parses it (syntax.Perl). It reads the parsed tree, not
// the simplified one: simplifying spells a counted repeat out in copies
// ([A-Za-z0-9]{36,255} became 255 nested nodes, 0.6 ms of every start).
func anchorsFor(re *syntax.Regexp) anchors {
	a := best(analyse(re))
	if len(a.lits) > maxAnchors || score(a.lits) == 0 {
		return anchors{}
	}
	return a
}

// reFacts is what is known of the strings one node of an expression matches.
type reFacts struct {
	exact  []string // every string the node matches (when exactOK)
	exOK   bool
	exFold bool    // exact came (partly) from case-folded literals
	inner  anchors // every match contains one of these (none: unknown)
}

// best is the more selective of a node's exact set and its anchors.
func best(f reFacts) anchors {
	if f.exOK && score(f.exact) >= score(f.inner.lits) {
		return anchors{lits: f.exact, fold: f.exFold}
	}
	return f.inner
}

// score ranks a set of literals: the length of its shortest one (0 for an
// empty set or one holding "", which rules nothing out).
func score(lits []string) int {
	if len(lits) == 0 {
		return 0
	}
	m := len(lits[0])
	for _, l := range lits[1:] {
		m = min(m, len(l))
	}
	return m
}

func exactly(fold bool, s ...string) reFacts { return reFacts{exact: s, exOK: true, exFold: fold} }

// analyse computes the reFacts of re: a counted repeat is known by its
// part (every match of x{n,m} with n ≥ 1 holds a match of x), and what it
// does not know (a star, any character) rules nothing out.
func analyse(re *syntax.Regexp) reFacts {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return exactly(false, "")
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return exactly(true, asciiLower(string(re.Rune)))
		}
		return exactly(false, string(re.Rune))
	case syntax.OpCharClass:
		n := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			n += int(re.Rune[i+1]-re.Rune[i]) + 1
			if n > maxExact {
				return reFacts{}
			}
		}
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				out = append(out, string(r))
			}
		}
		if len(out) == 0 {
			return reFacts{} // matches nothing; let the expression say so
		}
		return exactly(false, out...)
	case syntax.OpCapture:
		return analyse(re.Sub[0])
	case syntax.OpQuest:
		f := analyse(re.Sub[0])
		if f.exOK && len(f.exact) < maxExact {
			return exactly(f.exFold, append([]string{""}, f.exact...)...)
		}
		return reFacts{}
	case syntax.OpPlus:
		return reFacts{inner: best(analyse(re.Sub[0]))}
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return reFacts{inner: best(analyse(re.Sub[0]))}
		}
		return reFacts{}
	case syntax.OpConcat:
		return concat(re.Sub)
	case syntax.OpAlternate:
		return alternate(re.Sub)
	}
	return reFacts{} // any character, no match: nothing known
}

// concat: the exact sets of consecutive parts multiply while they stay
// small; the whole has the best anchors among those runs and the parts.
func concat(subs []*syntax.Regexp) reFacts {
	var cands []anchors
	run, runFold, whole := []string{""}, false, true
	flush := func() {
		cands = append(cands, anchors{lits: run, fold: runFold})
		run, runFold = []string{""}, false
	}
	for _, sub := range subs {
		f := analyse(sub)
		if f.exOK && len(run)*len(f.exact) <= maxExact {
			next := make([]string, 0, len(run)*len(f.exact))
			for _, a := range run {
				for _, b := range f.exact {
					next = append(next, a+b)
				}
			}
			run, runFold = next, runFold || f.exFold
			continue
		}
		whole = false
		flush()
		cands = append(cands, best(f))
	}
	if whole {
		return exactly(runFold, run...)
	}
	flush()
	var out anchors
	for _, c := range cands {
		if score(c.lits) > score(out.lits) || (score(c.lits) == score(out.lits) && len(c.lits) < len(out.lits)) {
			out = c
		}
	}
	return reFacts{inner: out}
}

// alternate: the union of the branches' exact sets while small; a match
// contains an anchor of the branch it took, so the anchors are the union of
// every branch's, and none when one branch has none.
func alternate(subs []*syntax.Regexp) reFacts {
	var exact, lits []string
	exOK, exFold, litsOK, fold := true, false, true, false
	for _, sub := range subs {
		f := analyse(sub)
		if exOK && f.exOK && len(exact)+len(f.exact) <= maxExact {
			exact = append(exact, f.exact...)
			exFold = exFold || f.exFold
		} else {
			exOK = false
		}
		if a := best(f); litsOK && score(a.lits) > 0 {
			lits = append(lits, a.lits...)
			fold = fold || a.fold
		} else {
			litsOK = false
		}
	}
	var out reFacts
	if litsOK {
		out.inner = anchors{lits: lits, fold: fold}
	}
	if exOK {
		out.exact, out.exOK, out.exFold = exact, true, exFold
	}
	return out
}
