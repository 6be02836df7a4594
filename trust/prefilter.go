package trust

import (
	"math"
	"regexp/syntax"
	"slices"
	"strings"
)

// A prefilter is what every match of a regular expression must contain,
// derived from its syntax: a tree of literal strings joined by and/or, read
// against a text's lower case. A result's sentences meet dozens of cues and
// most sentences hold none of a cue's literals in the order it needs them, so
// the prefilter spares the regular expression, the costly part of a result
// check (a sentence of plain text ran a dozen of them, about 15 µs each).
//
// It is necessary, never sufficient: mayMatch is false only when the
// expression cannot match. Its literals are looked for all at once, with
// those of the other cues (literals). The literals are in lower case; (?i) lets an
// ASCII letter match only ASCII letters and two other characters (the
// Kelvin sign and the long s), so the prefilter is used on ASCII sentences,
// one with only ASCII literals also on any plain sentence (neither of those
// two characters: readSentence.plain), and a case-folded literal with other
// letters knows nothing.
type prefilter struct {
	op   prefilterOp
	lits []string     // opAny: one of these occurs
	ids  []int32      // their ids in a literals (bind)
	mask []uint64     // ids as a set, when they are many (masks)
	sub  []*prefilter // opAnd: all of these hold; opOr: one does
}

type prefilterOp uint8

const (
	opTrue prefilterOp = iota // nothing known: every text may match
	opAny
	opAnd
	opOr
)

// maxExact bounds the strings expanded from a node ("by" × \s × "using"…).
const maxExact = 16

// newPrefilter derives the prefilter of src, parsed as regexp.Compile
// parses it.
func newPrefilter(src string) *prefilter {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return &prefilter{} // the pattern's own compile reports it
	}
	return analyse(re).filter()
}

// bind gives p's literals their ids in l (before l is built).
func (p *prefilter) bind(l *literals) {
	p.ids = p.ids[:0]
	for _, s := range p.lits {
		p.ids = append(p.ids, l.add(s))
	}
	for _, s := range p.sub {
		s.bind(l)
	}
}

// asciiOnly reports whether every literal of p is ASCII.
func (p *prefilter) asciiOnly() bool {
	for _, l := range p.lits {
		if !isASCII(l) {
			return false
		}
	}
	for _, s := range p.sub {
		if !s.asciiOnly() {
			return false
		}
	}
	return true
}

// mark sets in set the ids of p's literals (bound).
func (p *prefilter) mark(set []uint64) {
	for _, id := range p.ids {
		set[id>>6] |= 1 << (id & 63)
	}
	for _, s := range p.sub {
		s.mark(set)
	}
}

// masks gives each of p's opAny nodes with more than maxIDs literals their
// set (a bit per id in a found set of words uint64s, once its literals are
// bound): one AND a word instead of a test a literal.
func (p *prefilter) masks(words int) {
	const maxIDs = 8
	if p.op == opAny && len(p.ids) > maxIDs {
		p.mask = make([]uint64, words)
		for _, id := range p.ids {
			p.mask[id>>6] |= 1 << (id & 63)
		}
	}
	for _, s := range p.sub {
		s.masks(words)
	}
}

// mayMatch reports whether a text may hold a match, given found, the
// literals of the bound set that occur in the text's lower case.
func (p *prefilter) mayMatch(found []uint64) bool {
	switch p.op {
	case opAny:
		if p.mask != nil {
			for w, m := range p.mask {
				if found[w]&m != 0 {
					return true
				}
			}
			return false
		}
		return anyOf(found, p.ids)
	case opAnd:
		for _, s := range p.sub {
			if !s.mayMatch(found) {
				return false
			}
		}
		return true
	case opOr:
		for _, s := range p.sub {
			if s.mayMatch(found) {
				return true
			}
		}
		return false
	}
	return true
}

// facts is what is known of the strings one node matches: all of them
// (exact, lower case, when known and few) or a prefilter.
type facts struct {
	exact   []string
	exactOK bool
	pf      *prefilter
}

func exactly(s ...string) facts { return facts{exact: s, exactOK: true} }

var unknown = facts{pf: &prefilter{}}

// filter is f as a prefilter.
func (f facts) filter() *prefilter {
	if !f.exactOK {
		return f.pf
	}
	blank := true
	for _, s := range f.exact {
		if s == "" {
			return &prefilter{} // the empty string is in every text
		}
		blank = blank && len(s) == 1 && strings.IndexByte(" \t\n\v\f\r", s[0]) >= 0
	}
	if blank {
		return &prefilter{} // a blank is in every sentence worth reading
	}
	return &prefilter{op: opAny, lits: minimal(f.exact)}
}

func analyse(re *syntax.Regexp) facts {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return exactly("")
	case syntax.OpLiteral:
		s := string(re.Rune)
		if re.Flags&syntax.FoldCase != 0 && !isASCII(s) {
			return unknown // é also matches É, which lower case does not show
		}
		return exactly(strings.ToLower(s))
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(out) == maxExact {
					return unknown
				}
				out = append(out, strings.ToLower(string(r)))
			}
		}
		return exactly(uniq(out)...)
	case syntax.OpCapture:
		return analyse(re.Sub[0])
	case syntax.OpQuest:
		if f := analyse(re.Sub[0]); f.exactOK && len(f.exact) < maxExact {
			return exactly(append([]string{""}, f.exact...)...)
		}
		return unknown
	case syntax.OpPlus:
		return facts{pf: analyse(re.Sub[0]).filter()}
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return facts{pf: analyse(re.Sub[0]).filter()}
		}
		return unknown
	case syntax.OpConcat:
		return concat(re.Sub)
	case syntax.OpAlternate:
		return alternate(re.Sub)
	}
	return unknown // any character, a star, no match
}

// concat multiplies the exact sets of consecutive parts while they stay
// few; the whole needs every run and every other part.
func concat(subs []*syntax.Regexp) facts {
	var all []*prefilter
	run, whole := []string{""}, true
	for _, sub := range subs {
		f := analyse(sub)
		if f.exactOK && len(run)*len(f.exact) <= maxExact {
			next := make([]string, 0, len(run)*len(f.exact))
			for _, a := range run {
				for _, b := range f.exact {
					next = append(next, a+b)
				}
			}
			run = uniq(next)
			continue
		}
		whole = false
		all = append(all, exactly(run...).filter())
		if f.exactOK { // a new run starts here
			run = f.exact
			continue
		}
		all = append(all, f.filter())
		run = []string{""}
	}
	if whole {
		return exactly(run...)
	}
	all = append(all, exactly(run...).filter())
	return facts{pf: joinFilters(opAnd, all)}
}

// alternate: the union of the branches' exact sets while few, else one of
// the branches' prefilters.
func alternate(subs []*syntax.Regexp) facts {
	var exact []string
	var any []*prefilter
	exactOK := true
	for _, sub := range subs {
		f := analyse(sub)
		if exactOK && f.exactOK && len(exact)+len(f.exact) <= maxExact {
			exact = append(exact, f.exact...)
		} else {
			exactOK = false
		}
		any = append(any, f.filter())
	}
	if exactOK {
		return exactly(uniq(exact)...)
	}
	return facts{pf: joinFilters(opOr, any)}
}

// joinFilters makes an and (or an or) of subs, dropping what knows nothing (and:
// true parts; or: everything, when one part is true) and merging literal
// sets under an or.
func joinFilters(op prefilterOp, subs []*prefilter) *prefilter {
	out := &prefilter{op: op}
	var lits []string
	for _, s := range subs {
		switch {
		case s.op == opTrue && op == opAnd:
			continue
		case s.op == opTrue:
			return &prefilter{}
		case s.op == op:
			out.sub = append(out.sub, s.sub...)
		case s.op == opAny && op == opOr:
			lits = append(lits, s.lits...)
		default:
			out.sub = append(out.sub, s)
		}
	}
	if len(lits) > 0 {
		out.sub = append(out.sub, &prefilter{op: opAny, lits: minimal(lits)})
	}
	switch len(out.sub) {
	case 0:
		return &prefilter{}
	case 1:
		return out.sub[0]
	}
	return out
}

// uniq drops repeated strings.
func uniq(ss []string) []string {
	out := ss[:0:0]
	for i, s := range ss {
		if !slices.Contains(ss[:i], s) {
			out = append(out, s)
		}
	}
	return out
}

// minimal drops, from a set of which one occurs, repeated strings and every
// string that contains another of the set (finding that one says as much).
func minimal(ss []string) []string {
	out := ss[:0:0]
	for i, s := range ss {
		keep := true
		for j, t := range ss {
			if j != i && strings.Contains(s, t) && (len(t) < len(s) || j < i) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, s)
		}
	}
	return out
}

// A cut is a set of a prefilter's literals one of which occurs in every
// text it may match: a test of a few words of a found set that rules most
// texts out before the prefilter's tree is walked.
type cut []cutWord

// cutWord is a word of a found set and the cut's literals in it.
type cutWord struct {
	w    int
	bits uint64
}

// meets reports whether found holds a literal of c (nil: no cut, every
// text may).
func (c cut) meets(found []uint64) bool {
	if c == nil {
		return true
	}
	for _, cw := range c {
		if found[cw.w]&cw.bits != 0 {
			return true
		}
	}
	return false
}

// cut returns the cut of p (bound to lits, by id) that looks rarest
// (cutCost), nil when p knows nothing.
func (p *prefilter) cut(lits []string) cut {
	ids, ok := p.cutIDs(lits)
	if !ok {
		return nil
	}
	var c cut
	for _, id := range ids {
		w, bit := int(id>>6), uint64(1)<<(id&63)
		k := 0
		for k < len(c) && c[k].w != w {
			k++
		}
		if k == len(c) {
			c = append(c, cutWord{w: w})
		}
		c[k].bits |= bit
	}
	slices.SortFunc(c, func(a, b cutWord) int { return a.w - b.w })
	return c
}

// cutIDs returns the ids of the literals of p's rarest cut: an opAny's
// literals; of an opAnd, its rarest part's; of an opOr, every branch's.
func (p *prefilter) cutIDs(lits []string) ([]int32, bool) {
	switch p.op {
	case opAny:
		return p.ids, true
	case opAnd:
		var best []int32
		found, bestCost := false, 0.0
		for _, s := range p.sub {
			if ids, ok := s.cutIDs(lits); ok {
				if cost := cutCost(ids, lits); !found || cost < bestCost {
					best, bestCost, found = ids, cost, true
				}
			}
		}
		return best, found
	case opOr:
		var all []int32
		for _, s := range p.sub {
			ids, ok := s.cutIDs(lits)
			if !ok {
				return nil, false
			}
			all = append(all, ids...)
		}
		return all, true
	}
	return nil, false
}

// cutCost is how often one of the literals ids (of lits) may be expected
// in a sentence: a literal of n bytes about 1/8^(n-1) of the places, a
// word of the commonest few as often as a letter. Only the order of two
// cuts' costs matters.
func cutCost(ids []int32, lits []string) float64 {
	cost := 0.0
	for _, id := range ids {
		l := lits[id]
		c := math.Pow(8, -float64(len(l)-1))
		if commonWords[l] {
			c = 1
		}
		cost += c
	}
	return cost
}

// commonWords are English words too common to rule a sentence out.
var commonWords = map[string]bool{"the": true, "to": true, "of": true, "and": true, "in": true, "is": true, "it": true, "you": true,
	"that": true, "for": true, "on": true, "with": true, "as": true, "be": true, "at": true, "by": true, "this": true, "have": true,
	"from": true, "or": true, "an": true, "all": true, "any": true, "if": true, "not": true, "do": true, "when": true, "your": true,
	"can": true, "will": true, "one": true, "use": true, "are": true, "has": true, "was": true, "new": true, "no": true}
