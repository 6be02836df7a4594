package trust

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// maxScanBytes bounds the text looked at in one string: a longer string is
// itself a finding (see hiddenText) and only its head is read by the rules.
const maxScanBytes = 64 << 10

// maxEvidence bounds a finding's evidence, in runes.
const maxEvidence = 80

// confusables maps letters of other scripts that look like Latin letters to
// those letters: a hand-made subset of Unicode's confusables.txt covering
// Cyrillic, Greek and Armenian look-alikes (NFKC already folds fullwidth and
// mathematical letters).
var confusables = map[rune]rune{
	// Cyrillic
	'а': 'a', 'в': 'b', 'с': 'c', 'е': 'e', 'һ': 'h', 'і': 'i', 'ј': 'j', 'к': 'k', 'м': 'm', 'н': 'h',
	'о': 'o', 'р': 'p', 'ԛ': 'q', 'ѕ': 's', 'т': 't', 'у': 'y', 'х': 'x', 'ԁ': 'd', 'ԝ': 'w', 'ɡ': 'g',
	'ӏ': 'l', 'ү': 'y', 'ѵ': 'v', 'ь': 'b',
	'А': 'A', 'В': 'B', 'С': 'C', 'Е': 'E', 'Н': 'H', 'І': 'I', 'Ј': 'J', 'К': 'K', 'М': 'M', 'О': 'O',
	'Р': 'P', 'Ѕ': 'S', 'Т': 'T', 'Х': 'X', 'У': 'Y', 'Ԁ': 'D', 'Ԛ': 'Q', 'Ԝ': 'W', 'Ӏ': 'I',
	// Greek
	'α': 'a', 'ο': 'o', 'ρ': 'p', 'ν': 'v', 'ι': 'i', 'κ': 'k', 'τ': 't', 'υ': 'u', 'χ': 'x', 'ϲ': 'c',
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O',
	'Ρ': 'P', 'Τ': 'T', 'Υ': 'Y', 'Χ': 'X',
	// Armenian and Latin extensions
	'օ': 'o', 'ս': 'u', 'ց': 'g', 'հ': 'h', 'ո': 'n', 'ı': 'i', 'ȷ': 'j', 'ℓ': 'l',
}

// fold is what the rules read: NFKC, invisible characters removed, look-alike
// letters folded to Latin inside words that also hold Latin letters (or
// consist only of look-alikes), lower case, white space collapsed.
type fold struct {
	text  string   // folded, lower case, one space between words
	mixed []string // words whose letters mix Latin with look-alikes (original spelling)
}

func foldText(s string) fold {
	if len(s) > maxScanBytes {
		s = s[:maxScanBytes]
	}
	s = norm.NFKC.String(strings.ToValidUTF8(s, "\uFFFD"))
	var f fold
	var b strings.Builder
	b.Grow(len(s))
	space := true
	for _, w := range splitWords(s) {
		if w.space {
			if !space {
				b.WriteByte(' ')
				space = true
			}
			continue
		}
		word := w.text
		latin, look, other := 0, 0, 0
		for _, r := range word {
			switch {
			case r < utf8.RuneSelf && unicode.IsLetter(r):
				latin++
			case confusables[r] != 0:
				look++
			case unicode.IsLetter(r):
				other++
			}
		}
		if look > 0 && other == 0 && (latin > 0 || look >= 3) {
			if latin > 0 {
				f.mixed = append(f.mixed, word)
			}
			word = strings.Map(func(r rune) rune {
				if c := confusables[r]; c != 0 {
					return c
				}
				return r
			}, word)
		}
		b.WriteString(strings.ToLower(word))
		space = false
	}
	f.text = strings.TrimSpace(b.String())
	return f
}

type span struct {
	text  string
	space bool
}

// splitWords cuts s into runs of white space and runs of anything else,
// dropping invisible format characters (zero-width, tags, bidi controls) so
// that "ig\u200bnore" reads as "ignore".
func splitWords(s string) []span {
	var out []span
	var cur strings.Builder
	curSpace := false
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, span{cur.String(), curSpace})
			cur.Reset()
		}
	}
	for _, r := range s {
		if invisible(r) {
			continue
		}
		sp := unicode.IsSpace(r)
		if sp != curSpace {
			flush()
			curSpace = sp
		}
		cur.WriteRune(r)
	}
	flush()
	return out
}

// invisible reports a character that prints nothing: format characters
// (zero-width, bidi controls, tags) and variation selectors.
func invisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || (r >= 0xFE00 && r <= 0xFE0F) || (r >= 0xE0100 && r <= 0xE01EF)
}

var (
	reBase64    = compile(`[A-Za-z0-9+/_-]{80,}={0,2}`)
	reHex       = compile(`(?i)\b(?:0x)?[0-9a-f]{96,}\b`)
	reLongSpace = compile(`[ \t\x{00A0}\x{3000}]{40,}|(?:[ \t]*\r?\n){8,}`)
)

// hiddenText finds text a person reading the definition would not see but a
// model would read.
func hiddenText(s string, name bool) []hit {
	var hits []hit
	add := func(w int, ev, why string) {
		hits = append(hits, hit{kind: KindHiddenText, weight: w, evidence: ev, why: why})
	}
	if len(s) > maxScanBytes {
		add(2, fmt.Sprintf("%d bytes", len(s)), "a very long string: only its first 64 KiB were scanned; a description this long hides text from a person reading it")
		s = s[:maxScanBytes]
	}
	var tags, zw, bidi, ctrl, vs int
	var tagText strings.Builder
	prev := rune(0)
	for _, r := range s {
		switch {
		case r >= 0xE0000 && r <= 0xE007F:
			if prev == 0x1F3F4 || (prev >= 0xE0000 && prev <= 0xE007F && tags == 0) {
				break // a subdivision flag (black flag + tag letters)
			}
			tags++
			if r >= 0xE0020 && r <= 0xE007E && tagText.Len() < maxEvidence {
				tagText.WriteRune(r - 0xE0000)
			}
		case r == 0x200B || r == 0x2060 || r == 0x180E || r == 0x2062 || r == 0x2063 || r == 0x2064 || r == 0xFEFF && prev != 0:
			zw++
		case r == 0x200C || r == 0x200D:
			// joiners are part of emoji sequences and of Arabic, Persian and
			// Indic writing; only a joiner between two Latin letters hides text
			if prev < utf8.RuneSelf && unicode.IsLetter(prev) {
				zw++
			}
		case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
			bidi++
		case r < 0x20 && r != '\n' && r != '\r' && r != '\t', r >= 0x7F && r <= 0x9F:
			ctrl++
		case r >= 0xE0100 && r <= 0xE01EF:
			vs++
		}
		prev = r
	}
	if tags > 0 {
		add(4, "tag characters: "+clip(tagText.String()), fmt.Sprintf("%d Unicode tag characters (U+E0000 block): invisible to a person, read by a model as text", tags))
	}
	if zw > 0 {
		add(3, fmt.Sprintf("%d zero-width characters", zw), "zero-width characters split words so a filter or a reader misses them, or carry hidden text")
	}
	if bidi > 0 {
		add(3, fmt.Sprintf("%d bidi controls", bidi), "bidirectional override characters make the text display in another order than a model reads it")
	}
	if ctrl > 0 {
		add(2, fmt.Sprintf("%d control characters", ctrl), "control characters have no place in a description and can hide or reorder text in a terminal")
	}
	if vs > 1 {
		add(3, fmt.Sprintf("%d variation selectors", vs), "a run of invisible variation selectors can encode hidden data")
	}
	if strings.Contains(s, "<!--") || strings.Contains(s, "-->") {
		add(3, "<!--", "an HTML/XML comment: hidden when rendered, read by the model")
	}
	if !name {
		if strings.Count(s, "\n") >= 8 || strings.Contains(s, "          ") || strings.Contains(s, "\u3000") || strings.Contains(s, "\u00a0") {
			if m := reLongSpace.FindString(s); m != "" {
				add(2, fmt.Sprintf("%d white-space characters in a row", utf8.RuneCountInString(m)), "a long run of white space pushes the rest of the text out of a person's view")
			}
		}
		if longRun(s, 80) {
			if m := reBase64.FindString(s); m != "" && mixedClasses(m) {
				add(2, clip(m), "a long base64-like blob: encoded content a person cannot read")
			} else if m := reHex.FindString(s); m != "" {
				add(2, clip(m), "a long hex blob: encoded content a person cannot read")
			}
		}
	}
	return hits
}

// longRun reports whether s has n or more characters in a row that could
// belong to an encoded blob (base64 or hex).
func longRun(s string, n int) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '_' || c == '-' || c == '=' {
			if run++; run >= n {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// mixedClasses tells an encoded blob (upper, lower and digits mixed) from a
// long identifier or a word.
func mixedClasses(s string) bool {
	var up, lo, dig bool
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			up = true
		case r >= 'a' && r <= 'z':
			lo = true
		case r >= '0' && r <= '9':
			dig = true
		}
	}
	return up && lo && dig
}

// clip bounds evidence to maxEvidence runes and makes it printable.
func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) || r == ' ' {
			return r
		}
		return -1
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= maxEvidence {
		return s
	}
	r := []rune(s)
	return string(r[:maxEvidence-1]) + "…"
}
