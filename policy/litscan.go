package policy

import (
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// ruleSet is the rules of a list that apply to one tool (applicable), with
// a filter that rules out all their path rules at once: a deny list of
// protected paths is ~50 rules, and most paths hold none of their
// literals.
type ruleSet struct {
	key   appliesKey // the list and the tool it was made for
	rules []*rule
	// others are the rules of rules that are not path rules, in order;
	// lits, when not nil, holds the required literal (lower case) of every
	// line of the path rules that can make a match (not a negation): a
	// location holding none of them is matched by none of the path rules.
	// Both nil when there is no path rule, a line has no literal or they
	// are too many: every location must be walked.
	others []*rule
	lits   *litScan
}

func newRuleSet(rules []*rule) *ruleSet {
	var others []*rule
	var lits []string
	for _, r := range rules {
		if r.kind != specPath {
			others = append(others, r)
			continue
		}
		for i := range r.path.lines {
			l := &r.path.lines[i]
			if l.neg {
				continue
			}
			if l.litLow == "" {
				return &ruleSet{rules: rules} // no filter
			}
			lits = append(lits, l.litLow)
		}
	}
	var a *litScan
	if len(lits) > 0 {
		a = scanOf(lits) // nil: too many for an automaton
	}
	if a == nil {
		return &ruleSet{rules: rules}
	}
	return &ruleSet{rules: rules, others: others, lits: a}
}

// pathsOut reports whether no path rule of rs matches (ignoring case, as
// deny, ask and guarded rules do) any of the locations.
func (rs *ruleSet) pathsOut(locs []location) bool {
	if rs.lits == nil {
		return false
	}
	for i := range locs {
		loc := &locs[i]
		absHeld, absOK := rs.lits.holdsFold(loc.abs)
		relHeld, relOK := rs.lits.holdsFold(loc.rel)
		if absHeld || relHeld {
			return false
		}
		if !absOK || !relOK { // outside ASCII: the lower case itself
			if relLow, absLow := loc.lower(); rs.lits.holds(absLow) || rs.lits.holds(relLow) {
				return false
			}
		}
	}
	return true
}

// litScan is an automaton (Aho–Corasick, as a table) that tells in one
// pass over a string whether it holds any of a set of literals.
type litScan struct {
	class [256]uint8 // byte → column; 0 for a byte no literal holds
	fold  [128]uint8 // ASCII byte → the column of its lower case
	// next[state+column] is the next state, a state being the offset of
	// its row (its number times the columns), or found when a literal
	// ends there.
	next []uint32
}

const found = math.MaxUint32

// maxScanStates bounds an automaton (a state per byte of the literals):
// past it there is no filter.
const maxScanStates = 4096

func newLitScan(lits []string) *litScan {
	a := &litScan{}
	cols := 1
	for _, l := range lits {
		for i := 0; i < len(l); i++ {
			if a.class[l[i]] == 0 {
				if cols == 256 {
					return nil
				}
				a.class[l[i]] = uint8(cols)
				cols++
			}
		}
	}
	for c := range a.fold {
		low := byte(c)
		if 'A' <= low && low <= 'Z' {
			low += 'a' - 'A'
		}
		a.fold[c] = a.class[low]
	}
	// the trie, by state numbers: 0 is the root, and an edge to 0 is
	// missing until the links are set
	var next []uint32
	var final []bool
	edge := func(s, c int) *uint32 { return &next[s*cols+c] }
	grow := func() int {
		next = append(next, make([]uint32, cols)...)
		final = append(final, false)
		return len(final) - 1
	}
	grow()
	for _, l := range lits {
		s := 0
		for i := 0; i < len(l); i++ {
			c := int(a.class[l[i]])
			if *edge(s, c) == 0 {
				if len(final) >= maxScanStates {
					return nil
				}
				n := grow() // before edge: grow moves next
				*edge(s, c) = uint32(n)
			}
			s = int(*edge(s, c))
		}
		final[s] = true
	}
	// breadth first: each state's missing edges are those of its link
	// (the longest proper suffix that is a trie state); a state whose
	// link is final is final (it ends a literal too).
	link := make([]int, len(final))
	queue := []int{}
	for c := range cols {
		if n := int(*edge(0, c)); n != 0 {
			queue = append(queue, n)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		final[s] = final[s] || final[link[s]]
		for c := range cols {
			n := int(*edge(s, c))
			if n == 0 {
				*edge(s, c) = *edge(link[s], c)
				continue
			}
			link[n] = int(*edge(link[s], c))
			queue = append(queue, n)
		}
	}
	for i, n := range next {
		if final[n] {
			next[i] = found
		} else {
			next[i] = n * uint32(cols)
		}
	}
	a.next = next
	return a
}

// holds reports whether s holds one of the literals.
func (a *litScan) holds(s string) bool {
	st := uint32(0)
	for i := 0; i < len(s); i++ {
		st = a.next[st+uint32(a.class[s[i]])]
		if st == found {
			return true
		}
	}
	return false
}

// holdsFold is holds(strings.ToLower(s)) when ok; ok is false, and held
// says nothing, when s has a byte outside ASCII before a literal is found
// (strings.ToLower may spell its lower case in other bytes: "\u212A" is
// "k", an invalid byte "\ufffd"). An ASCII prefix's lower case is the
// prefix of s's lower case, so a literal found in it is held.
func (a *litScan) holdsFold(s string) (held, ok bool) {
	st := uint32(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return false, false
		}
		st = a.next[st+uint32(a.fold[c])]
		if st == found {
			return true, true
		}
	}
	return false, true
}

// scans shares the automata among the tools (and policies) whose rule
// sets hold the same literals: every read-only path tool has the same
// protected paths.
var scans boundedMap // literals joined by "\x00", sorted → *litScan (nil: none)

// scanOf returns the automaton of lits (nil: none), from scans.
func scanOf(lits []string) *litScan {
	lits = slices.Clone(lits)
	slices.Sort(lits)
	lits = slices.Compact(lits)
	key := strings.Join(lits, "\x00")
	if v, ok := scans.Load(key); ok {
		return v.(*litScan)
	}
	a := newLitScan(lits)
	scans.add(key, a)
	return a
}
