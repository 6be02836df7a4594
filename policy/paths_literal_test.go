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
		if got := RequiredLiteral(pat); got != want {
			t.Errorf("RequiredLiteral(%q) = %q, want %q", pat, got, want)
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
		if doublestar.MatchUnvalidated(pat, p) && !strings.Contains(p, RequiredLiteral(pat)) {
			t.Fatalf("%q matches %q, which lacks its required literal %q", pat, p, RequiredLiteral(pat))
		}
	})
}

func TestExpandBraces(t *testing.T) {
	for pat, want := range map[string]string{
		"**/toolgate*.{yaml,yml}": "**/toolgate*.yaml **/toolgate*.yml",
		"{a,b}/x{c,d}":            "a/xc a/xd b/xc b/xd",
		"{a,b{c,d}}/x":            "{a,b{c,d}}/x",
		"*{*}":                    "*{*}",
		"{a,}z":                   "{a,}z",
		"plain/**":                "plain/**",
		"[{]x":                    "[{]x",
		`\{a,b}`:                  `\{a,b}`,
	} {
		if got := strings.Join(expandBraces(pat), " "); got != want {
			t.Errorf("expandBraces(%q) = %q, want %q", pat, got, want)
		}
	}
	if got := expandBraces("{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}"); len(got) != 1 {
		t.Errorf("128 alternatives: %d patterns, want the pattern itself", len(got))
	}
}

// FuzzExpandBraces: a path matches a pattern exactly when it matches one
// of its expansions.
func FuzzExpandBraces(f *testing.F) {
	for _, s := range [][2]string{
		{"**/{.vscode,.idea}/**", ".idea/x"}, {"**/toolgate*.{yaml,yml,json}", "a/toolgate.yml"}, {"{a,b{c,d}}/x", "bd/x"},
		{"{a,}z", "z"}, {"x{,/y}", "x/y"}, {"{**/a,b}", "c/d/a"}, {"{a,b", "a"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pat, p string) {
		if !doublestar.ValidatePattern(pat) {
			return
		}
		any := false
		for _, alt := range expandBraces(pat) {
			if doublestar.ValidatePattern(alt) && doublestar.MatchUnvalidated(alt, p) {
				any = true
			}
		}
		if whole := doublestar.MatchUnvalidated(pat, p); whole != any {
			t.Fatalf("%q on %q: %v, its expansions %q: %v", pat, p, whole, expandBraces(pat), any)
		}
	})
}
