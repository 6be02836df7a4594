package fs

import (
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

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
	// Pattern is a doublestar glob ("**/.git/hooks/**") matched against the
	// slash-separated path relative to its root, case-insensitively (some
	// file systems are, and a deny rule must not be dodged by ".GIT").
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

// DefaultRules returns the paths denied by default: places where a write
// would make something run later (git hooks and config, IDE tasks, agent
// and MCP settings, shell start-up files), toolgate's own files, and
// secrets (.env files, private keys, credential stores).
func DefaultRules() []Rule {
	const (
		hooks  = "git runs these files as programs"
		gitcfg = "git configuration can run programs (core.fsmonitor, core.sshCommand, filters) and may hold credentials"
		gitdir = "git's own data (objects, refs, alternates); change it with git, not by editing files"
		own    = "toolgate's own configuration, policy and audit log"
		ide    = "editor and agent settings can run commands when a folder is opened"
		shell  = "shell start-up files run on every login or new shell"
		secret = "this file holds secrets"
		key    = "this looks like a private key or certificate"
	)
	rules := []Rule{
		{Pattern: "**/.git/hooks", Reason: hooks, Access: ReadWrite},
		{Pattern: "**/.git/hooks/**", Reason: hooks, Access: ReadWrite},
		{Pattern: "**/.git/config", Reason: gitcfg, Access: ReadWrite},
		{Pattern: "**/.git", Reason: gitdir, Access: Write},
		{Pattern: "**/.git/**", Reason: gitdir, Access: Write},
		{Pattern: "**/.gitconfig", Reason: gitcfg, Access: Write},
		// .gitmodules names submodule URLs and paths git acts on at clone and
		// update (ext:: transports, CVE-2018-11235); .ripgreprc adds flags
		// (--pre runs a program) to every rg. Both on sandbox-runtime's
		// always-blocked list.
		{Pattern: "**/.gitmodules", Reason: gitcfg, Access: Write},
		{Pattern: "**/.ripgreprc", Reason: "ripgrep reads its flags from this file (--pre runs a program)", Access: Write},
		{Pattern: "**/.toolgate", Reason: own, Access: ReadWrite},
		{Pattern: "**/.toolgate/**", Reason: own, Access: Write},
		// Spilled results (output too large for one answer) are there to be read.
		{Pattern: "**/.toolgate/**", Reason: own, Access: Read, Except: []string{"**/.toolgate/spill/*"}},
		{Pattern: "**/.toolgate*", Reason: own, Access: ReadWrite},
		{Pattern: "**/toolgate*.{yaml,yml,json,jsonl,toml}", Reason: own, Access: Write},
		{Pattern: "**/*.audit.jsonl", Reason: own, Access: Write},
		{Pattern: "**/.mcp.json", Reason: ide, Access: Write},
		{Pattern: "**/{.vscode,.idea,.devcontainer,.claude,.cursor,.gemini,.codex,.windsurf,.continue,.zed}/**", Reason: ide, Access: Write},
		{Pattern: "**/.ssh/**", Reason: "ssh keys and authorized_keys", Access: ReadWrite, Secret: true},
	}
	for _, f := range []string{
		".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile",
		".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc",
		".login", ".logout", ".inputrc", ".config/fish/**", ".config/autostart/**",
	} {
		rules = append(rules, Rule{Pattern: "**/" + f, Reason: shell, Access: Write})
	}
	for _, f := range []string{
		".env*", ".netrc", ".git-credentials", ".npmrc", ".pypirc", ".pgpass",
		".aws/**", ".docker/config.json", ".kube/config", ".gnupg/**",
	} {
		rules = append(rules, Rule{Pattern: "**/" + f, Reason: secret, Access: ReadWrite, Secret: true})
	}
	for _, f := range []string{
		"id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
	} {
		rules = append(rules, Rule{Pattern: "**/" + f, Reason: key, Access: ReadWrite, Secret: true})
	}
	return rules
}

// guard is a compiled set of rules.
type guard struct {
	rules []Rule   // patterns lower-cased
	allow []string // AllowSecrets, lower-cased
}

func newGuard(rules []Rule, allowSecrets []string) (*guard, error) {
	g := &guard{}
	for _, r := range rules {
		p := strings.ToLower(r.Pattern)
		if !doublestar.ValidatePattern(p) {
			return nil, fmt.Errorf("fs: protected path rule %q is not a valid glob", r.Pattern)
		}
		r.Pattern = p
		r.Except = nil
		for _, e := range rules[len(g.rules)].Except {
			e = strings.ToLower(e)
			if !doublestar.ValidatePattern(e) {
				return nil, fmt.Errorf("fs: protected path rule %q: exception %q is not a valid glob", r.Pattern, e)
			}
			r.Except = append(r.Except, e)
		}
		g.rules = append(g.rules, r)
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
		if r.Access&acc == 0 || !doublestar.MatchUnvalidated(r.Pattern, low) {
			continue
		}
		if r.Secret && g.allowed(low) || excepted(r, low) {
			continue
		}
		return r
	}
	return nil
}

func excepted(r *Rule, low string) bool {
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
