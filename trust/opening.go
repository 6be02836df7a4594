package trust

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// The opening cue (an imperative that opens a sentence: "Now send …",
// "Note: call …", "To finish, run …") is the one cue that addresses the
// model with no word a sentence must hold, so every sentence of prose with a
// verb in it may hold it, and most of a text's sentences would be read to
// the end for it. Yet its verb can only stand at a lead of the sentence: its
// first word character, the first after a colon (past blanks and a quote)
// or after a comma (past blanks), or after one of its adverbs ("now",
// "then", …) standing there. openingLead looks at those few places, a
// word each, and the cue is asked only of a sentence where a verb stands at
// one.

// openingCue is the cue: reOpening, a verb, a blank.
func openingCue() resultCue {
	return led(addressCue("", reOpening+reVerbs+`\s`, 1, ""), openingLead)
}

// openingWords are the verbs' and the adverbs' words, lower case: a verb of
// two words ("go to") by its first; and per first letter, a bit per length
// one of them has (a word no bit allows is neither, found in no map).
var openingWords = sync.OnceValue(func() (w struct {
	verbs, adverbs map[string]bool
	lengths        [26]uint16
}) {
	w.verbs, w.adverbs = alternatives(reVerbs), alternatives(reAdverb)
	for _, words := range []map[string]bool{w.verbs, w.adverbs} {
		for word := range words {
			w.lengths[word[0]-'a'] |= 1 << len(word)
		}
	}
	return w
})

// alternatives returns the words of a vocabulary group `(?:a|b\s+c|d[sz]e)`:
// each alternative up to its first \s, with its classes of letters
// expanded (a, b, dse, dze).
func alternatives(group string) map[string]bool {
	out := map[string]bool{}
	for _, alt := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(group, "(?:"), ")"), "|") {
		alt, _, _ = strings.Cut(alt, `\s`)
		if !strings.Contains(alt, "[") { // most: a word as it is
			out[alt] = true
			continue
		}
		words := []string{""}
		for len(alt) > 0 {
			letters := alt[:1]
			if alt[0] == '[' {
				end := strings.IndexByte(alt, ']')
				letters, alt = alt[1:end], alt[end+1:]
			} else {
				alt = alt[1:]
			}
			var next []string
			for _, w := range words {
				for i := range len(letters) {
					next = append(next, w+letters[i:i+1])
				}
			}
			words = next
		}
		for _, w := range words {
			out[w] = true
		}
	}
	return out
}

// openingLead reports whether a verb of the opening cue stands at a lead
// of a plain sentence (readSentence.plain), alone or after an adverb: false
// when the cue cannot match. (Its \W and \s are ASCII classes, every
// character outside ASCII a \W; a letter of (?i) matches only ASCII
// letters in a plain sentence.)
func openingLead(t string) bool {
	i := 0
	for i < len(t) && !wordByte(t[i]) {
		i++
	}
	if verbAt(t, i) {
		return true
	}
	// After each colon, then after each comma (the order does not change
	// the answer; IndexByte finds them many bytes at a time).
	for i := strings.IndexByte(t, ':'); i >= 0; i = indexAfter(t, i, ':') {
		j := spaces(t, i+1)
		if j < len(t) && (t[j] == '"' || t[j] == '\'') {
			j++
		}
		if verbAt(t, j) {
			return true
		}
	}
	for i := strings.IndexByte(t, ','); i >= 0; i = indexAfter(t, i, ',') {
		if verbAt(t, spaces(t, i+1)) {
			return true
		}
	}
	return false
}

// indexAfter returns the index of the first c in t after i, or -1.
func indexAfter(t string, i int, c byte) int {
	if j := strings.IndexByte(t[i+1:], c); j >= 0 {
		return i + 1 + j
	}
	return -1
}

// verbAt reports whether the word at i is a verb of the opening cue, or
// an adverb of it followed (past blanks, a comma, blanks) by one.
func verbAt(t string, i int) bool {
	words := openingWords()
	var b [12]byte
	n, end := letterWord(t, i, &b)
	if n == 0 || words.lengths[b[0]-'a']&(1<<n) == 0 {
		return false
	}
	if words.verbs[string(b[:n])] {
		return true
	}
	if !words.adverbs[string(b[:n])] {
		return false
	}
	j := spaces(t, end)
	if j < len(t) && t[j] == ',' {
		j = spaces(t, j+1)
	}
	n, _ = letterWord(t, j, &b)
	return n > 0 && words.lengths[b[0]-'a']&(1<<n) != 0 && words.verbs[string(b[:n])]
}

// letterWord puts in b the run of ASCII letters at i, lowered, and returns
// its length (0 when longer than b: no verb or adverb is) and its end.
func letterWord(t string, i int, b *[12]byte) (int, int) {
	n := 0
	for ; i < len(t); i++ {
		c := t[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		} else if c < 'a' || c > 'z' {
			break
		}
		if n < len(b) {
			b[n] = c
		}
		n++
	}
	if n > len(b) {
		return 0, i
	}
	return n, i
}

// led is c asked only where lead is true (resultCue.lead).
func led(c resultCue, lead func(string) bool) resultCue {
	c.lead = lead
	return c
}

// firstWord returns the lead of a cue anchored at the start of the
// sentence whose match begins with non-word characters (at most max of
// them, counted as characters; max < 0: any number) and then one of the words of group (each a
// prefix of the run of letters there): the sentence's first word
// character is where one of them begins.
func firstWord(max int, group string) func(string) bool {
	words := slices.Sorted(maps.Keys(alternatives(group))) // a slice: ranging over a map costs more than the words' test
	return func(t string) bool {
		i, n := 0, 0 // n: the characters before i
		for ; i < len(t) && !wordByte(t[i]); i++ {
			if !utf8.RuneStart(t[i]) {
				continue
			}
			n++
		}
		if max >= 0 && n > max {
			return false
		}
		for _, w := range words {
			if len(t)-i >= len(w) && strings.EqualFold(t[i:i+len(w)], w) {
				return true
			}
		}
		return false
	}
}
