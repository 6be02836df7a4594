package trust

// literals finds which of a fixed set of strings occur in a text, in one
// pass over its bytes (Aho-Corasick, as a table over byte classes). The
// result check looks for some 800 words and fragments in every sentence (the
// cues' need words and prefilters): one pass instead of a strings.Contains
// per word.
type literals struct {
	ids   map[string]int32
	class [256]uint8 // byte → class; 0: a byte no literal holds
	width int        // number of classes
	next  []uint16   // state*width + class → state; state 0 is the root
	out   [][]int32  // state → the literals that end there, suffixes included
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
	}
	return id
}

// build makes the automaton of the strings added. The trie has a state per
// distinct prefix, fewer than the strings' bytes, which must stay below
// 65536 (the result check's are about 5,000).
func (l *literals) build() {
	for s := range l.ids {
		for i := 0; i < len(s); i++ {
			if l.class[s[i]] == 0 {
				l.width++
				l.class[s[i]] = uint8(l.width)
			}
		}
	}
	l.width++ // class 0
	// The trie: next holds its edges, 0 meaning none yet (the root is never
	// a child).
	l.next = make([]uint16, l.width)
	l.out = [][]int32{nil}
	for s, id := range l.ids {
		st := 0
		for i := 0; i < len(s); i++ {
			c := int(l.class[s[i]])
			if l.next[st*l.width+c] == 0 {
				if len(l.out) > 0xFFFF {
					panic("trust: too many literals for the result check's automaton")
				}
				l.next[st*l.width+c] = uint16(len(l.out))
				l.next = append(l.next, make([]uint16, l.width)...)
				l.out = append(l.out, nil)
			}
			st = int(l.next[st*l.width+c])
		}
		l.out[st] = append(l.out[st], id)
	}
	// Breadth first, each state's missing edges become those of its
	// longest proper suffix in the trie (its fail state), whose outputs it
	// inherits.
	fail := make([]uint16, len(l.out))
	queue := []int{}
	for c := range l.width {
		if t := l.next[c]; t != 0 {
			queue = append(queue, int(t)) // fail: the root
		}
	}
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		f := int(fail[st])
		l.out[st] = append(l.out[st], l.out[f]...)
		for c := range l.width {
			t := l.next[st*l.width+c]
			if t == 0 {
				l.next[st*l.width+c] = l.next[f*l.width+c]
				continue
			}
			fail[t] = l.next[f*l.width+c]
			queue = append(queue, int(t))
		}
	}
}

// scan sets in found (a bit per id, cleared by the caller) every literal
// that occurs in text with its ASCII letters lowered (the literals are in
// lower case).
func (l *literals) scan(text string, found []uint64) { l.scanFrom(0, text, found) }

// scanFrom scans text from state st, the state a scan of what came
// before it ended in, and returns the state it ends in: a text scanned in
// pieces finds what a scan of it whole finds.
func (l *literals) scanFrom(st int, text string, found []uint64) int {
	for i := 0; i < len(text); i++ {
		c := text[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		st = int(l.next[st*l.width+int(l.class[c])])
		for _, id := range l.out[st] {
			found[id>>6] |= 1 << (id & 63)
		}
	}
	return st
}

// words is the size of a found set, in uint64s.
func (l *literals) words() int { return (len(l.ids) + 63) / 64 }

// anyOf reports whether one of ids is in found.
func anyOf(found []uint64, ids []int32) bool {
	for _, id := range ids {
		if found[id>>6]&(1<<(id&63)) != 0 {
			return true
		}
	}
	return false
}
