package policy

// Protected is a path that tools must not touch even inside a root: a
// default deny rule of every policy.
type Protected struct {
	// Rule is the deny rule: "Edit(PATTERN)" when only changes are denied,
	// "Read(PATTERN)" when only reading is, "*(PATTERN)" for both; each
	// exception is appended as ", !EXCEPT".
	Rule string
	// Pattern is the glob, relative to a root ("**/.git/hooks/**"),
	// matched case-insensitively.
	Pattern string
	// Except lists globs (same syntax) of paths the rule does not cover.
	Except []string
	// Read and Write say which access the rule denies.
	Read, Write bool
	// Reason tells the model why the path is off limits.
	Reason string
	// Secret marks a rule that guards credentials.
	Secret bool
}

// DefaultDeny returns the protected paths every policy starts with (unless
// its file says default_deny: false): places where a write would make
// something run later (git hooks and config, IDE tasks, agent and MCP
// settings, shell start-up files), toolgate's own files, and secrets (.env
// files, private keys, credential stores). The file tool set takes its
// protected paths from here (toolsets/fs DefaultRules), so that a policy
// file sees and extends the same list.
func DefaultDeny() []Protected {
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
	type entry struct {
		pattern, reason string
		read, write     bool
		secret          bool
		except          []string
	}
	const r, w, rw = 1, 2, 3
	e := func(pattern, reason string, acc int, secret bool, except ...string) entry {
		return entry{pattern, reason, acc&r != 0, acc&w != 0, secret, except}
	}
	spill := "**/.toolgate/spill/*" // spilled results are there to be read
	list := []entry{
		e("**/.git/hooks", hooks, rw, false),
		e("**/.git/hooks/**", hooks, rw, false),
		e("**/.git/config", gitcfg, rw, false),
		e("**/.git", gitdir, w, false),
		e("**/.git/**", gitdir, w, false),
		e("**/.gitconfig", gitcfg, w, false),
		// As in toolsets/fs: submodule URLs/paths git acts on, and rg's flags file.
		e("**/.gitmodules", gitcfg, w, false),
		e("**/.ripgreprc", "ripgrep reads its flags from this file (--pre runs a program)", w, false),
		e("**/.toolgate", own, w, false),
		e("**/.toolgate", own, r, false, spill),
		e("**/.toolgate/**", own, w, false),
		e("**/.toolgate/**", own, r, false, spill),
		e("**/.toolgate*", own, w, false),
		e("**/.toolgate*", own, r, false, spill),
		e("**/toolgate*.{yaml,yml,json,jsonl,toml}", own, w, false),
		e("**/*.audit.jsonl", own, w, false),
		e("**/.mcp.json", ide, w, false),
		e("**/{.vscode,.idea,.devcontainer,.claude,.cursor,.gemini,.codex,.windsurf,.continue,.zed}/**", ide, w, false),
		e("**/.ssh/**", "ssh keys and authorized_keys", rw, true),
	}
	for _, f := range []string{
		".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile",
		".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc",
		".login", ".logout", ".inputrc", ".config/fish/**", ".config/autostart/**",
	} {
		list = append(list, e("**/"+f, shell, w, false))
	}
	for _, f := range []string{
		".env*", ".netrc", ".git-credentials", ".npmrc", ".pypirc", ".pgpass",
		".aws/**", ".docker/config.json", ".kube/config", ".gnupg/**",
	} {
		list = append(list, e("**/"+f, secret, rw, true))
	}
	for _, f := range []string{
		"id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
	} {
		list = append(list, e("**/"+f, key, rw, true))
	}
	out := make([]Protected, len(list))
	for i, e := range list {
		spec := e.pattern
		for _, x := range e.except {
			spec += ", !" + x
		}
		rule := "*(" + spec + ")"
		switch {
		case !e.read:
			rule = "Edit(" + spec + ")"
		case !e.write:
			rule = "Read(" + spec + ")"
		}
		out[i] = Protected{Rule: rule, Pattern: e.pattern, Except: e.except, Read: e.read, Write: e.write, Reason: e.reason, Secret: e.secret}
	}
	return out
}
