package fs

import (
	"fmt"
	"path"
	"path/filepath"
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
	// Ask marks a path the policy in front of the tools asks a person
	// about before a call changes it (the CI definitions, policy.CIPaths):
	// the rule does not deny a write to a path the call names, since the
	// question was asked about that name, but it refuses one that reaches
	// such a path without naming it (through a symbolic link, or a ".."
	// after one), and the move or deletion of a folder that holds one,
	// neither of which the policy could see. Without a policy in front
	// (the tools used on their own), a named write is not asked about.
	Ask bool
}

// DefaultRules returns the paths denied by default: the policy's protected
// paths (policy.DefaultDeny: git hooks and config, toolgate's own files,
// the settings and instruction files of editors and coding agents
// (policy.ConfigPaths), shell start-up files, secrets), one list for both,
// so that the tools and the policy can never disagree; and the CI
// definitions the policy asks about (policy.CIPaths) as Ask rules.
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
	for _, c := range policy.CIPaths() {
		rules = append(rules, Rule{Pattern: "**/" + c.Pattern, Reason: "a CI definition of " + c.System + ", run with the repository's secrets on the next push", Access: Write, Ask: true})
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
		if r.Ask || r.Access&acc == 0 || !strings.Contains(low, r.lit) ||
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

// asked returns the first Ask rule that matches rel (a slash path
// relative to its root), or nil.
func (g *guard) asked(rel string) *Rule {
	if rel == "." || rel == "" {
		return nil
	}
	low := strings.ToLower(rel)
	for i := range g.rules {
		r := &g.rules[i]
		if r.Ask && strings.Contains(low, r.lit) && (doublestar.MatchUnvalidated(r.Pattern, low) || doublestar.MatchUnvalidated(r.dir, low)) && !excepted(r, low) {
			return &r.Rule
		}
	}
	return nil
}

// unnamed is the error for a write that reaches the asked path at (by
// rule r) through the path the call named, which is not itself asked about.
func unnamed(named string, at Location, r *Rule) error {
	return tool.Errorf(tool.PermissionDenied, "%q leads to %s, %s, without naming it: a change there is asked about by its own name", named, at.display(), r.Reason).
		WithDetail("rule", r.Pattern).WithDetail("path", at.Rel).
		WithSuggestion("name the path itself (%s) in the call, so that the user can be asked about the change", at.Rel)
}

// holds is the error for moving or deleting the folder l, which holds, or
// would put in place, the asked path at (by rule r).
func holds(l, at Location, r *Rule) error {
	return tool.Errorf(tool.PermissionDenied, "%q holds or would create %s, %s: a change there is asked about by its own name", l.display(), at.display(), r.Reason).
		WithDetail("rule", r.Pattern).WithDetail("path", at.Rel).
		WithSuggestion("move or delete %s by its own name first (the user is asked), then the folder", at.Rel)
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

// alias is a place that an Ask rule's path leads to through a symbolic
// link at the top of a root (.github -> gh: gh/workflows is where
// .github/workflows is).
type alias struct {
	root int
	rel  string
	rule *Rule
}

// aliases returns the places the Ask rules' paths at the top of root lead
// to through symbolic links: a write there changes the asked path without
// naming it. Only the names at the top that an Ask rule's literal path
// starts with (in any letter case) are resolved, so this costs one listing
// of the root's top.
func (s *Set) aliases(root int) []alias {
	r := s.roots.list[root]
	f, err := r.r.Open(".")
	if err != nil {
		return nil
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	top := map[string][]string{}
	for _, n := range names {
		top[strings.ToLower(n)] = append(top[strings.ToLower(n)], n)
	}
	var out []alias
	for i := range s.guard.rules {
		g := &s.guard.rules[i]
		entry := strings.TrimPrefix(g.Pattern, "**/")
		if !g.Ask || strings.ContainsAny(entry, "*?[{\\") {
			continue
		}
		first, rest, _ := strings.Cut(entry, "/")
		for _, name := range top[first] {
			l, err := s.roots.resolve(path.Join(filepath.ToSlash(r.dir), name, rest), true)
			if err != nil || l.Root != root || strings.EqualFold(l.Rel, path.Join(name, rest)) {
				continue
			}
			out = append(out, alias{root: root, rel: l.Rel, rule: &g.Rule})
		}
	}
	return out
}

// aliased returns the Ask rule whose path l lies in by way of one of the
// aliases, or nil.
func aliased(l Location, list []alias) *Rule {
	for _, a := range list {
		if l.Root == a.root && (l.Rel == a.rel || strings.HasPrefix(l.Rel, a.rel+"/")) {
			return a.rule
		}
	}
	return nil
}
