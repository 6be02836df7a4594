package policy

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// ruleSet is the rules of a list that apply to one tool (applicable), with
// a filter that rules out all their path rules at once: a deny list of
// protected paths is ~50 rules, and most paths hold none of their
// literals.
type ruleSet struct {
	rules []*rule
	// others are the rules of rules that are not path rules, in order;
	// lits, when not nil, holds the required literal (lower case) of every
	// line of the path rules that can make a match (not a negation): a
	// location holding none of them is matched by none of the path rules.
	// Nil when a line has no literal: every location must be walked.
	others []*rule
	lits   *litScan
}

func newRuleSet(rules []*rule) *ruleSet {
	rs := &ruleSet{rules: rules}
	var lits []string
	for _, r := range rules {
		if r.kind != specPath {
			rs.others = append(rs.others, r)
			continue
		}
		for i := range r.path.lines {
			l := &r.path.lines[i]
			if l.neg {
				continue
			}
			if l.litLow == "" {
				return rs
			}
			lits = append(lits, l.litLow)
		}
	}
	if len(lits) > 0 {
		rs.lits = scans.get(lits)
	}
	return rs
}

// pathsOut reports whether no path rule of rs matches (ignoring case, as
// deny, ask and guarded rules do) any of the locations.
func (rs *ruleSet) pathsOut(locs []location) bool {
	if rs.lits == nil {
		return false
	}
	for i := range locs {
		if rs.lits.holds(locs[i].absLow) || rs.lits.holds(locs[i].relLow) {
			return false
		}
	}
	return true
}

// litScan is an automaton (Aho–Corasick, as a table) that tells in one
// pass over a string whether it holds any of a set of literals.
type litScan struct {
	class [256]uint8 // byte → column; 0 for a byte no literal holds
	cols  int
	next  []uint16 // state*cols + column → state
	final []bool   // a literal ends in this state
}

// maxScanStates bounds an automaton (a state per byte of the literals):
// past it there is no filter.
const maxScanStates = 4096

func newLitScan(lits []string) *litScan {
	a := &litScan{cols: 1}
	for _, l := range lits {
		for i := 0; i < len(l); i++ {
			if a.class[l[i]] == 0 {
				if a.cols == 256 {
					return nil
				}
				a.class[l[i]] = uint8(a.cols)
				a.cols++
			}
		}
	}
	// the trie: state 0 is the root; -1 no edge yet
	edge := func(s, c int) *uint16 { return &a.next[s*a.cols+c] }
	grow := func() int {
		a.next = append(a.next, make([]uint16, a.cols)...)
		a.final = append(a.final, false)
		return len(a.final) - 1
	}
	grow()
	const none = 0 // an edge to the root is none until the links are set
	for _, l := range lits {
		s := 0
		for i := 0; i < len(l); i++ {
			c := int(a.class[l[i]])
			if *edge(s, c) == none {
				if len(a.final) >= maxScanStates {
					return nil
				}
				n := grow()
				*edge(s, c) = uint16(n)
			}
			s = int(*edge(s, c))
		}
		a.final[s] = true
	}
	// breadth first: each state's missing edges are those of its link
	// (the longest proper suffix that is a trie state); a state whose
	// link is final is final (it ends a literal too).
	link := make([]int, len(a.final))
	queue := []int{}
	for c := range a.cols {
		if n := int(*edge(0, c)); n != 0 {
			queue = append(queue, n)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		a.final[s] = a.final[s] || a.final[link[s]]
		for c := range a.cols {
			n := int(*edge(s, c))
			if n == 0 {
				*edge(s, c) = *edge(link[s], c)
				continue
			}
			link[n] = int(*edge(link[s], c))
			queue = append(queue, n)
		}
	}
	return a
}

// holds reports whether s holds one of the literals.
func (a *litScan) holds(s string) bool {
	st := 0
	for i := 0; i < len(s); i++ {
		st = int(a.next[st*a.cols+int(a.class[s[i]])])
		if a.final[st] {
			return true
		}
	}
	return false
}

// scans shares the automata among the tools (and policies) whose rule
// sets hold the same literals: every read-only path tool has the same
// protected paths.
var scans scanCache

type scanCache struct {
	m sync.Map // literals joined by "\x00", sorted → *litScan (nil: none)
	n atomic.Int32
}

func (sc *scanCache) get(lits []string) *litScan {
	lits = slices.Clone(lits)
	slices.Sort(lits)
	lits = slices.Compact(lits)
	key := strings.Join(lits, "\x00")
	if v, ok := sc.m.Load(key); ok {
		return v.(*litScan)
	}
	a := newLitScan(lits)
	if sc.n.Add(1) > maxApplies {
		sc.m.Clear()
		sc.n.Store(1)
	}
	sc.m.Store(key, a)
	return a
}
