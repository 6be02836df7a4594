package policy

import (
	"io/fs"
	"os"
	"path"
	"slices"
	"sync"
)

// Protected is a path that tools must not touch even inside a root: a
// default deny rule of every policy.
type Protected struct {
	// Rule is the deny rule: "Edit(PATTERN)" when only changes are denied,
	// "Read(PATTERN)" when only reading is, "*(PATTERN)" for both; each
	// exception is appended as ", !EXCEPT".
	Rule string
	// Pattern is the glob, relative to a root ("**/.git/hooks"), matched
	// case-insensitively; a pattern that matches a folder also matches
	// everything in it.
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

// ConfigPath is a file or folder that a program other than the tools acts
// on later: git, a shell, an editor, a coding agent, a build tool, a
// debugger, toolgate itself. A change there would make that program run
// commands, or follow instructions, that whoever wrote it chose — the way
// a planted git hook does. The file tools never change one, at any depth
// of a root; the command sandbox mounts the ones at the top of its
// workspace read-only.
type ConfigPath struct {
	// Name is the path from the top of a project, slash-separated, with no
	// wildcards: ".claude", ".github/copilot-instructions.md".
	Name string
	// Reason says whose file it is and why a change is dangerous.
	Reason string
	// Links are the symbolic links inside the project through which the
	// folder holding Name was reached (NestedConfigPaths: a folder at the
	// top that is a link, a declared package folder that is one or lies
	// behind one), each relative
	// to the top with no link on its way; Name itself has none on its
	// way. A program reads Name through them: a link changed would lead
	// it to another folder's configuration, so they must stay as they are
	// (each with the target it was followed by: see KeepLink).
	Links []Link
}

// Link is a symbolic link crossed to reach a package folder, with the
// target read when it was followed: a caller that keeps the link as it is
// checks that it still reads that target (the folder it guards is the one
// the target led to).
type Link struct {
	Name   string // relative to the top, slash-separated, no link on its way
	Target string // what Readlink gave when the link was followed
}

// ConfigPaths returns the files and folders that configure or instruct a
// program run later (see ConfigPath), each with its reason.
//
// Instruction files (AGENTS.md, CLAUDE.md, .cursorrules, …) are on the
// list: an agent reads them into every session as its user's words, so a
// line planted there by a prompt injection would steer every later session.
// Reading them stays allowed; a user who wants an agent to keep one up to
// date edits it, or turns the default deny list off (default_deny: false).
func ConfigPaths() []ConfigPath {
	var out []ConfigPath
	add := func(reason string, names ...string) {
		for _, n := range names {
			out = append(out, ConfigPath{Name: n, Reason: reason})
		}
	}
	runs := func(owner string) string {
		return "settings of " + owner + ": the commands in them (tasks, hooks, MCP servers) run when the folder is opened or the agent starts"
	}
	steers := func(owner string) string {
		return "an instruction file of " + owner + ": it is read into every session, so a change would steer later agent sessions"
	}
	ignores := func(owner string) string {
		return "an ignore file of " + owner + ": it decides what the agent may read"
	}

	// git and the tools around it.
	add("git's own data (objects, refs, hooks, config); change it with git, not by editing files", ".git")
	add("git configuration can run programs (core.fsmonitor, core.sshCommand, filters) and may hold credentials", ".gitconfig", ".gitmodules", ".config/git")
	add("git hooks: git runs these files as programs on commit, checkout or push", ".husky", ".githooks")
	add("a git hook manager runs the commands listed here on commit", ".pre-commit-config.yaml", "lefthook.yml", ".lefthook.yml", "lefthook-local.yml")
	add("ripgrep reads its flags from this file (--pre runs a program)", ".ripgreprc")
	add("Mercurial's and Sapling's own data: the hooks of its config (.hg/hgrc) run on commit, update or pull", ".hg", ".sl")
	add("Mercurial's configuration: its hooks run on commit, update or pull", ".hgrc")
	add("Jujutsu's own data: its repository config names programs jj runs (fix tools, diff and merge tools, signing)", ".jj")
	add("toolgate's own configuration, policy and audit log", ".toolgate")

	// Shells and session start-up.
	add("shell start-up files run on every login or new shell",
		".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile",
		".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc",
		".login", ".logout", ".inputrc", ".config/fish", ".config/autostart")
	add("direnv runs this file when a shell enters the folder", ".envrc")
	add("mise runs the hooks and loads the environment set here when a shell enters the folder", "mise.toml", ".mise.toml", "mise.local.toml", ".mise.local.toml", ".mise", ".config/mise")
	add("yarn runs the program its yarnPath names on every yarn command", ".yarnrc", ".yarnrc.yml")
	add("yarn runs the release and plugins kept here on every yarn command", ".yarn/releases", ".yarn/plugins")
	add("pnpm runs the hooks in this file on every install", ".pnpmfile.cjs")
	add("npm reads this file in a project and a home folder: the programs its script-shell, node-options (--require) and git name run on every npm run, npm install and npx, and npx installs and runs what its registry serves", ".npmrc")
	add("pip takes its index from this file (a virtual environment's, a user's): pip install then runs the setup code of what that index serves", "pip.conf", "pip.ini", ".pip", ".config/pip")
	add("bun runs the preload scripts this file names before every bun run and bun test", "bunfig.toml")
	add("devbox runs this file's init hook when a devbox shell starts", "devbox.json")

	// Build tools that run the programs their configuration names.
	add("cargo runs the programs this file names (build.rustc-wrapper, a target's runner, …) on every build, test or run", ".cargo/config.toml", ".cargo/config")
	add("rustup runs cargo and rustc from the toolchain this file names (a path is any folder of programs)", "rust-toolchain.toml", "rust-toolchain")
	add("Maven loads the build extensions (.mvn/extensions.xml), JVM options and flags set here, and its wrapper runs the distribution it names, on every build", ".mvn")
	add("the Gradle wrapper: ./gradlew runs this jar and the distribution its properties name", "gradle/wrapper")
	add("sbt passes the JVM options and flags in this file (-javaagent runs code) to every build", ".jvmopts", ".sbtopts")
	add("Bazel reads the flags in this file on every build (--run_under and --workspace_status_command run programs)", ".bazelrc")

	// Debuggers and interactive shells that run a start-up file of the folder.
	add("the debugger runs the commands in this file when it starts in the folder", ".gdbinit", ".lldbinit", ".pdbrc")
	add("the Ruby console (irb, pry) runs this file when it starts in the folder", ".irbrc", ".pryrc")
	add("R runs this file when it starts in the folder", ".Rprofile")

	// Editors.
	add(runs("VS Code (and its forks)"), ".vscode")
	add(runs("JetBrains IDEs"), ".idea", ".fleet")
	add(runs("Zed"), ".zed")
	add(runs("Visual Studio"), ".vs")
	add("a dev container runs its lifecycle commands (postCreateCommand, …) from this file", ".devcontainer", ".devcontainer.json")
	add("Vim and Neovim run this file when 'exrc' is set and the folder is opened", ".exrc", ".nvimrc", ".nvim.lua", ".vimrc", ".gvimrc")
	add("Neovim's lazy.nvim runs this file when the folder is opened", ".lazy.lua")
	add("Neovim runs this configuration on every start", ".config/nvim")
	add("Emacs applies the variables and eval forms of this file to every file of the folder it opens", ".dir-locals.el", ".dir-locals-2.el")
	add(runs("Helix (languages.toml names the language servers it starts)"), ".helix")
	add("Gitpod runs the tasks in this file when a workspace starts", ".gitpod.yml")

	// Coding agents: settings that run commands, instructions, ignore files.
	add(runs("Claude Code"), ".claude", ".claude.json", ".mcp.json")
	add(steers("Claude Code"), "CLAUDE.md", "CLAUDE.local.md")
	add(runs("Codex"), ".codex")
	add(steers("Codex and most other agents"), "AGENTS.md", "AGENTS.override.md")
	add(steers("Amp and Zed"), "AGENT.md")
	add("agent skills and settings shared by several agents (Codex keeps it read-only)", ".agents", ".agent")
	add(runs("Cursor"), ".cursor")
	add(steers("Cursor"), ".cursorrules")
	add(ignores("Cursor"), ".cursorignore", ".cursorindexingignore")
	add(runs("Gemini CLI"), ".gemini")
	add(steers("Gemini CLI"), "GEMINI.md")
	add(ignores("Gemini CLI"), ".geminiignore")
	add(ignores("Gemini Code Assist"), ".aiexclude")
	add(runs("Windsurf"), ".windsurf")
	add(steers("Windsurf"), ".windsurfrules")
	add(ignores("Windsurf"), ".codeiumignore")
	add(runs("Continue"), ".continue", ".continuerc.json")
	add(ignores("Continue"), ".continueignore")
	add(runs("Roo Code"), ".roo", ".roomodes")
	add(steers("Roo Code"), ".roorules")
	add(ignores("Roo Code"), ".rooignore")
	add(steers("Cline"), ".clinerules")
	add(ignores("Cline"), ".clineignore")
	add(runs("Kilo Code"), ".kilocode", ".kilocodemodes")
	add("aider runs the lint and test commands set here", ".aider.conf.yml")
	add(ignores("aider"), ".aiderignore")
	add(runs("Kiro"), ".kiro")
	add(runs("Amazon Q Developer"), ".amazonq")
	add(runs("OpenCode"), ".opencode", "opencode.json", "opencode.jsonc")
	add(runs("Goose"), ".goose")
	add(steers("Goose"), ".goosehints")
	add(runs("Junie"), ".junie")
	add(steers("JetBrains AI Assistant"), ".aiassistant")
	add(ignores("Junie and JetBrains AI Assistant"), ".aiignore")
	add(steers("GitHub Copilot"), ".github/copilot-instructions.md", ".github/instructions", ".github/prompts", ".github/chatmodes", ".github/agents")
	add("GitHub Copilot's coding agent runs the steps of this workflow in its environment before it starts work", ".github/workflows/copilot-setup-steps.yml")
	add(runs("Trae"), ".trae")
	add(runs("Augment"), ".augment")
	add(steers("Augment"), ".augment-guidelines")
	add(runs("Qwen Code"), ".qwen")
	add(steers("Qwen Code"), "QWEN.md")
	add(runs("Crush"), ".crush.json", "crush.json")
	add(steers("Crush"), "CRUSH.md")
	add(steers("Warp"), "WARP.md")
	add(runs("OpenHands"), ".openhands")
	add(steers("Zed"), ".rules")
	return out
}

// nestedConfigs are the configuration files a program reads in a folder
// below the top of a project, found by the marker that folder holds
// rather than by its name: pip reads the pip.conf (pip.ini) of the virtual
// environment it runs from, whatever that folder is called (.venv, venv,
// env: it holds pyvenv.cfg); npm reads the .npmrc of the nearest folder
// holding a package.json (a package of a monorepo).
var nestedConfigs = []struct {
	marker string
	names  []string
	reason string
}{
	{"pyvenv.cfg", []string{"pip.conf", "pip.ini"}, "pip takes its index from the pip.conf of the virtual environment it runs from (a folder holding pyvenv.cfg): pip install then runs the setup code of what that index serves"},
	{"package.json", []string{".npmrc"}, "npm reads the .npmrc of the nearest folder holding a package.json: the programs its script-shell, node-options (--require) and git name run on every npm run and npm install there, and npx installs and runs what its registry serves"},
}

// FolderConfigPaths returns the nested configuration of the folder dir of
// the project at r (relative to r, slash-separated, no link on its way;
// "." is the top), by the markers it holds, as NestedConfigPaths names it
// in a folder directly below the top, present or not. It is for a folder
// that a link out of another project leads to: NestedConfigPaths does not
// look there, though programs run in the link's folder read it.
func FolderConfigPaths(r *os.Root, dir string) []ConfigPath {
	out := markedConfigs(nil, r.Lstat, dir)
	for i := range out {
		out[i].Name = path.Clean(out[i].Name) // ./.npmrc at the top
	}
	return out
}

// markedConfigs appends to out the nested configuration of the folder dir
// (relative, slash-separated), by the markers it holds: anything but a
// folder (a link too, whatever it leads to: npm reads a package.json
// through one, and guarding more is safe); lstat reads a path relative to
// the same top as dir.
func markedConfigs(out []ConfigPath, lstat func(string) (fs.FileInfo, error), dir string) []ConfigPath {
	for _, n := range nestedConfigs {
		if fi, err := lstat(path.Join(dir, n.marker)); err == nil && !fi.IsDir() {
			for _, name := range n.names {
				out = append(out, ConfigPath{Name: dir + "/" + name, Reason: n.reason})
			}
		}
	}
	return out
}

// DefaultDeny returns the protected paths every policy starts with (unless
// its file says default_deny: false): the ConfigPaths (places where a write
// would make something run later or steer a later agent session: git,
// shells, editors, coding agents, build tools, toolgate's own files), git
// hooks and configuration also for reading, and secrets (.env files,
// private keys, credential stores). The file tool set takes its protected
// paths from here (toolsets/fs DefaultRules), so that a policy file sees
// and extends the same list. Each call returns a copy of its own (the list
// is built once: a call builds it twice, through the policy and the file
// tools).
func DefaultDeny() []Protected {
	out := slices.Clone(defaultDeny())
	for i := range out {
		out[i].Except = slices.Clone(out[i].Except)
	}
	return out
}

var defaultDeny = sync.OnceValue(func() []Protected {
	const (
		hooks  = "git runs these files as programs"
		gitcfg = "git configuration can run programs (core.fsmonitor, core.sshCommand, filters) and may hold credentials"
		own    = "toolgate's own configuration, policy and audit log"
		ide    = "editor and agent settings can run commands when a folder is opened"
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
		e("**/.git/config", gitcfg, rw, false),
	}
	for _, c := range ConfigPaths() {
		list = append(list, e("**/"+c.Name, c.Reason, w, false)) // a pattern naming a folder covers what it holds
	}
	list = append(list,
		e("**/.toolgate*", own, w, false),
		e("**/.toolgate*", own, r, false, spill),
		e("**/toolgate*.{yaml,yml,json,jsonl,toml}", own, w, false),
		e("**/*.audit.jsonl", own, w, false),
		e("**/*.code-workspace", ide, w, false),
		e("**/.ssh/**", "ssh keys and authorized_keys", rw, true),
	)
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
})
