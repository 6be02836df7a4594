package selection

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// maxTokenLen drops longer pieces: hashes, base64 and other junk that can
// only ever match themselves.
const maxTokenLen = 48

// analyzer turns text into index terms. An index and its queries share one.
type analyzer struct {
	stem      bool // English words become their Snowball (Porter2) stems
	bigrams   bool // CJK runs become character bigrams, else one term each
	catenate  bool // a word split at case changes is also emitted whole
	stop      map[string]bool
	memoTerms map[string]string // piece as written → its term, or "" if dropped
	memo      bool              // add to memoTerms: only while building, never during Select
}

// terms calls emit with each term of s, in order. joined is true for the
// whole form of a word that was also emitted in pieces (leetcode after leet
// and code): it shares their position, so it starts no bigram.
//
// Text splits at every rune that is not a letter or digit (so snake_case,
// kebab-case and dotted.names split), then inside words at case changes
// (camelCase, HTTPServer) and at letter–digit boundaries (utf8, mp3). Pieces
// are lower-cased; stop words and one-letter pieces are dropped; English
// words are stemmed. A run of Han, Hiragana, Katakana or Hangul becomes
// overlapping character bigrams (a lone character stays itself), the usual
// way to index CJK text without a dictionary.
func (a *analyzer) terms(s string, emit func(term string, joined bool)) {
	start := -1 // start of the current word run, or -1
	cjk := -1   // start of the current CJK run, or -1
	for i, r := range s {
		switch {
		case r < utf8.RuneSelf: // ASCII, most text: no table lookups
			if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
				if start < 0 {
					if cjk >= 0 {
						a.cjkRun(s[cjk:i], emit)
						cjk = -1
					}
					start = i
				}
			} else {
				if start >= 0 {
					a.word(s[start:i], emit)
					start = -1
				}
				if cjk >= 0 {
					a.cjkRun(s[cjk:i], emit)
					cjk = -1
				}
			}
		case isCJK(r):
			if start >= 0 {
				a.word(s[start:i], emit)
				start = -1
			}
			if cjk < 0 {
				cjk = i
			}
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			if cjk >= 0 {
				a.cjkRun(s[cjk:i], emit)
				cjk = -1
			}
			if start < 0 {
				start = i
			}
		default:
			if start >= 0 {
				a.word(s[start:i], emit)
				start = -1
			}
			if cjk >= 0 {
				a.cjkRun(s[cjk:i], emit)
				cjk = -1
			}
		}
	}
	if start >= 0 {
		a.word(s[start:], emit)
	}
	if cjk >= 0 {
		a.cjkRun(s[cjk:], emit)
	}
}

// word splits one run of letters and digits at case and digit boundaries.
func (a *analyzer) word(w string, emit func(string, bool)) {
	from := 0
	var prev rune
	for i, r := range w {
		if i > from && boundary(prev, r, w[i+utf8.RuneLen(r):]) {
			a.piece(w[from:i], false, emit)
			from = i
		}
		prev = r
	}
	a.piece(w[from:], false, emit)
	if from > 0 && a.catenate && isLetters(w) {
		a.piece(w, true, emit) // LeetCode also as leetcode, GitHub as github
	}
}

// boundary reports whether a word splits between prev and r; rest is what
// follows r.
func boundary(prev, r rune, rest string) bool {
	switch {
	case unicode.IsDigit(prev) != unicode.IsDigit(r):
		return true // letter–digit: utf8, mp3
	case unicode.IsLower(prev) && unicode.IsUpper(r):
		return true // camelCase
	case unicode.IsUpper(prev) && unicode.IsUpper(r):
		// HTTPServer splits before the S, the last capital before lower case,
		// but a plural stays whole: IDs, URLs.
		next, size := utf8.DecodeRuneInString(rest)
		if !unicode.IsLower(next) {
			return false
		}
		if next == 's' {
			after, _ := utf8.DecodeRuneInString(rest[size:])
			return unicode.IsLower(after)
		}
		return true
	}
	return false
}

// piece lower-cases, filters and stems one piece of a word.
func (a *analyzer) piece(p string, joined bool, emit func(string, bool)) {
	if len(p) > maxTokenLen {
		return
	}
	if utf8.RuneCountInString(p) < 2 && !(len(p) == 1 && p[0] >= '0' && p[0] <= '9') {
		return // single letters carry no meaning; single digits are kept
	}
	t, ok := a.memoTerms[p]
	if !ok {
		t = a.norm(strings.ToLower(p))
		if a.memo {
			// Clones: p, and t if it is p, may be slices of a whole description.
			a.memoTerms[strings.Clone(p)] = strings.Clone(t)
		}
	}
	if t != "" {
		emit(t, joined)
	}
}

// norm returns the term of the lower-case piece p: "" for a stop word, else
// p's English stem if stemming is on and p is an ASCII word, else p.
func (a *analyzer) norm(p string) string {
	switch {
	case a.stop[p]:
		return ""
	case a.stem && isASCIILetters(p):
		return english.Stem(p, true)
	}
	return p
}

// cjkRun emits the character bigrams of a run of CJK characters.
func (a *analyzer) cjkRun(run string, emit func(string, bool)) {
	if !a.bigrams {
		emit(run, false)
		return
	}
	prev := -1 // byte offset of the previous rune
	for i := range run {
		if prev >= 0 {
			_, size := utf8.DecodeRuneInString(run[i:])
			emit(run[prev:i+size], false)
		}
		prev = i
	}
	if prev == 0 {
		emit(run, false) // a lone character
	}
}

// isCJK reports whether r is Han, Hiragana, Katakana or Hangul, or the
// long-vowel mark ー, which is of no single script.
func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r) || r == 'ー'
}

func isLetters(w string) bool {
	for _, r := range w {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}

func isASCIILetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}
