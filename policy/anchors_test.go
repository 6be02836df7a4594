package policy

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// reference redacts with every expression run, as before the prefilter.
func reference(t testing.TB, patterns []SecretPattern) (filtered, ref *Redactor) {
	t.Helper()
	filtered, err := NewRedactor(patterns)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ = NewRedactor(patterns)
	ref.noFilter = true
	return filtered, ref
}

func sameRedaction(t *testing.T, filtered, ref *Redactor, in string) {
	t.Helper()
	got, n := filtered.Redact(in)
	want, m := ref.Redact(in)
	if got != want || n != m {
		t.Fatalf("Redact(%q) with the prefilter = %q (%d), without = %q (%d)", in, got, n, want, m)
	}
}

// Every default pattern's secrets are still found with the prefilter on,
// in every spelling its expression accepts: upper and lower case for the
// case-insensitive ones, including the non-ASCII runes (?i) folds into
// ASCII letters (the Kelvin sign for k, the long s for s).
func TestPrefilterLetsEverySecretThrough(t *testing.T) {
	filtered, ref := reference(t, DefaultSecrets())
	secrets := []string{
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
		"-----BEGIN PRIVATE KEY-----x-----END PRIVATE KEY-----",
		"AKIAIOSFODNN7EXAMPLE", "ASIAIOSFODNN7EXAMPLE",
		"ghp_" + strings.Repeat("a1B2", 9), "gho_" + strings.Repeat("z", 40), "ghs_" + strings.Repeat("9", 36),
		"github_pat_" + strings.Repeat("A_b1", 6),
		"sk-ant-api03-abcdefghijklmnopqrstuvwx", "sk-proj-abcdefghijklmnopqrstuv123", "sk-" + strings.Repeat("x", 20),
		"xoxb-1234567890-abc", "AIza" + strings.Repeat("B", 35), "sk_live_" + strings.Repeat("4", 24), "rk_live_" + strings.Repeat("c", 20),
		"eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4",
		"postgres://app:s3cr3tpass@db:5432/x", "https://u:pw123@host",
		"password=hunter2hunter2", "PASSWORD: 'correcthorse'", "Passwd=abcdefgh1", "DB_SECRET=abcdefghij",
		"x-api-key: 0123456789abc", "API_KEY=0123456789abc", "ApiKey = 0123456789abc", "api-Key:0123456789abc",
		"ACCESS_TOKEN=0123456789abc", "auth-token: 0123456789abc", "authtoken=0123456789abc",
		"api_\u212Aey=0123456789abc",       // Kelvin sign K folds with k
		"pa\u017F\u017Fword=0123456789abc", // long s folds with s
		"db_\u017FECRET: 0123456789abc",
		"acce\u017F\u017F_to\u212Aen=abcdefgh", // both
	}
	for _, s := range secrets {
		for _, in := range []string{s, "before " + s + " after", "é " + s, s + "\n" + s} {
			got, n := filtered.Redact(in)
			if n == 0 || strings.Contains(got, s) {
				t.Errorf("Redact(%q) = %q (%d): the secret slipped through", in, got, n)
			}
			sameRedaction(t, filtered, ref, in)
		}
	}
}

// Texts built at random from pieces of secrets, their anchors, separators
// and non-ASCII runes redact exactly as without the prefilter.
func TestPrefilterMatchesReferenceOnRandomText(t *testing.T) {
	filtered, ref := reference(t, DefaultSecrets())
	pieces := []string{"AKIA", "ASIA", "IOSFODNN7EXAMPLE", "gh", "p_", "github_pat_", "sk-", "ant-", "proj-", "_live_", "xox", "b-",
		"AIza", "eyJ", ".", "://", "user", ":", "@", "=", " ", "\n", "\"", "'", "password", "PassWord", "secret", "api", "_", "-", "key",
		"Key", "token", "access", "auth", "\u212A", "\u017F", "é", "-----BEGIN", " PRIVATE KEY-----", "-----END", "abcdefgh", "0123456789",
		"ABCDEFGHIJKLMNOP", strings.Repeat("a1B2", 10), "x"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		sameRedaction(t, filtered, ref, b.String())
	}
}

// Patterns of a policy file get a prefilter too (or none when nothing is
// certain); whatever it is, it never changes what is redacted.
func TestPrefilterOnOtherPatterns(t *testing.T) {
	patterns := []string{
		`internal-[0-9]{6}`, `(?i)corp_token_[a-z]+`, `(?:foo|)bar\d+`, `(?:abc|x*)yz`, `a?b?c?`, `(?i)k+s+`,
		`[kK]ey(?:One|Two)?:\w+`, `(?s)BEGIN.*END`, `^token=\S+$`, `(?m)^pw:\s*\S{4,}`, `x{2,}y`, `(?i)(?:ſecret|K)\d`,
		`\bTKN[A-Z]{3}\b`, `(?i)é+tag`, `[^a]bc`, `(a|b)(c|d)(e|f)(g|h)(i|j)`, `.`, `\pL{3}`, `(?i)[k-m]ode=\d`,
	}
	texts := []string{"internal-123456", "INTERNAL-123456", "Corp_Token_abc", "corp_to\u212Aen_x", "bar12", "foobar9", "yz", "abcyz", "xxyz",
		"ks", "KS", "\u212A\u017F", "keyOne:a", "KeyTwo:b", "Key:c", "BEGIN\nx\nEND", "token=abc", "pw: abcd", "xxy", "\u017Fecret1", "K2",
		"TKNABC", "ÉÉtag", "ébc", "bc", "acegi", "bdfhj", "Mode=1", "\u212Aode=2", "none of it"}
	for _, p := range patterns {
		filtered, ref := reference(t, []SecretPattern{{Name: "p", Regexp: p}})
		for _, a := range texts {
			for _, b := range texts {
				sameRedaction(t, filtered, ref, a+" "+b)
				sameRedaction(t, filtered, ref, a+b)
			}
		}
	}
}

// The prefilter does what it is for: ordinary text skips the expressions.
func TestPrefilterSkipsPlainText(t *testing.T) {
	r, err := NewRedactor(DefaultSecrets())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.patterns {
		if len(p.need.lits) == 0 {
			t.Errorf("default pattern %s has no prefilter", p.name)
		}
	}
	// And where a text holds a pattern's literals, its expression runs
	// only over the runs of bytes around them that a match may hold
	// (every default pattern but the private key's, which may hold any).
	for _, p := range r.patterns {
		if got, want := p.cut != nil, p.name != "private_key"; got != want {
			t.Errorf("pattern %s: cut bytes %v, want %v", p.name, got, want)
		}
	}
	may := make([]bool, len(r.patterns))
	r.filter.scan(strings.Repeat("line 1 of a small file read by the MCP benchmark\n", 20), may)
	for i, p := range r.patterns {
		if may[i] {
			t.Errorf("pattern %s (anchors %q) would run on plain text", p.name, p.need.lits)
		}
	}
}

// FuzzPrefilter: for any pattern and text, redaction with the prefilter is
// redaction without it.
func FuzzPrefilter(f *testing.F) {
	for _, p := range DefaultSecrets() {
		f.Add(p.Regexp, "x password=abcdefghij AKIAIOSFODNN7EXAMPLE pa\u017F\u017Fword=abcdefghij")
	}
	f.Add(`(?i)k(?:a|)s`, "\u212A\u017F")
	f.Fuzz(func(t *testing.T, pattern, in string) {
		filtered, err := NewRedactor([]SecretPattern{{Name: "p", Regexp: pattern}})
		if err != nil {
			return
		}
		ref, _ := NewRedactor([]SecretPattern{{Name: "p", Regexp: pattern}})
		ref.noFilter = true
		sameRedaction(t, filtered, ref, in)
	})
}

// TestIsASCII: a byte above 0x7F anywhere in strings of every length to
// 80 (the four-word, one-word and byte-at-a-time parts) makes isASCII
// false, and only such a byte.
func TestIsASCII(t *testing.T) {
	for n := range 81 {
		b := []byte(strings.Repeat("a\x7f~ 0", 20)[:n])
		if !isASCII(string(b)) {
			t.Fatalf("isASCII(%q) = false", b)
		}
		for i := range n {
			for _, c := range []byte{0x80, 0xc3, 0xff} {
				save := b[i]
				b[i] = c
				if isASCII(string(b)) {
					t.Fatalf("isASCII(%q) = true", b)
				}
				b[i] = save
			}
		}
	}
}
