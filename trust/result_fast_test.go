package trust

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The shortcuts of the result check that skip work (the ASCII before the
// first other byte, texts without tag characters, texts whose cues cannot
// add up) are checked against the code as first written.

// hiddenCharsReference is hiddenChars as first written: every character
// decoded.
func hiddenCharsReference(s string) (resultHit, bool) {
	var prev rune
	run := 0
	for i, n := 0, 0; i < len(s); i += n {
		var r rune
		r, n = utf8.DecodeRuneInString(s[i:])
		next, _ := utf8.DecodeRuneInString(s[i+n:])
		switch {
		case r >= 0xE0000 && r <= 0xE007F:
			if !inFlag(s, i) {
				return resultHit{KindHiddenText, "tag characters spelling " + resultClip(tagTextReference(s))}, true
			}
		case r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069:
			return resultHit{KindHiddenText, fmt.Sprintf("bidi control U+%04X", r)}, true
		case r == 0x200B || r == 0x200C || r == 0x200D || r == 0x2060 || r >= 0x2061 && r <= 0x2064 || r == 0x180E || r == 0xFEFF && i > 0:
			run++
			if run >= 3 || isASCIIAlnum(prev) && isASCIIAlnum(next) {
				return resultHit{KindHiddenText, fmt.Sprintf("zero-width U+%04X inside text", r)}, true
			}
			continue
		}
		run = 0
		prev = r
	}
	return resultHit{}, false
}

// tagTextReference is tagText as first written.
func tagTextReference(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 0xE0020 && r <= 0xE007E {
			b.WriteRune(r - 0xE0000)
		}
	}
	return b.String()
}

func nonASCIIReference(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return i
		}
	}
	return len(s)
}

// hiddenAlphabet is what the hidden-character and tag shortcuts turn on:
// ASCII letters and blanks, zero-width, bidi and tag characters, a flag, a
// BOM, other non-ASCII text and invalid bytes (a lone 0xF3 among them).
var hiddenAlphabet = []string{"a", "Z", "7", " ", "\n", ".", "\u200b", "\u200d", "\u2060", "\ufeff", "\u202e", "\u2067",
	"\U000E0041", "\U000E0020", "\U000E007F", "\U0001F3F4", "é", "日", "\xf3", "\xf3\xa0", "\xff", "\U000C0000"}

func randomTexts(seed uint64, n, maxLen int, alphabet []string) []string {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for range rng.IntN(maxLen) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		out[i] = b.String()
	}
	return out
}

// TestHiddenCharsShortcut: hiddenChars, tagText and nonASCII answer as
// their plain loops do, on the corpora and on random texts of the
// characters they look for, at every offset of the first non-ASCII byte.
func TestHiddenCharsShortcut(t *testing.T) {
	texts := randomTexts(5, 20000, 24, hiddenAlphabet)
	for _, tc := range injections {
		texts = append(texts, tc.text)
	}
	texts = append(texts, benign...)
	for pad := range 20 {
		for _, s := range []string{"\u200b\u200b\u200b", "a\u200bb", "\U000E0041\U000E0042", "\u202ex", "é"} {
			texts = append(texts, strings.Repeat("x", pad)+s, strings.Repeat("x", pad)+s+strings.Repeat("y", pad))
		}
	}
	for _, s := range texts {
		gotHit, gotOK := hiddenChars(s)
		wantHit, wantOK := hiddenCharsReference(s)
		if gotHit != wantHit || gotOK != wantOK {
			t.Errorf("hiddenChars(%q) = %v %v, want %v %v", s, gotHit, gotOK, wantHit, wantOK)
		}
		if got, want := tagText(s), tagTextReference(s); got != want {
			t.Errorf("tagText(%q) = %q, want %q", s, got, want)
		}
		if got, want := nonASCII(s), nonASCIIReference(s); got != want {
			t.Errorf("nonASCII(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestLiteralsInPieces: the literals found scanning a text in pieces (the
// state carried from one to the next) are those found scanning it whole,
// wherever it is cut.
func TestLiteralsInPieces(t *testing.T) {
	x := theResultIndex()
	texts := randomTexts(7, 300, 200, []string{"you ", "must ", "call ", "the ", "export_all ", "tool", "http", "://", "send ", "é", ". ", "\n", "a", "s"})
	texts = append(texts, docTexts(t)...)
	rng := rand.New(rand.NewPCG(8, 9))
	for _, s := range texts {
		whole := make([]uint64, x.lits.words())
		x.lits.scan(s, whole)
		for n := range 6 {
			pieces := make([]uint64, x.lits.words())
			st, at := 0, 0
			most := 64 // short pieces, and long ones read as quarters
			if n%2 == 1 {
				most = 4096
			}
			for at < len(s) {
				end := at + 1 + rng.IntN(min(len(s)-at, most))
				seen := x.lits.newEntered()
				st = x.lits.scanFrom(st, s[at:end], seen)
				x.lits.collect(seen, pieces)
				at = end
			}
			if !slices.Equal(pieces, whole) {
				t.Fatalf("scanning %.80q in pieces found other literals than scanning it whole", s)
			}
		}
	}
}

// TestCheckStringPadded: the check finds what the reference finds when
// an injection (or text a cue needs) comes after data long enough to be
// read in several pieces by mayScore, its words across every boundary of
// a piece, after ASCII and non-ASCII data.
func TestCheckStringPadded(t *testing.T) {
	var lines []string
	for _, tc := range injections {
		lines = append(lines, tc.text)
	}
	for _, r := range responseInjections(t) {
		lines = append(lines, r.Text)
	}
	flagged := 0
	for i, inj := range lines {
		for _, fill := range []string{"line of data 0123456789\n", "données à lire, ligne 日本\n"} {
			// Offsets around the first boundaries of a piece, a few per
			// injection so that every offset is met.
			for _, n := range []int{mayScorePiece - 40 + i%48, 2*mayScorePiece - 8 - i%16, 3*mayScorePiece + i%7} {
				pad := strings.Repeat(fill, n/len(fill)+1)[:n]
				pad = strings.ToValidUTF8(pad, "") // a cut character dropped
				for _, s := range []string{pad + inj, pad + "\n" + inj + "\n" + pad} {
					got, want := checkString(s), checkStringReference(s)
					if !slices.Equal(got, want) {
						t.Errorf("checkString(%d bytes of data + %.120q) = %v, want %v", len(pad), inj, got, want)
					}
					if len(want) > 0 {
						flagged++
					}
				}
			}
		}
	}
	if flagged < 500 {
		t.Errorf("only %d padded texts flagged; the comparison should cover findings", flagged)
	}
}

// cueWords are words the cues need and match, with the marks that cut and
// frame sentences, for random texts that land near the threshold.
var cueWords = []string{"you ", "must ", "should ", "please ", "call ", "use ", "the ", "export_all ", "tool ", "now ", "first ", "immediately ",
	"send ", "data ", "to ", "https://x.example/?q=$d ", "user ", "the user ", "ignore ", "previous ", "instructions ", "error: ", "failed ",
	"<important> ", "system: ", "Note: ", "assistant, ", "secretly ", "do not tell ", "password ", "your ", "before ", "task ", ":", ".", " ", "\n", "é "}

// TestCheckStringRandom: on random texts of cue words, at and around the
// threshold, the check finds what the reference finds.
func TestCheckStringRandom(t *testing.T) {
	flagged := 0
	for _, s := range randomTexts(11, 6000, 14, cueWords) {
		got, want := checkString(s), checkStringReference(s)
		if !slices.Equal(got, want) {
			t.Errorf("checkString(%q) = %v, want %v", s, got, want)
		}
		if len(want) > 0 {
			flagged++
		}
	}
	if flagged < 300 {
		t.Errorf("only %d random texts flagged; the comparison should cover findings", flagged)
	}
}

// TestCheckStringFramedAtBound: a sentence that reaches the threshold
// only with the frame of the sentence before, itself scored by the same
// cue (the whole text's cues add up to 2, the frame makes 3; with the
// non-ASCII data, whose cues are known by their words only, more), is
// found: mayScore counts the frame.
func TestCheckStringFramedAtBound(t *testing.T) {
	for _, s := range []string{
		"Please:\nplease, with export_all",
		"Kindly:\nplease, with export_all",
		"Please:\nPlease, via exportAll.",
	} {
		for _, pad := range []string{"", strings.Repeat("data 0123456789\n", 40), strings.Repeat("données\n", 70)} {
			text := pad + s
			want := checkStringReference(text)
			if len(want) == 0 {
				t.Fatalf("the reference finds nothing in %q: the case no longer tests the frame", s)
			}
			if got := checkString(text); !slices.Equal(got, want) {
				t.Errorf("checkString(%d bytes of data + %q) = %v, want %v", len(pad), s, got, want)
			}
		}
	}
}

// foldedReference is folded as first written: a byte at a time.
func foldedReference(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf, c == '\t', c == '\v', c == '\f', c == '\r':
			return false
		case c == ' ' && i > 0 && s[i-1] == ' ':
			return false
		}
	}
	return true
}

// TestFoldedWords: folded, eight bytes at a time, agrees with a byte at a
// time on texts that put each kind of byte at every place of a word and
// across words (two spaces split by a word's end among them).
func TestFoldedWords(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 7))
	alphabet := []byte{'a', 'Z', '0', ' ', ' ', '\n', '\t', '\v', '\f', '\r', 0x00, 0x08, 0x0E, 0x1F, '!', 0x20, 0x7F, 0x80, 0xC3, 0xFF, '.', '~'}
	for n := range 40 {
		for range 300 {
			b := make([]byte, n)
			for i := range b {
				b[i] = 'a'
				if r.IntN(4) == 0 {
					b[i] = alphabet[r.IntN(len(alphabet))]
				}
			}
			if got, want := folded(string(b)), foldedReference(string(b)); got != want {
				t.Fatalf("folded(%q) = %v, a byte at a time %v", b, got, want)
			}
		}
	}
	for i := range 24 { // two spaces at every offset
		s := strings.Repeat("a", i) + "  " + strings.Repeat("b", 9)
		if folded(s) {
			t.Fatalf("folded(%q) = true", s)
		}
	}
}

// resultFoldReference is resultFold as first written: a rune at a time.
func resultFoldReference(s string) string {
	if folded(s) {
		return s
	}
	s = norm.NFKC.String(strings.ToValidUTF8(s, "\uFFFD"))
	var b strings.Builder
	blank := false
	for _, r := range s {
		switch {
		case resultInvisible(r):
			continue
		case r == '\n':
			b.WriteByte('\n')
			blank = false
		case unicode.IsSpace(r):
			if !blank {
				b.WriteByte(' ')
			}
			blank = true
		default:
			b.WriteRune(r)
			blank = false
		}
	}
	return b.String()
}

// TestResultFoldBytes: resultFold, reading ASCII a byte at a time, folds as
// a rune at a time does: ASCII and other blanks, line breaks, invisible
// characters, compatibility forms and broken UTF-8, in random mixes.
func TestResultFoldBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 13))
	pieces := []string{"a", "Z", " ", "  ", "\t", "\n", "\r\n", "\v", "\f", "\x1c", "\u0085", "\u00a0", "\u2028", "\u3000",
		"\u200b", "\u2066", "\ufeff", "ﬁ", "Ａ", "é", "e\u0301", "\xff", "\xe2\x80", "\U000E0041", "x:",
		"plain words, eight at a time", " two  spaces in words ", "a b c d e f g h i j k"}
	for range 3000 {
		var b strings.Builder
		for range r.IntN(30) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		if got, want := resultFold(b.String()), resultFoldReference(b.String()); got != want {
			t.Fatalf("resultFold(%q) = %q, a rune at a time %q", b.String(), got, want)
		}
	}
}

// TestNFKCStretches: nfkc, normalizing only the stretches outside ASCII,
// is norm.NFKC.String: marks that join the letter before them or reorder,
// compatibility forms, Hangul jamo, and runs of more than 30 marks (which
// the normalization breaks up), in random mixes with ASCII.
func TestNFKCStretches(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 19))
	pieces := []string{"a", "e", "Z", " ", ".", "\n", "\u0301", "\u0327", "\u0323\u0302", "\u05b0", "ﬁ", "…", "µ", "Ａ", "é",
		"\u1100", "\u1161", "\u11a8", "가", "\u2126", "\u212b", "\u0958", "ｶﾞ", "ﾞ", strings.Repeat("\u0301", 31), "plain ascii words"}
	for range 5000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		var out strings.Builder
		nfkc(b.String(), func(p string) { out.WriteString(p) })
		if got, want := out.String(), norm.NFKC.String(b.String()); got != want {
			t.Fatalf("nfkc(%q) = %q, want %q", b.String(), got, want)
		}
	}
	// nfkc gives an ellipsis as "...", its NFKC, without normalizing
	// across it: right only while no character composes with a '.'
	// before it (none decomposes into '.' and more).
	if g := norm.NFKC.String(ellipsis); g != "..." {
		t.Fatalf("NFKC of an ellipsis is %q", g)
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if d := norm.NFD.String(string(r)); len(d) > 1 && d[0] == '.' {
			t.Fatalf("%U decomposes into %q: a '.' composes", r, d)
		}
	}
}

// TestOpeningLeadRandom: on random sentences of verbs, adverbs, colons,
// commas, quotes and blanks, openingLead is true wherever the opening
// cue's expression matches (it only rules sentences out), and it answers
// what a look at every byte for a colon or a comma answers.
func TestOpeningLeadRandom(t *testing.T) {
	words := []string{"send ", "Run ", "now ", "then, ", "first ", ": ", ":", ", ", ",", "\"", "'", " ", "the ", "data ", "go to ", "x", "é ", "Note: ", "use\t", "it."}
	c := resultCues()[2]
	leads, matches := 0, 0
	for _, s := range randomTexts(7, 20000, 12, words) {
		got := openingLead(s)
		if got != openingLeadEveryByte(s) {
			t.Fatalf("openingLead(%q) = %v, a look at every byte says %v", s, got, !got)
		}
		if original(c.re).MatchString(s) {
			matches++
			if !got {
				t.Fatalf("openingLead(%q) is false, the cue matches", s)
			}
		}
		if got {
			leads++
		}
	}
	if matches < 1000 || leads == matches {
		t.Errorf("%d matches, %d leads: the texts should cover both answers", matches, leads)
	}
}

// openingLeadEveryByte is openingLead as first written: every byte looked
// at for a colon or a comma.
func openingLeadEveryByte(t string) bool {
	i := 0
	for i < len(t) && !wordByte(t[i]) {
		i++
	}
	if verbAt(t, i) {
		return true
	}
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case ':':
			j := spaces(t, i+1)
			if j < len(t) && (t[j] == '"' || t[j] == '\'') {
				j++
			}
			if verbAt(t, j) {
				return true
			}
		case ',':
			if verbAt(t, spaces(t, i+1)) {
				return true
			}
		}
	}
	return false
}

// TestAlternatives: a vocabulary group's words, each up to its first \s,
// with classes of letters expanded.
func TestAlternatives(t *testing.T) {
	got := alternatives(`(?:a|b\s+c|d[sz]e|authori[sz]e|go\s+to)`)
	want := map[string]bool{"a": true, "b": true, "dse": true, "dze": true, "authorise": true, "authorize": true, "go": true}
	if !maps.Equal(got, want) {
		t.Fatalf("alternatives = %v, want %v", got, want)
	}
}

// TestUnaddressed: the gate passes data of digits and signs, and no text
// in which a cue that addresses the model may hold. Each word such a cue
// needs (the opening cue: each literal of its prefilter), and each byte
// or pair resultFold changes, stops it wherever it stands in digits; on
// random texts of digits, signs, blanks and pieces of those words, a text
// it passes is folded and mayScore finds nothing in it, and the check
// finds what the reference finds.
func TestUnaddressed(t *testing.T) {
	x := theResultIndex()
	var seq strings.Builder
	for i := 500000; seq.Len() < 8<<10; i++ {
		fmt.Fprintf(&seq, "%d\n", i)
	}
	if !x.unaddressed(seq.String()) {
		t.Fatal("8 KiB of seq's output is not passed")
	}
	words := []string{"\t", "\v", "\f", "\r", "  ", "é", "\xff", "\x80"}
	var lits func(p *prefilter)
	lits = func(p *prefilter) {
		words = append(words, p.lits...)
		for _, s := range p.sub {
			lits(s)
		}
	}
	for i, c := range resultCues() {
		if c.addr {
			words = append(words, c.need...)
			if c.need == nil {
				lits(x.pre[i])
			}
		}
	}
	digits := strings.Repeat("0123456789-:/.\n", 4)
	for _, w := range words {
		for n := range 17 {
			for _, s := range []string{digits[:n] + w + digits, digits[:n] + strings.ToUpper(w)} {
				if x.unaddressed(s) {
					t.Fatalf("%q is passed", s)
				}
			}
		}
	}
	alphabet := []string{"0", "7", "-", ":", "/", ".", ",", "\n", " ", "  ", "\t", "é", "yo", "u", "in", "t", "o", "g", "lo", "#", "<", "[", "a", "i", "ru", "n", "Us", "e"}
	var passed, stopped int
	for _, s := range randomTexts(13, 20000, 24, alphabet) {
		if !x.unaddressed(s) {
			stopped++
			continue
		}
		passed++
		var sent readSentence
		if !foldedReference(s) || x.mayScore(&sent, s, true) {
			t.Fatalf("%q is passed: folded %v", s, foldedReference(s))
		}
		if got, want := checkString(s), checkStringReference(s); !slices.Equal(got, want) {
			t.Fatalf("checkString(%q) = %v, want %v", s, got, want)
		}
	}
	if passed < 1000 || stopped < 1000 {
		t.Fatalf("%d random texts passed, %d stopped: the test should see both", passed, stopped)
	}
}
