package fs

import (
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// Access is the kind of operation a Rule denies.
type Access int

const (
	// Write denies creating, changing, moving and deleting.
	Write Access = 1 << iota
	// Read denies reading contents and metadata, listing and searching.
	Read
	// ReadWrite denies both.
	ReadWrite = Read | Write
)

// Rule denies access to the paths its glob matches, even inside a root.
type Rule struct {
	// Pattern is a doublestar glob ("**/.git/hooks") matched against the
	// slash-separated path relative to its root, case-insensitively (some
	// file systems are, and a deny rule must not be dodged by ".GIT"). As in
	// the policy, a pattern that matches a folder also matches everything
	// in it.
	Pattern string
	// Reason tells the model why the path is off limits.
	Reason string
	// Access is what the rule denies.
	Access Access
	// Secret marks a rule that guards credentials: Options.AllowSecrets can
	// lift it for chosen paths.
	Secret bool
	// Except lists globs (same syntax) of paths the rule does not cover.
	Except []string
}

// DefaultRules returns the paths denied by default: the policy's protected
// paths (policy.DefaultDeny: git hooks and config, toolgate's own files,
// the settings and instruction files of editors and coding agents
// (policy.ConfigPaths), shell start-up files, secrets), one list for both,
// so that the tools and the policy can never disagree.
func DefaultRules() []Rule {
	deny := policy.DefaultDeny()
	rules := make([]Rule, len(deny))
	for i, d := range deny {
		var acc Access
		if d.Read {
			acc |= Read
		}
		if d.Write {
			acc |= Write
		}
		rules[i] = Rule{Pattern: d.Pattern, Reason: d.Reason, Access: acc, Secret: d.Secret, Except: d.Except}
	}
	return rules
}

// guard is a compiled set of rules.
type guard struct {
	rules []rule
	allow []string // AllowSecrets, lower-cased
}

// rule is a Rule compiled: its patterns lower-cased, the pattern of what a
// folder it matches holds, and a piece of text every path it matches holds.
type rule struct {
	Rule
	dir string // Pattern + "/**"
	lit string // see policy.RequiredLiteral
}

func newGuard(rules []Rule, allowSecrets []string) (*guard, error) {
	g := &guard{}
	for _, r := range rules {
		p := strings.ToLower(r.Pattern)
		if !doublestar.ValidatePattern(p) {
			return nil, fmt.Errorf("fs: protected path rule %q is not a valid glob", r.Pattern)
		}
		c := rule{Rule: r, dir: p + "/**", lit: policy.RequiredLiteral(p)}
		c.Pattern, c.Except = p, nil
		for _, e := range r.Except {
			e = strings.ToLower(e)
			if !doublestar.ValidatePattern(e) {
				return nil, fmt.Errorf("fs: protected path rule %q: exception %q is not a valid glob", r.Pattern, e)
			}
			c.Except = append(c.Except, e)
		}
		g.rules = append(g.rules, c)
	}
	for _, a := range allowSecrets {
		p := strings.ToLower(a)
		if !doublestar.ValidatePattern(p) {
			return nil, fmt.Errorf("fs: AllowSecrets glob %q is not valid", a)
		}
		g.allow = append(g.allow, p)
	}
	return g, nil
}

// match returns the first rule that denies acc on rel (a slash path
// relative to its root), or nil.
func (g *guard) match(rel string, acc Access) *Rule {
	if rel == "." {
		return nil
	}
	low := strings.ToLower(rel)
	for i := range g.rules {
		r := &g.rules[i]
		if r.Access&acc == 0 || !strings.Contains(low, r.lit) ||
			!doublestar.MatchUnvalidated(r.Pattern, low) && !doublestar.MatchUnvalidated(r.dir, low) {
			continue
		}
		if r.Secret && g.allowed(low) || excepted(r, low) {
			continue
		}
		return &r.Rule
	}
	return nil
}

func excepted(r *rule, low string) bool {
	for _, e := range r.Except {
		if doublestar.MatchUnvalidated(e, low) {
			return true
		}
	}
	return false
}

func (g *guard) allowed(low string) bool {
	for _, a := range g.allow {
		if doublestar.MatchUnvalidated(a, low) {
			return true
		}
	}
	return false
}

// check returns a permission_denied error when a rule denies acc on l.
func (g *guard) check(l Location, acc Access) error {
	r := g.match(l.Rel, acc)
	if r == nil {
		return nil
	}
	verb := "writing"
	if acc&Read != 0 {
		verb = "reading"
	}
	e := tool.Errorf(tool.PermissionDenied, "%s %q is denied: it is a protected path (%s)", verb, l.display(), r.Reason).
		WithDetail("rule", r.Pattern)
	if r.Secret {
		return e.WithSuggestion("do not read or write secrets; if the user needs this file handled, ask them to allow it explicitly in the policy")
	}
	return e.WithSuggestion("leave this path alone; if the change is really needed, ask the user to make it or to allow it in the policy")
}
