package policy

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
)

// SecretPattern is one kind of secret to redact.
type SecretPattern struct {
	Name string // shown in the replacement: [REDACTED:name]
	// Regexp matches the secret. When it has a group named "secret", only
	// that group is replaced (so "password=hunter22" keeps "password=").
	Regexp string
}

// DefaultSecrets are credentials with a recognisable shape.
func DefaultSecrets() []SecretPattern {
	return []SecretPattern{
		{"private_key", `-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?-----END[A-Z ]*PRIVATE KEY-----`},
		{"aws_access_key", `\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`},
		{"github_token", `\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`},
		{"anthropic_key", `\bsk-ant-[A-Za-z0-9_-]{20,}`},
		{"openai_key", `\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`},
		{"slack_token", `\bxox[abposr]-[A-Za-z0-9-]{10,}`},
		{"google_api_key", `\bAIza[0-9A-Za-z_-]{35}\b`},
		{"stripe_key", `\b(?:sk|rk)_live_[0-9A-Za-z]{20,}`},
		{"jwt", `\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`},
		{"url_password", `[a-z][a-z0-9+.-]*://[^/\s:@]+:(?P<secret>[^/\s@]{3,})@`},
		{"assigned_secret", `(?i)\b[a-z0-9_.-]*(?:password|passwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)["']?\s*[:=]\s*["']?(?P<secret>[^\s"',;\[][^\s"',;]{7,})`},
	}
}

// Redactor replaces secrets in text. The zero value redacts nothing.
//
// Before running a pattern's regular expression over a text, it checks that
// the text contains one of the literal strings every match of the pattern
// must contain (e.g. "://" for url_password, "AKIA" or "ASIA" for
// aws_access_key), derived from the expression's syntax (see anchorsFor): a
// text without them cannot match, so the expression, far slower than a
// substring search, is skipped. A pattern without such literals always runs.
// One pass over the text finds the literals of every pattern at once (see
// prefilter); a text is scanned again only after a secret was replaced in it.
type Redactor struct {
	patterns []compiledSecret
	filter   *prefilter
	noFilter bool // tests: run every expression (the reference behaviour)
}

type compiledSecret struct {
	name   string
	re     func() *regexp.Regexp // compiled at its first use: most texts hold none of a pattern's anchors
	secret int                   // index of the "secret" group, or 0 for the whole match
	need   anchors               // a match contains one of these; none: always run re
}

// NewRedactor checks patterns and makes a Redactor of them. An expression
// is parsed here, so that a bad one is refused at once, and compiled when
// a text first needs it: compiling them all was a tenth of a `toolgate
// call`'s own work.
func NewRedactor(patterns []SecretPattern) (*Redactor, error) {
	r := &Redactor{}
	for _, p := range patterns {
		parsed, err := syntax.Parse(p.Regexp, syntax.Perl) // regexp.Compile's flags
		if err != nil {
			return nil, fmt.Errorf("policy: secret pattern %q: %w", p.Name, err)
		}
		expr := p.Regexp
		c := compiledSecret{
			name: p.Name,
			// A parsed expression compiles: syntax.Compile has no errors.
			re:   sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) }),
			need: anchorsFor(parsed),
		}
		if i := slices.Index(parsed.CapNames(), "secret"); i > 0 {
			c.secret = i
		}
		r.patterns = append(r.patterns, c)
	}
	need := make([]anchors, len(r.patterns))
	for i, p := range r.patterns {
		need[i] = p.need
	}
	r.filter = newPrefilter(need)
	return r, nil
}

// Redact returns s with every secret replaced by [REDACTED:name], and how
// many were replaced.
func (r *Redactor) Redact(s string) (string, int) {
	if r == nil {
		return s, 0
	}
	total := 0
	var buf [32]bool
	may := buf[:0]
	if !r.noFilter && r.filter != nil {
		may = append(may, make([]bool, len(r.patterns))...)
		r.filter.scan(s, may)
	}
	for i, p := range r.patterns {
		if !r.noFilter && len(p.need.lits) > 0 && !may[i] {
			continue
		}
		matches := p.re().FindAllStringSubmatchIndex(s, -1)
		if len(matches) == 0 {
			continue
		}
		var b strings.Builder
		last := 0
		for _, m := range matches {
			start, end := m[2*p.secret], m[2*p.secret+1]
			if start < last {
				continue
			}
			b.WriteString(s[last:start])
			b.WriteString("[REDACTED:" + p.name + "]")
			last = end
			total++
		}
		b.WriteString(s[last:])
		s = b.String()
		if !r.noFilter {
			clear(may)
			r.filter.scan(s, may)
		}
	}
	return s, total
}
