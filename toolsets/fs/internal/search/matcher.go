package search

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// lineMatcher finds the lines of a buffer that match a pattern. It is
// immutable and shared by all workers.
type lineMatcher struct {
	re *regexp.Regexp // the pattern, in multi-line mode; nil when litOnly

	// The literal every match contains, used to skip to candidate lines.
	lit     []byte
	hasLit  bool
	fold    bool // lit is compared ignoring ASCII case (lit is lower-case then)
	litOnly bool // a line contains lit if and only if it matches: no regexp needed

	// byLine: no literal: every line goes to the regexp, without its "\r".
	byLine bool

	// For a folded literal: the byte of lit searched first (the rarest), at
	// offset rareOff, in both its cases.
	rareOff        int
	rareLo, rareUp byte
	verifyFold     bool // lit has only ASCII with ASCII-only case variants: compare it in place

	// For a verified folded literal: two bytes of it (offsets pairA < pairB
	// or equal for a one-byte literal) searched for together, eight bytes at
	// a time: a byte b matches when b|pairMask == pairByte.
	pairA, pairB         int
	pairMaskA, pairMaskB uint64
	pairByteA, pairByteB uint64
}

func newLineMatcher(pattern string, caseInsensitive bool) (*lineMatcher, error) {
	if caseInsensitive {
		pattern = "(?i)" + pattern
	}
	// Parse in multi-line mode (^ and $ at line bounds), and make the
	// expression unable to match "\n", so that a match found in the buffer
	// never spans lines and a search costs time linear in the file's size.
	tree, err := syntax.Parse("(?m)"+pattern, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPattern, err)
	}
	noNewline(tree)
	re, err := regexp.Compile(tree.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPattern, err)
	}
	m := &lineMatcher{re: re}
	tree = tree.Simplify()
	for tree.Op == syntax.OpCapture {
		tree = tree.Sub[0]
	}
	lit, fold, ok := requiredLiteral(tree)
	if !ok || len(lit) == 0 {
		// Without a literal, each line goes to the regexp: Go's regexp is
		// faster on short inputs (bit-state backtracker) than on a whole
		// file (NFA), and "$" then also matches before the "\r" of CRLF.
		m.byLine = true
		return m, nil
	}
	whole := tree.Op == syntax.OpLiteral && !bytes.ContainsAny(lit, "\r\n")
	if !fold {
		m.lit, m.hasLit = lit, true
		m.litOnly = whole
	} else {
		m.setFold(lit, whole)
	}
	if m.litOnly {
		m.re = nil
	}
	return m, nil
}

// noNewline removes "\n" from what re can match: "." of (?s) and classes
// lose it, a literal holding it can match nothing.
func noNewline(re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpAnyChar:
		re.Op = syntax.OpAnyCharNotNL
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == '\n' {
				re.Op, re.Rune = syntax.OpNoMatch, nil
				break
			}
		}
	case syntax.OpCharClass:
		var out []rune
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if lo <= '\n' && '\n' <= hi {
				if lo < '\n' {
					out = append(out, lo, '\n'-1)
				}
				if hi > '\n' {
					out = append(out, '\n'+1, hi)
				}
				continue
			}
			out = append(out, lo, hi)
		}
		if len(out) == 0 {
			re.Op, re.Rune = syntax.OpNoMatch, nil
		} else {
			re.Rune = out
		}
	}
	for _, sub := range re.Sub {
		noNewline(sub)
	}
}

// requiredLiteral returns a literal string that every match of re contains:
// the longest one it can prove, and whether it is case-folded.
func requiredLiteral(re *syntax.Regexp) (lit []byte, fold, ok bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return []byte(string(re.Rune)), re.Flags&syntax.FoldCase != 0, true
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			l, f, o := requiredLiteral(sub)
			if o && (!ok || better(l, f, lit, fold)) {
				lit, fold, ok = l, f, true
			}
		}
	}
	return lit, fold, ok
}

// better prefers an exact literal to a folded one, then the longer one.
func better(l []byte, f bool, than []byte, thanFold bool) bool {
	if f != thanFold {
		return !f && len(l) >= 2 || len(than) < 2
	}
	return len(l) > len(than)
}

// setFold prepares the search for a case-folded literal. Only ASCII bytes
// whose case variants are ASCII too can be searched for bytewise ("k" and
// "s" also fold to "K" (Kelvin) and "ſ"); the literal is compared in place
// only if all its bytes are such, otherwise each candidate line goes to the
// regexp.
func (m *lineMatcher) setFold(lit []byte, whole bool) {
	lower := bytes.ToLower(lit)
	best, bestCost := -1, 1<<30
	simple := true
	for i := 0; i < len(lower); i++ {
		c := lower[i]
		if c >= utf8.RuneSelf || c == 'k' || c == 's' {
			simple = false
			continue
		}
		if cost := foldCost(c); cost < bestCost {
			best, bestCost = i, cost
		}
	}
	if best < 0 {
		return // nothing safe to search for: the regexp scans the whole buffer
	}
	m.lit, m.hasLit, m.fold = lower, true, true
	m.rareOff, m.rareLo, m.rareUp = best, lower[best], upper(lower[best])
	m.verifyFold = simple
	m.litOnly = whole && simple
	if simple {
		// The two rarest bytes, in the order they come in lit.
		second, secondCost := best, 1<<30
		for i := 0; i < len(lower); i++ {
			if cost := foldCost(lower[i]); i != best && cost < secondCost {
				second, secondCost = i, cost
			}
		}
		m.pairA, m.pairB = min(best, second), max(best, second)
		m.pairMaskA, m.pairByteA = swarByte(lower[m.pairA])
		m.pairMaskB, m.pairByteB = swarByte(lower[m.pairB])
	}
}

func foldCost(c byte) int {
	cost := int(freq[c])
	if up := upper(c); up != c {
		cost += int(freq[up])
	}
	return cost
}

// swarByte returns the mask to OR a byte with and the value to compare the
// result with, repeated in the eight bytes of a word: a letter matches in
// both cases (OR 0x20 lower-cases an ASCII letter), anything else exactly.
func swarByte(c byte) (mask, want uint64) {
	const ones = 0x0101010101010101
	if 'a' <= c && c <= 'z' {
		return 0x20 * ones, uint64(c) * ones
	}
	return 0, uint64(c) * ones
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c - 'A' + 'a'
	}
	return c
}

// index returns the offset of the next candidate at or after pos: where lit
// starts (exact or verified folded literal), or where its rarest byte is
// (unverified folded literal: a variant of another length may come before
// it), or -1.
func (m *lineMatcher) index(buf []byte, pos int) int {
	if !m.fold {
		i := bytes.Index(buf[pos:], m.lit)
		if i < 0 {
			return -1
		}
		return pos + i
	}
	if m.verifyFold {
		return m.indexPair(buf, pos)
	}
	for at := pos + m.rareOff; at < len(buf); at++ {
		i := m.indexRare(buf, at)
		if i < 0 {
			return -1
		}
		return i // the rare byte is inside the match, so on its line
	}
	return -1
}

// indexPair finds the folded literal at or after pos: it looks at eight
// positions at a time for the two chosen bytes of the literal (SWAR: no
// per-candidate call), then compares the whole literal where both are.
func (m *lineMatcher) indexPair(buf []byte, pos int) int {
	const (
		lo = 0x0101010101010101
		hi = 0x8080808080808080
	)
	n, a, b := len(m.lit), m.pairA, m.pairB
	i := pos
	for ; i+b+8 <= len(buf); i += 8 {
		x := (binary.LittleEndian.Uint64(buf[i+a:]) | m.pairMaskA) ^ m.pairByteA
		y := (binary.LittleEndian.Uint64(buf[i+b:]) | m.pairMaskB) ^ m.pairByteB
		// A zero byte in x (and in y) is a match of the byte; the lowest
		// flagged byte is exact, higher ones may be false alarms, which the
		// comparison below rejects.
		z := (x - lo) &^ x & (y - lo) &^ y & hi
		for z != 0 {
			start := i + bits.TrailingZeros64(z)/8
			if start+n <= len(buf) && equalFoldASCII(buf[start:start+n], m.lit) {
				return start
			}
			z &= z - 1
		}
	}
	for ; i+n <= len(buf); i++ {
		if equalFoldASCII(buf[i:i+n], m.lit) {
			return i
		}
	}
	return -1
}

// indexRare finds the rare byte, in either case, at or after at.
func (m *lineMatcher) indexRare(buf []byte, at int) int {
	s := buf[at:]
	if m.rareLo == m.rareUp {
		if i := bytes.IndexByte(s, m.rareLo); i >= 0 {
			return at + i
		}
		return -1
	}
	// Search the rarer case first, then the other case only before it.
	i := bytes.IndexByte(s, m.rareLo)
	lim := s
	if i >= 0 {
		lim = s[:i]
	}
	if j := bytes.IndexByte(lim, m.rareUp); j >= 0 {
		return at + j
	}
	if i >= 0 {
		return at + i
	}
	return -1
}

// equalFoldASCII reports whether b equals the lower-case ASCII lit ignoring case.
func equalFoldASCII(b, lit []byte) bool {
	for i, c := range lit {
		if lower(b[i]) != c {
			return false
		}
	}
	return true
}

// nextLine returns the bounds [start, end) (end excludes the "\n") of the
// first matching line that starts at or after pos, which must be the start of
// a line, and ok false when there is none.
func (m *lineMatcher) nextLine(buf []byte, pos int) (start, end int, ok bool) {
	if m.byLine {
		for pos < len(buf) {
			end = len(buf)
			if i := bytes.IndexByte(buf[pos:], '\n'); i >= 0 {
				end = pos + i
			}
			if m.re.Match(trimCR(buf[pos:end])) {
				return pos, end, true
			}
			pos = end + 1
		}
		return 0, 0, false
	}
	for pos < len(buf) {
		var hit int
		if m.hasLit {
			hit = m.index(buf, pos)
		} else {
			loc := m.re.FindIndex(buf[pos:])
			if loc == nil {
				return 0, 0, false
			}
			hit = pos + loc[0]
		}
		if hit < 0 {
			return 0, 0, false
		}
		if hit >= len(buf) { // an empty match at the very end
			return 0, 0, false
		}
		hit = max(hit, pos)
		start = pos
		if i := bytes.LastIndexByte(buf[pos:hit], '\n'); i >= 0 {
			start = pos + i + 1
		}
		end = len(buf)
		if i := bytes.IndexByte(buf[hit:], '\n'); i >= 0 {
			end = hit + i
		}
		if m.litOnly || m.re.Match(trimCR(buf[start:end])) {
			return start, end, true
		}
		pos = end + 1
	}
	return 0, 0, false
}

// matchAt returns where the match starts in line (for cutting long lines
// around it), or 0.
func (m *lineMatcher) matchAt(line []byte) int {
	if m.re != nil {
		if loc := m.re.FindIndex(line); loc != nil {
			return loc[0]
		}
		return 0
	}
	if !m.fold {
		return max(bytes.Index(line, m.lit), 0)
	}
	for i := 0; i+len(m.lit) <= len(line); i++ {
		if equalFoldASCII(line[i:i+len(m.lit)], m.lit) {
			return i
		}
	}
	return 0
}

func trimCR(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		return line[:n-1]
	}
	return line
}

// freq ranks bytes by how often they appear in source code and text (higher
// is more frequent); unlisted bytes count as rare.
var freq = func() (f [256]uint8) {
	// Measured on the Go source tree.
	const common = " et\t0rn\naiso,xclfdu1.p/()A2mg:h\"=b43S6_TEyR8v{}ICO5\\DP97MkLwXVBFN[]-UG*HW;+Y|Q!z&<K'>q%jZ$J`#"
	for i := 0; i < len(common); i++ {
		if f[common[i]] == 0 {
			f[common[i]] = uint8(255 - 2*i)
		}
	}
	return f
}()
