package trust

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
)

// literals finds which of a fixed set of strings occur in a text, in one
// pass over its bytes (Aho-Corasick, as a table over byte classes). The
// result check looks for some 800 words and fragments in every sentence (the
// cues' need words and prefilters): one pass instead of a strings.Contains
// per word.
type literals struct {
	ids   map[string]int32
	list  []string   // by id: the automaton is built in the order they were added, the same at every start
	class [256]uint8 // byte → class; 0: a byte no literal holds
	width int        // number of classes
	next  []uint16   // state*width + class → state; state 0 is the root
	out   []int32    // the literals that end in state st, suffixes included: out[outAt[st]:outAt[st+1]]
	outAt []int32
	long  int                     // the length of the longest literal
	n     int                     // the number of literals
	cols  atomic.Pointer[columns] // next by byte, for long texts (byByte)
	read  atomic.Int64            // bytes of long texts scanned before cols was made (byByte)
}

// add returns the id of s, adding it (before build).
func (l *literals) add(s string) int32 {
	if l.ids == nil {
		l.ids = map[string]int32{}
	}
	id, ok := l.ids[s]
	if !ok {
		id = int32(len(l.ids))
		l.ids[s] = id
		l.list = append(l.list, s)
	}
	return id
}

// build makes the automaton of the strings added. The trie has a state per
// distinct prefix, fewer than the strings' bytes, which must stay below
// 65536 (the result check's are about 3,000). An ASCII capital gets the
// class of its small letter: the automaton reads text as if lowered.
func (l *literals) build() {
	bytes := 1
	for _, s := range l.list {
		bytes += len(s) // at most a state per byte
		l.long = max(l.long, len(s))
		for i := 0; i < len(s); i++ {
			if l.class[s[i]] == 0 {
				l.width++
				l.class[s[i]] = uint8(l.width)
			}
		}
	}
	for c := byte('A'); c <= 'Z'; c++ {
		l.class[c] = l.class[c+'a'-'A']
	}
	l.width++ // class 0
	l.n = len(l.list)
	w := l.width
	// The trie, as a list of children per state (first and sibling link
	// them; class is the class of the edge to a state), and the literals
	// that end in each state, a list through ends.
	class := make([]uint8, bytes)
	first := make([]uint16, bytes)
	sibling := make([]uint16, bytes)
	ends := make([]int32, bytes+len(l.ids)) // state → its first literal + 1; bytes+literal → the next + 1
	states := 1
	for id, s := range l.list {
		id := int32(id)
		st := 0
	walk:
		for i := 0; i < len(s); i++ {
			c := l.class[s[i]]
			for t := first[st]; t != 0; t = sibling[t] {
				if class[t] == c {
					st = int(t)
					continue walk
				}
			}
			if states > 0xFFFF {
				panic("trust: too many literals for the result check's automaton")
			}
			class[states], sibling[states], first[st] = c, first[st], uint16(states)
			st = states
			states++
		}
		ends[bytes+int(id)] = ends[st]
		ends[st] = id + 1
	}
	l.next = make([]uint16, states*w)
	// Breadth first (a state after its fail state, the longest proper
	// suffix of its prefix in the trie): a state's row is its fail state's
	// with its own edges on top, and its literals are its own and its fail
	// state's.
	// (In locals: an append to a field of l while the collector marks
	// pays a write barrier.)
	fail := make([]uint16, states)
	queue := make([]uint16, 1, states)
	next, found := l.next, make([]int32, 0, 2*len(l.ids))
	outAt := make([]int32, states+1)
	outEnd := make([]int32, states)
	for len(queue) > 0 {
		st := int(queue[0])
		queue = queue[1:]
		f := int(fail[st])
		row, frow := next[st*w:(st+1)*w], next[f*w:(f+1)*w]
		if st != 0 {
			copy(row, frow)
		}
		for t := first[st]; t != 0; t = sibling[t] {
			row[class[t]] = t
			if st != 0 {
				fail[t] = frow[class[t]]
			}
			queue = append(queue, t)
		}
		outAt[st] = int32(len(found))
		for id := ends[st]; id != 0; id = ends[bytes+int(id)-1] {
			found = append(found, id-1)
		}
		if st != 0 {
			found = append(found, found[outAt[f]:outEnd[f]]...)
		}
		outEnd[st] = int32(len(found))
	}
	// States are numbered in the order the trie was made, not breadth
	// first: each one's literals are found[outAt[st]:outEnd[st]]. Lay
	// them out in state order so that outAt[st+1] ends them.
	out := make([]int32, 0, len(found))
	for st := range states {
		at := len(out)
		out = append(out, found[outAt[st]:outEnd[st]]...)
		outAt[st] = int32(at)
	}
	outAt[states] = int32(len(out))
	l.out, l.outAt = out, outAt
	l.cols.Store(nil)
}

// scan sets in found (a bit per id, cleared by the caller) every literal
// that occurs in text with its ASCII letters lowered (the literals are in
// lower case).
func (l *literals) scan(text string, found []uint64) {
	seen := l.newEntered()
	l.scanFrom(0, text, seen)
	l.collect(seen, found)
}

// entered is what scans entered (see scanFrom): for a short text the
// states, one a byte in order (a store per byte, and collect reads only as
// many as the text has bytes), for a long text a byte per state of the
// automaton (marks, from stateBytes: a store per byte where a bit needs a
// read and a write), which collect reads and clear empties.
type entered struct {
	states []uint16
	marks  *[1 << 16]byte // nil, or long: the states long texts entered are marked here
	n      int            // the number of states of the automaton
}

// newEntered returns an empty set of l's states.
func (l *literals) newEntered() *entered {
	return &entered{n: len(l.outAt) - 1}
}

// scanFrom runs the automaton over text from state st, the state a scan of
// what came before it ended in, records in seen each state it enters, and
// returns the state it ends in: a text scanned in pieces enters the states
// a scan of it whole enters, as far as the literals found tell (collect
// turns the states into literals). A byte costs a step and a store,
// whatever ends there.
//
// A step waits for the one before (the next state is read from the table
// at the state), so a long text is read as four quarters at once: each
// from the root but the first, starting as many bytes before its quarter
// as a literal may span, so that it sees every literal that ends in its
// quarter, and the last ends in the state a scan of the whole would (the
// longest suffix of the text that begins a literal, shorter than that).
// The quarters are cut to the loop's length, the steps read the table by
// columns (byByte: a load a step, no bounds check) and the states are
// marked in an array a uint16 indexes, so that no bounds check holds a
// register: with them the loop spilled its states (22 instructions a
// byte, then 15 through the rows, 9 through the columns).
func (l *literals) scanFrom(st int, text string, seen *entered) int {
	next, class, width := l.next, &l.class, l.width
	if len(text) < 16*l.long {
		at := len(seen.states)
		seen.states = slices.Grow(seen.states, len(text))[:at+len(text)]
		states := seen.states[at:]
		for i := 0; i < len(text); i++ {
			st = int(next[st*width+int(class[text[i]])])
			states[i] = uint16(st)
		}
		return st
	}
	if seen.marks == nil {
		seen.marks = stateBytes.Get().(*[1 << 16]byte)
	}
	m := seen.marks
	q := len(text) / 4
	a, b, c, d := text[:q], text[q-l.long:2*q], text[2*q-l.long:3*q], text[3*q-l.long:]
	cols := l.byByte(len(text))
	if cols == nil {
		return l.rowLanes(m, a, b, c, d, st)
	}
	s2, s3, s4 := cols.lanes(m, a, b[:q], c[:q], d[:q], uint32(st))
	c2, d2 := c[q:], d[q:len(b)]
	for i, x := range []byte(b[q:]) {
		s2 = cols.step(s2, x)
		s3 = cols.step(s3, c2[i])
		s4 = cols.step(s4, d2[i])
		m[uint16(s2)], m[uint16(s3)], m[uint16(s4)] = 1, 1, 1
	}
	for _, x := range []byte(d[len(b):]) {
		s4 = cols.step(s4, x)
		m[uint16(s4)] = 1
	}
	return int(s4)
}

// columns is the automaton's table a column per class, for the scan of a
// long text: table[off[c]+st] is the state after st on byte c, the class
// folded into off (where next[st*width+class[c]] costs a load of the
// class, a multiply and a bounds check, and with four lanes the loop
// spilled). The table is an array of a power of two entries, so that an
// index masked to it needs no check. For the result check's automaton
// (68 classes, 2,818 states: 191,624 entries) it is 512 KB, made at the
// first long scan.
type columns struct {
	off   [256]uint32
	table [columnsMask + 1]uint16
}

// step returns the state after st on byte x.
func (c *columns) step(st uint32, x byte) uint32 {
	return uint32(c.table[(c.off[x]+st)&columnsMask])
}

// lanes runs the automaton over a, b, c and d (as long as a) at once, a
// from st and the others from the root, marks in m every state entered,
// and returns the states b, c and d end in. (A function of its own: with
// what scanFrom keeps besides, its variables went to memory: 36
// instructions a step of the four, 62 before.)
func (c *columns) lanes(m *[1 << 16]byte, a, b, cc, d string, st uint32) (s2, s3, s4 uint32) {
	s1 := st
	b, cc, d = b[:len(a)], cc[:len(a)], d[:len(a)]
	_, _ = m[0], c.off[0] // their nil checks, here and not at every step
	for i := range len(a) {
		s1 = c.step(s1, a[i])
		s2 = c.step(s2, b[i])
		s3 = c.step(s3, cc[i])
		s4 = c.step(s4, d[i])
		m[uint16(s1)], m[uint16(s2)], m[uint16(s3)], m[uint16(s4)] = 1, 1, 1, 1
	}
	return s2, s3, s4
}

// rowLanes is scanFrom's four lanes over the quarters a, b, c and d (b,
// c and d begin l.long bytes before their quarter) through the rows of
// next, for a process that has no columns yet: the marks and the state
// returned are those of the columns' scan.
func (l *literals) rowLanes(m *[1 << 16]byte, a, b, c, d string, st int) int {
	next, class, width := l.next, &l.class, l.width
	q := len(a)
	s2, s3, s4 := 0, 0, 0
	b1, c1, d1 := b[:q], c[:q], d[:q]
	for i := range len(a) {
		st = int(next[st*width+int(class[a[i]])])
		s2 = int(next[s2*width+int(class[b1[i]])])
		s3 = int(next[s3*width+int(class[c1[i]])])
		s4 = int(next[s4*width+int(class[d1[i]])])
		m[uint16(st)], m[uint16(s2)], m[uint16(s3)], m[uint16(s4)] = 1, 1, 1, 1
	}
	c2, d2 := c[q:], d[q:len(b)]
	for i, x := range []byte(b[q:]) {
		s2 = int(next[s2*width+int(class[x])])
		s3 = int(next[s3*width+int(class[c2[i]])])
		s4 = int(next[s4*width+int(class[d2[i]])])
		m[uint16(s2)], m[uint16(s3)], m[uint16(s4)] = 1, 1, 1
	}
	for _, x := range []byte(d[len(b):]) {
		s4 = int(next[s4*width+int(class[x])])
		m[uint16(s4)] = 1
	}
	return s4
}

// columnsMask masks an index into columns.table.
const columnsMask = 1<<18 - 1

// columnsAfter is how many bytes of long texts a process scans through
// the rows before it makes the columns: making them costs about two
// million instructions, which they win back over some 300 KB, so a
// process that reads one long result (toolgate call read_file of a
// megabyte) never pays for them, and a gateway does after its first
// thousand results of a kilobyte.
const columnsAfter = 1 << 20

// byByte returns l's columns for the scan of a long text of n bytes, made
// once the texts scanned before it add up to columnsAfter (build and
// relabel drop them), or nil: before then, or when the automaton has
// more entries than they hold.
func (l *literals) byByte(n int) *columns {
	if c := l.cols.Load(); c != nil {
		return c
	}
	if l.read.Add(int64(n))-int64(n) < columnsAfter {
		return nil
	}
	states := len(l.outAt) - 1
	w := l.width
	if states*w > columnsMask+1 {
		return nil
	}
	c := new(columns)
	for cl := range w {
		col := c.table[cl*states : cl*states+states]
		for st := range states {
			col[st] = l.next[st*w+cl]
		}
	}
	for b := range 256 {
		c.off[b] = uint32(int(l.class[b]) * states)
	}
	l.cols.CompareAndSwap(nil, c)
	return l.cols.Load()
}

// stateBytes holds scanFrom's marks of the states long texts entered, a
// byte per possible state (entered.marks), all zero between scans
// (entered.clear empties them; a check that panicked does not put its
// array back).
var stateBytes = sync.Pool{New: func() any { return new([1 << 16]byte) }}

// collect sets in found the literals that end in the states seen holds,
// and empties seen.
func (l *literals) collect(seen *entered, found []uint64) {
	l.gather(seen, found, l.out, l.outAt)
	seen.cleared()
}

// gather sets in found the literals of out that end in the states seen
// holds: those of state st are out[outAt[st]:outAt[st+1]]. A long text
// enters few of the states: the marks are looked at 64 bytes at a time,
// then 8, then a byte (a state) a set one, and emptied as read (a store
// per word of eight that holds one, where clearing them all after costs
// a pass over every state).
func (l *literals) gather(seen *entered, found []uint64, out, outAt []int32) {
	for _, st := range seen.states {
		for k, end := outAt[st], outAt[st+1]; k < end; k++ {
			id := out[k]
			found[id>>6] |= 1 << (id & 63)
		}
	}
	m := seen.marks
	if m == nil {
		return
	}
	le := binary.LittleEndian
	for at := 0; at < seen.n; at += 64 {
		block := (*[64]byte)(m[at&(len(m)-64):]) // at is below len(m): the mask spares the checks
		if le.Uint64(block[0:])|le.Uint64(block[8:])|le.Uint64(block[16:])|le.Uint64(block[24:])|
			le.Uint64(block[32:])|le.Uint64(block[40:])|le.Uint64(block[48:])|le.Uint64(block[56:]) == 0 {
			continue
		}
		for w := 0; w < 64; w += 8 {
			x := le.Uint64(block[w:])
			if x == 0 {
				continue
			}
			le.PutUint64(block[w:], 0) // emptied as read (see collect)
			// Each byte is 0 or 1: a set byte's lowest bit is bit 8j.
			for ; x != 0; x &= x - 1 {
				st := at + w + bits.TrailingZeros64(x)>>3
				for k, end := outAt[st], outAt[st+1]; k < end; k++ {
					id := out[k]
					found[id>>6] |= 1 << (id & 63)
				}
			}
		}
	}
}

// clear empties seen.
func (seen *entered) clear() {
	if seen.marks != nil {
		clear(seen.marks[:seen.n])
	}
	seen.cleared()
}

// cleared empties seen, whose marks gather emptied.
func (seen *entered) cleared() {
	seen.states = seen.states[:0]
	if seen.marks != nil {
		stateBytes.Put(seen.marks)
		seen.marks = nil
	}
}

// only returns the literals that end in each state (as l.out and l.outAt
// hold them) that keep holds: what gather sets of only those.
func (l *literals) only(keep []uint64) (out, outAt []int32) {
	outAt = make([]int32, len(l.outAt))
	out = make([]int32, 0, len(l.out))
	for st := range len(l.outAt) - 1 {
		outAt[st] = int32(len(out))
		for _, id := range l.out[l.outAt[st]:l.outAt[st+1]] {
			if keep[id>>6]&(1<<(id&63)) != 0 {
				out = append(out, id)
			}
		}
	}
	outAt[len(outAt)-1] = int32(len(out))
	return out, outAt
}

// words is the size of a found set, in uint64s.
func (l *literals) words() int { return (l.n + 63) / 64 }

// anyOf reports whether one of ids is in found.
func anyOf(found []uint64, ids []int32) bool {
	for _, id := range ids {
		if found[id>>6]&(1<<(id&63)) != 0 {
			return true
		}
	}
	return false
}

// relabel renumbers the states of l (built) so that those hot holds come
// last, the root staying 0, and returns the first of them: a scan tells a
// hot state by its number (scanHot).
func (l *literals) relabel(hot func(st int) bool) int {
	states := len(l.outAt) - 1
	order := make([]int, 0, states) // new → old
	for st := range states {
		if !hot(st) {
			order = append(order, st)
		}
	}
	from := len(order)
	for st := range states {
		if hot(st) {
			order = append(order, st)
		}
	}
	if order[0] != 0 {
		panic("trust: the root of the automaton ends a literal")
	}
	id := make([]uint16, states) // old → new
	for n, old := range order {
		id[old] = uint16(n)
	}
	w := l.width
	next := make([]uint16, len(l.next))
	out := make([]int32, 0, len(l.out))
	outAt := make([]int32, states+1)
	for n, old := range order {
		for c := range w {
			next[n*w+c] = id[l.next[old*w+c]]
		}
		outAt[n] = int32(len(out))
		out = append(out, l.out[l.outAt[old]:l.outAt[old+1]]...)
	}
	outAt[states] = int32(len(out))
	l.next, l.out, l.outAt = next, out, outAt
	l.cols.Store(nil)
	return from
}

// scanHot runs the automaton over text (lowering its ASCII letters) and
// sets in found the literals of out that end in the states it enters that
// are numbered from hot on (relabel): those of state st are
// out[outAt[st]:outAt[st+1]], none for a state below hot. A byte costs a
// step and a test, where scanFrom and gather cost a step, a store and a
// look at the state's literals.
func (l *literals) scanHot(text string, hot int, found []uint64, out, outAt []int32) {
	for st := 0; ; {
		var n int
		n, st = l.until(text, st, hot)
		if n == len(text) {
			return
		}
		text = text[n+1:]
		for k, end := outAt[st], outAt[st+1]; k < end; k++ {
			id := out[k]
			found[id>>6] |= 1 << (id & 63)
		}
	}
}

// until runs the automaton over text from state st and returns the index
// of the first byte whose step enters a state numbered hot or more, and
// that state: len(text) and the last state when none does. (A loop of its
// own: with the gathering in it, its variables went to memory.)
func (l *literals) until(text string, st, hot int) (int, int) {
	next, class, width := l.next, &l.class, l.width
	for i := range len(text) {
		st = int(next[st*width+int(class[text[i]])])
		if st >= hot {
			return i, st
		}
	}
	return len(text), st
}
