package policy

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestQuietInside: where RedactJSON finds a JSON text quiet, every ASCII
// string whose encoding it holds redacts to itself, with the prefilter and
// with every expression run (the reference); on random texts made of
// pieces of secrets, their literals, the bytes JSON escapes next to them
// ("\token", "pass\"word") and the testdata corpora, with the default
// patterns and with others. A pattern without literals, or with one
// holding a byte JSON escapes, is never quiet.
func TestQuietInside(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 39))
	pieces := []string{"AKIA", "ASIA", "0123456789ABCDEF", "ghp_", strings.Repeat("a", 36), "sk-", "sk-ant-", "xoxb-", "AIza",
		"sk_live_", "eyJ", "abcdefgh.", "://", "user:", "@", "password", "PassWord", "secret", "api_key", "token", "auth_",
		"=", ": ", "\"", "\\", "<", ">", "&", "\n", "\t", "\x00", "\x1f", "\x7f", " ", "seq 1\n2\n3\n", "-----BEGIN RSA PRIVATE KEY-----",
		"-----END RSA PRIVATE KEY-----", "é", "\u2028", "\xff", "\u212a"}
	// Bytes JSON escapes, and what a literal less its first letter leaves
	// ("\token" encodes "\t" then "oken").
	plain := []string{"seq 1\n2\n3\n", "build ok", " ", "\n", "\t", "\"", "\\", "<", ">", "&", "\x00", "\x1f", "\x7f", "é", "\u2028", "\xff",
		"oken", "assword", "ecret", "KIA", "//", "kip"}
	corpus := corpus(t)
	text := func() string {
		var b strings.Builder
		if r.IntN(4) == 0 {
			c := corpus[r.IntN(len(corpus))]
			b.WriteString(c[:r.IntN(min(len(c), 512)+1)])
		}
		for range r.IntN(12) {
			if r.IntN(4) > 0 {
				b.WriteString(plain[r.IntN(len(plain))])
			} else {
				b.WriteString(pieces[r.IntN(len(pieces))])
			}
		}
		return b.String()
	}
	sets := map[string][]SecretPattern{
		"default":    DefaultSecrets(),
		"others":     {{"folded", `(?i)tok[e3]n=\S+`}, {"one byte", `#\d{4}`}, {"exact", `XQZ-[0-9]{3}`}},
		"no literal": append(DefaultSecrets(), SecretPattern{"letters", `[A-Za-z]{30}`}),
		"a quote":    {{"quoted", `"key":"\w+"`}},
		"a newline":  {{"lines", `BEGIN\nEND`}},
	}
	for name, patterns := range sets {
		filtered, ref := reference(t, patterns)
		if want := name == "default" || name == "others"; filtered.jsonSafe != want {
			t.Fatalf("%s: jsonSafe %v", name, filtered.jsonSafe)
		}
		quiet, inside := 0, 0
		for range 800 {
			a := struct {
				ID     string `json:"id"`
				Output string `json:"output"`
				N      int    `json:"n"`
			}{text(), text(), r.Int()}
			b, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			got, n := filtered.Redact(string(b))
			_, _, q := filtered.RedactJSON(string(b))
			want, m := ref.Redact(string(b))
			if got != want || n != m {
				t.Fatalf("%s: Redact(%q) = %q (%d), reference %q (%d)", name, b, got, n, want, m)
			}
			if !q {
				continue
			}
			quiet++
			if n != 0 || got != string(b) {
				t.Fatalf("%s: %q is quiet, but redacted to %q", name, b, got)
			}
			for _, s := range []string{a.ID, a.Output} {
				if !filtered.QuietInside(s) {
					continue
				}
				inside++
				if got, n := ref.Redact(s); n != 0 || got != s {
					t.Fatalf("%s: %q is inside the quiet %q, but redacts to %q", name, s, b, got)
				}
				if got, n := filtered.Redact(s); n != 0 || got != s {
					t.Fatalf("%s: %q is inside the quiet %q, but redacts to %q with the prefilter", name, s, b, got)
				}
			}
		}
		if filtered.jsonSafe && (quiet < 50 || inside < 50) {
			t.Errorf("%s: only %d quiet texts, %d strings inside them: the test reaches too little", name, quiet, inside)
		}
		if !filtered.jsonSafe && quiet > 0 {
			t.Errorf("%s: %d texts quiet", name, quiet)
		}
	}
}
