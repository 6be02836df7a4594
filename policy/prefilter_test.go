package policy

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mayOccur is the prefilter's definition, as it was computed before the
// one-pass scan: a strings.Contains per literal, over the text's ASCII
// lower case for the literals that ignore case, which only an ASCII text
// can fail.
func mayOccur(a anchors, s string) bool {
	if len(a.lits) == 0 {
		return true
	}
	if a.fold {
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 {
				return true
			}
		}
		s = asciiLower(s)
	}
	for _, l := range a.lits {
		if a.fold {
			l = asciiLower(l)
		}
		if strings.Contains(s, l) {
			return true
		}
	}
	return false
}

// sameScan fails unless the one-pass scan of s finds, for every pattern
// of r, what mayOccur finds.
func sameScan(t testing.TB, r *Redactor, s string) {
	t.Helper()
	may := make([]bool, len(r.patterns))
	r.filter.scan(s, may)
	for i, p := range r.patterns {
		if want := mayOccur(p.need, s); len(p.need.lits) > 0 && may[i] != want {
			t.Fatalf("scan(%.200q): pattern %s (anchors %q, fold %v) = %v, the definition says %v", s, p.name, p.need.lits, p.need.fold, may[i], want)
		}
	}
}

// corpus is every file of the repository's testdata folder (real tool
// definitions, tasks, attack calls and injected texts), in pieces of a few
// KiB as a tool result would be.
func corpus(t testing.TB) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join("..", "testdata"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for len(b) > 0 {
			n := min(len(b), 4096)
			out = append(out, string(b[:n]))
			b = b[n:]
		}
		return nil
	})
	if err != nil || len(out) < 1000 {
		t.Fatalf("the corpus in ../testdata: %d pieces, %v", len(out), err)
	}
	return out
}

// The one-pass scan finds exactly the patterns the per-literal search
// finds, and redaction with it is redaction with every expression run, on
// the testdata corpora with secrets planted in them, for the default
// patterns and for others with folded, mixed and one-byte literals.
func TestScanMatchesDefinitionOnCorpora(t *testing.T) {
	pieces := corpus(t)
	secrets := []string{"AKIAIOSFODNN7EXAMPLE", "ghp_" + strings.Repeat("a1B2", 9), "sk-ant-api03-abcdefghijklmnopqrstuvwx",
		"PassWord=hunter2hunter2", "https://u:pw123@host", "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4",
		"-----BEGIN EC PRIVATE KEY-----\nabc\n-----END EC PRIVATE KEY-----", "xoxp-1234567890-abc", "pa\u017F\u017Fword=0123456789abc"}
	sets := [][]SecretPattern{DefaultSecrets(), {
		{"mixed", `(?i:ab)X\d`}, {"one", `[#%]\d{3}`}, {"fold-class", `(?i)[k-m]ode=\d`}, {"utf8", `é+tag`},
		{"none", `\w{40,}`}, {"alt", `(?:foo|BAR|(?i)baz)_\d+`},
	}}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, set := range sets {
		filtered, ref := reference(t, set)
		for i, p := range pieces {
			if i%3 == 1 {
				at := rng.IntN(len(p) + 1)
				p = p[:at] + secrets[rng.IntN(len(secrets))] + p[at:]
			}
			sameScan(t, filtered, p)
			sameRedaction(t, filtered, ref, p)
		}
	}
}

// The scan on the edges: literals at the very start and end of a text, cut
// by its end, one-byte texts, cases and non-ASCII bytes.
func TestScanEdges(t *testing.T) {
	filtered, ref := reference(t, []SecretPattern{
		{"a", `(?i:ab)X\d`}, {"b", `[#%]\d{3}`}, {"c", `(?i)secret=\S+`}, {"d", `AKIA[A-Z]{4}`}, {"e", `é+tag`}, {"f", `://x`},
	})
	texts := []string{"", "a", "#", "%", "A", "ab", "aBx", "ABX1", "abX1", "#123", "x#1", "SECRET=1", "SeCrEt", "secre", "\u212A",
		"AKIA", "AKIAABCD", "akiaABCD", "é", "éétag", "ÉTAG", ":/", "://", "://x", "\xff", "\xc3", "ab\xff"}
	for _, a := range texts {
		for _, b := range texts {
			sameScan(t, filtered, a+b)
			sameRedaction(t, filtered, ref, a+b)
		}
	}
	// Literals of three bytes or more: triples, every other byte; the
	// texts of every length around them, so each literal starts at an
	// odd and an even byte and ends at the text's end or before it.
	triples, ref3 := reference(t, []SecretPattern{
		{"a", `(?i:abX)\d`}, {"d", `AKIA[A-Z]{4}`}, {"f", `://x`}, {"e", `éé+tag`}, {"g", `ho_\w`}, {"h", `(?i)secret=\S+`},
	})
	if !triples.filter.triples || filtered.filter.triples {
		t.Fatal("the triples are taken when every literal has three bytes or more, and only then")
	}
	if r, _ := NewRedactor(DefaultSecrets()); !r.filter.triples {
		t.Fatal("the default patterns' literals are looked for by triples")
	}
	texts = append(texts, "abx1", "ABX", "ho_", "ho_1", "SECRET=", "xho_z", "é", "aKIAABCD")
	for _, a := range texts {
		for _, b := range texts {
			for _, pad := range []string{"", "-", "--", "---"} {
				sameScan(t, triples, pad+a+b)
				sameScan(t, triples, a+pad+b)
				sameRedaction(t, triples, ref3, pad+a+b)
			}
		}
	}
}

// FuzzScan: for any pattern and text, the one-pass scan finds what the
// per-literal search finds.
func FuzzScan(f *testing.F) {
	for _, p := range DefaultSecrets() {
		f.Add(p.Regexp, "x PASSWORD=abcdefghij AKIAIOSFODNN7EXAMPLE \xff")
	}
	f.Add(`(?i:ab)X\d`, "abx1")
	f.Add(`[#%]\d`, "#")
	f.Fuzz(func(t *testing.T, pattern, in string) {
		r, err := NewRedactor([]SecretPattern{{Name: "p", Regexp: pattern}, {Name: "q", Regexp: `(?i)` + pattern}})
		if err != nil {
			return
		}
		sameScan(t, r, in)
	})
}
