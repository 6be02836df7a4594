package trust

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// foldedMain is folded as it was before it read sixteen bytes a turn (main
// 6a81632): eight at a time (unfolded), then one.
func foldedMain(s string) bool {
	var bad, space uint64
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if bad, space = unfolded(word(s[i:i+8]), space); bad != 0 {
			return false
		}
	}
	for after := space != 0; i < len(s); i++ {
		if !foldedByte(s[i], after) {
			return false
		}
		after = s[i] == ' '
	}
	return true
}

// checkFolded fails t where folded and foldedMain differ on s or on any
// of its suffixes from its first 17 bytes (every place of the sixteen and
// eight byte turns) and prefixes of its last 17.
func checkFolded(t *testing.T, s string) {
	t.Helper()
	for cut := range min(17, len(s)+1) {
		for _, x := range []string{s[cut:], s[:len(s)-cut]} {
			if got, want := folded(x), foldedMain(x); got != want {
				t.Fatalf("folded(%q) = %v, main's %v", x, got, want)
			}
		}
	}
}

// TestFoldedMain: folded, sixteen bytes a turn, agrees with main's eight
// on random bytes, all-ASCII text (mostly folded: the loop runs to the
// end), text with one bad byte at every place, non-ASCII text, the
// injection corpus, the docs and the repository's files.
func TestFoldedMain(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 2))
	// Every byte value, and a byte that changes the answer, at every place
	// of a folded text of every length up to 80, after a space or not.
	for n := range 81 {
		base := []byte(strings.Repeat("ab c\nd ", 12)[:n])
		checkFolded(t, string(base))
		for i := range n {
			for c := range 256 {
				b := []byte(string(base))
				b[i] = byte(c)
				checkFolded(t, string(b))
				if i > 0 {
					b[i-1] = ' '
					checkFolded(t, string(b))
				}
			}
		}
	}
	alphabets := []string{
		"ab ",                    // spaces, doubled often
		"abcdefgh \n.,",          // folded prose
		"a \n\t\v\f\r\x00\x1f",   // blanks and controls
		"a \x7f\x80\xc3\xa9\xff", // bytes above ASCII
	}
	for range 20000 {
		n := rng.IntN(300)
		b := make([]byte, n)
		switch k := rng.IntN(len(alphabets) + 1); k {
		case len(alphabets):
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
		default:
			a := alphabets[k]
			for i := range b {
				b[i] = a[rng.IntN(len(a))]
			}
		}
		checkFolded(t, string(b))
	}
	texts := []string{strings.Repeat("line of a file\n", 200), strings.Repeat("é", 100), "naïve text, mostly ASCII " + strings.Repeat("x", 40)}
	for _, c := range responseInjections(t) {
		texts = append(texts, c.Text)
	}
	texts = append(texts, docTexts(t)...)
	for _, f := range benignFiles(t) {
		texts = append(texts, f)
	}
	folds := 0
	for _, s := range texts {
		checkFolded(t, s)
		if folded(s) {
			folds++
		}
	}
	t.Logf("%d corpus texts, %d folded", len(texts), folds)
}

// FuzzFolded: folded agrees with main's on any bytes.
func FuzzFolded(f *testing.F) {
	for _, s := range []string{"", "a  b", strings.Repeat("line of a file\n", 3), "\t", "é", strings.Repeat("x", 15) + "  "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkFolded(t, s)
	})
}
