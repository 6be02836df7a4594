package trust

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// sentenceEnd is the expression splitSentences cuts where.
var sentenceEnd = regexp.MustCompile(`[.!?]+["'”’)\]]?\s+|\n+|["']\s*[,}\]]\s*["{\[]?`)

// splitByExpression is splitSentences as the expression cuts.
func splitByExpression(text string) []string {
	var out []string
	last := 0
	for _, m := range sentenceEnd.FindAllStringIndex(text, -1) {
		out = append(out, text[last:m[1]])
		last = m[1]
	}
	out = append(out, text[last:])
	for i, s := range out {
		out[i] = strings.TrimLeft(s, " ")
	}
	return out
}

// TestSplitSentences: the cut by hand is the expression's, on the corpora,
// on tricky texts and on random texts over the characters that matter.
func TestSplitSentences(t *testing.T) {
	texts := []string{
		"", "One. Two! Three? Four", "Wait...  what?!\n\n\nNext", `He said "stop." Then left.`, "Done.) Next", "Done.] x", "Done.”  x", "Done.’\tx",
		"a.b.c", "end.", "end. ", "..x", "?\"x", `{"a": "b", "c": ["d", "e"]}`, `"x" , "y"`, `'a'}{`, `"a"  ]  [`, `"a",`, "\"\n,\n{", "x\r\n\r\ny", ".\f\v",
		"é. ü! 日本。 ok", "\"”’", ".”", ".’x", "!\u00a0x",
	}
	for _, s := range sentences(t) {
		texts = append(texts, s)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{".", "!", "?", "\"", "'", "”", "’", ")", "]", "}", ",", "{", "[", " ", "\t", "\n", "\r", "\f", "\v", "a", "é"}
	for n := range 10000 {
		var b strings.Builder
		for range rng.IntN(16 + n%3*16) { // longer texts cross words of eight bytes
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	for _, s := range texts {
		if got, want := splitSentences(s), splitByExpression(s); !slices.Equal(got, want) {
			t.Errorf("splitSentences(%q) = %q, want %q", s, got, want)
		}
	}
}

// FuzzSplitSentences: the cut by hand is the expression's on any text.
func FuzzSplitSentences(f *testing.F) {
	f.Add("One. Two! Three? Four")
	f.Add(`{"a": "b", "c": ["d", "e"]}`)
	f.Add("Done.”  x\n\n'a'}{")
	f.Fuzz(func(t *testing.T, s string) {
		s = strings.ToValidUTF8(s, "\uFFFD") // as resultFold leaves it
		if got, want := splitSentences(s), splitByExpression(s); !slices.Equal(got, want) {
			t.Fatalf("splitSentences(%q) = %q, want %q", s, got, want)
		}
	})
}
