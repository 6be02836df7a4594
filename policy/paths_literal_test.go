package policy

import (
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

func TestRequiredLiteral(t *testing.T) {
	for pat, want := range map[string]string{
		"**/.env*":         ".env",
		"**/.git/hooks/**": "hooks",
		"**/*.pem":         ".pem",
		"{a,b}/config*":    "config",
		"[abc]x/y":         "x",
		`x\*yz`:            "yz",
		"**":               "",
		"*":                "",
	} {
		if got := requiredLiteral(pat); got != want {
			t.Errorf("requiredLiteral(%q) = %q, want %q", pat, got, want)
		}
	}
}

// FuzzRequiredLiteral: whatever the pattern, every path it matches holds
// its required literal, so the prefilter never hides a match.
func FuzzRequiredLiteral(f *testing.F) {
	for _, r := range DefaultDeny() {
		f.Add(r.Pattern, ".env.local")
	}
	for _, s := range [][2]string{
		{"**/.env*", ".env"}, {"**/.env*", "a/b/.env.prod"}, {"**/.git/hooks/**", ".git/hooks/pre-commit"},
		{"{a,b}/config*", "b/config.yml"}, {"[abc]x/y", "bx/y"}, {`x\*yz`, "x*yz"}, {"**/id_{rsa,ed25519}*", "home/.ssh/id_rsa.pub"},
		{"a*b*c", "abc"}, {"**/*.{pem,key}", "certs/site.key"}, {"[!x]y", "zy"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pat, p string) {
		if !doublestar.ValidatePattern(pat) {
			return
		}
		if doublestar.MatchUnvalidated(pat, p) && !strings.Contains(p, requiredLiteral(pat)) {
			t.Fatalf("%q matches %q, which lacks its required literal %q", pat, p, requiredLiteral(pat))
		}
	})
}
