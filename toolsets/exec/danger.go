package exec

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Verdict is what the dangerous-command check says of a command.
type Verdict int

const (
	Allow Verdict = iota // nothing dangerous found
	Ask                  // dangerous: runs only with a human's approval
	Deny                 // never runs (disk wipes, rm -rf /, fork bombs, shutdown…)
)

func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	}
	return "deny"
}

// Finding is the check's verdict and why (empty for Allow).
type Finding struct {
	Verdict Verdict
	Reason  string
	// Command is the simple command the rule matched, as the shell will
	// see it (quotes removed, wrappers kept).
	Command string
}

// maxCommands is how many simple commands a command line may hold: past
// it the check gives up, and fails closed.
const maxCommands = 50

// CheckShell checks a shell command line. It parses it as bash does (so
// quoting, escapes, line continuations, $(…), <(…), subshells, pipes, &&,
// ; and function bodies are seen as the shell sees them) and checks every
// simple command in it, after looking through wrappers (sudo, env, nice,
// timeout, nohup, xargs, sh -c "…", eval, find -exec…). Quoted prose is
// an argument, not a command: `echo "rm -rf /"` is allowed.
//
// A line that cannot be parsed, or holds more than 50 commands, is denied.
func CheckShell(line string) Finding {
	c := &checker{}
	c.shell(line)
	c.finish()
	return c.worst
}

// CheckArgv checks a command given as an argument vector (no shell).
func CheckArgv(argv []string) Finding {
	c := &checker{}
	c.argv(argv)
	c.finish()
	return c.worst
}

const maxDepth = 4

// parseShell parses a command line as bash does.
func parseShell(line string) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
}

// shell checks a command line at the checker's depth; one that cannot be
// parsed is denied.
func (c *checker) shell(line string) {
	f, err := parseShell(line)
	if err != nil {
		c.flag(Deny, "", "the command line cannot be parsed, so it cannot be checked: %v", err)
		return
	}
	c.file(f)
}

// placers are the commands that move files to another name: after one,
// a regenerable folder's name may hold what was moved there (copies and
// links lose nothing when removed).
var placers = map[string]bool{"mv": true, "rename": true, "prename": true, "file-rename": true}

// finish decides what needs the whole line: a regenerable folder removed
// without asking (rm -rf build) is asked about after all when the line
// also moves files (mv src build; rm -rf build), since then the name may
// no longer hold what a build makes.
func (c *checker) finish() {
	if c.spared != "" && c.placer != "" {
		c.flag(Ask, c.spared, "removes many files: rm -r of %s, where %s in the same command line may have moved other files", c.spared, c.placer)
	}
}

type checker struct {
	depth int
	calls int
	worst Finding
	// spared is a regenerable folder's removal that did not ask, placer a
	// command that moves files (placers), both of the whole line, nested
	// command lines included (see finish).
	spared, placer string
}

func (c *checker) flag(v Verdict, cmd, format string, args ...any) {
	if v > c.worst.Verdict {
		c.worst = Finding{Verdict: v, Reason: fmt.Sprintf(format, args...), Command: cmd}
	}
}

func (c *checker) merge(f Finding) {
	if f.Verdict > c.worst.Verdict {
		c.worst = f
	}
}

func (c *checker) file(f *syntax.File) {
	funcs := map[string]*syntax.FuncDecl{}
	// Walk calls f(nil) when it leaves a node it entered: entered says, for
	// each node entered, whether it is a loop over many names (mass.go).
	var entered []bool
	loops := 0
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			if entered[len(entered)-1] {
				loops--
			}
			entered = entered[:len(entered)-1]
			return true
		}
		switch x := n.(type) {
		case *syntax.FuncDecl:
			if x.Name != nil {
				funcs[x.Name.Value] = x
			}
		case *syntax.CallExpr:
			c.calls++
			if c.calls > maxCommands {
				c.flag(Deny, "", "the command line holds more than %d commands: too many to check", maxCommands)
				return false
			}
			c.call(x)
			if loops > 0 {
				c.inLoop(x)
			}
		case *syntax.Stmt:
			if loops > 0 {
				if t := truncation(x); t != "" {
					c.flag(Ask, "> "+t, "empties many files: a loop writes over every name (> %s)", t)
				}
			}
		case *syntax.Redirect:
			if x.Word != nil {
				if target, ok := literal(x.Word); ok && isWrite(x.Op) {
					c.writeTarget(target)
				}
			}
		case *syntax.ProcSubst:
			for _, s := range x.Stmts {
				if fetches(s) {
					c.flag(Deny, "", "runs a script fetched from the network (process substitution of a download)")
				}
			}
		case *syntax.BinaryCmd:
			if x.Op == syntax.Pipe || x.Op == syntax.PipeAll {
				c.pipe(x)
			}
		}
		loop := manyLoop(n)
		if loop {
			loops++
		}
		entered = append(entered, loop)
		return true
	})
	// Fork bombs: a function that calls itself in a pipe or in the background.
	for name, fd := range funcs {
		recursive, spawns := false, false
		syntax.Walk(fd.Body, func(n syntax.Node) bool {
			switch x := n.(type) {
			case *syntax.CallExpr:
				if w, ok := commandWord(x); ok && w == name {
					recursive = true
				}
			case *syntax.BinaryCmd:
				if x.Op == syntax.Pipe || x.Op == syntax.PipeAll {
					spawns = true
				}
			case *syntax.Stmt:
				if x.Background {
					spawns = true
				}
			}
			return true
		})
		if recursive && spawns {
			c.flag(Deny, name, "a fork bomb (function %q calls itself in a pipe or in the background)", name)
		}
	}
}

// pipe flags a download piped into an interpreter (deny) and anything
// piped into a shell (ask).
func (c *checker) pipe(b *syntax.BinaryCmd) {
	right := firstCall(b.Y)
	if right == nil {
		return
	}
	argv, _ := words(right.Args)
	name, _, _ := unwrap(argv)
	if len(name) == 0 || !isInterpreter(base(name[0])) {
		return
	}
	// An interpreter reading a script from its standard input.
	if len(name) > 1 && !strings.HasPrefix(name[1], "-") {
		return // it runs a named script, not stdin
	}
	if fetches(b.X) {
		c.flag(Deny, strings.Join(name, " "), "pipes a download into %s: runs code fetched from the network", base(name[0]))
		return
	}
	c.flag(Ask, strings.Join(name, " "), "pipes data into %s, which runs it as code", base(name[0]))
}

// fetches reports whether s (or the left end of its pipes) runs curl,
// wget or a similar downloader.
func fetches(s *syntax.Stmt) bool {
	found := false
	syntax.Walk(s, func(n syntax.Node) bool {
		if x, ok := n.(*syntax.CallExpr); ok {
			argv, _ := words(x.Args)
			if name, _, _ := unwrap(argv); len(name) > 0 {
				switch base(name[0]) {
				case "curl", "wget", "fetch", "aria2c", "http", "https", "lwp-download", "nc", "ncat", "socat":
					found = true
				}
			}
		}
		return !found
	})
	return found
}

func firstCall(s *syntax.Stmt) *syntax.CallExpr {
	var call *syntax.CallExpr
	syntax.Walk(s, func(n syntax.Node) bool {
		if call != nil {
			return false
		}
		if x, ok := n.(*syntax.CallExpr); ok && len(x.Args) > 0 {
			call = x
			return false
		}
		return true
	})
	return call
}

func isInterpreter(name string) bool {
	switch name {
	case "sh", "bash", "dash", "zsh", "ksh", "fish", "python", "python3", "python2", "perl", "ruby", "node", "php", "lua", "source", ".":
		return true
	}
	return false
}

func isWrite(op syntax.RedirOperator) bool {
	switch op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.ClbOut, syntax.RdrInOut:
		return true
	}
	return false
}

// commandWord returns the literal command name of a call.
func commandWord(x *syntax.CallExpr) (string, bool) {
	if len(x.Args) == 0 {
		return "", false
	}
	return literal(x.Args[0])
}

// call checks one simple command.
func (c *checker) call(x *syntax.CallExpr) {
	if len(x.Args) == 0 {
		return
	}
	argv, lits := words(x.Args)
	if !lits[0] {
		c.flag(Ask, "", "the command name is computed when the command runs (%s), so it cannot be checked", printNode(x.Args[0]))
		return
	}
	// A script computed at run time: sh -c "$(…)", eval "$(…)".
	name := base(argv[0])
	for i := 1; i < len(argv); i++ {
		if lits[i] {
			continue
		}
		script := isInterpreter(name) && i >= 2 && strings.HasPrefix(argv[i-1], "-") && strings.Contains(argv[i-1], "c") || name == "eval"
		if !script {
			continue
		}
		if fetchesWord(x.Args[i]) {
			c.flag(Deny, name, "runs a script fetched from the network")
		} else {
			c.flag(Ask, name, "runs a script computed when the command runs, which cannot be checked")
		}
	}
	c.argv(argv)
}

// fetchesWord reports whether a word's command substitutions download.
func fetchesWord(w *syntax.Word) bool {
	found := false
	syntax.Walk(w, func(n syntax.Node) bool {
		if cs, ok := n.(*syntax.CmdSubst); ok {
			for _, s := range cs.Stmts {
				if fetches(s) {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// argv checks one command given as words (non-literal words are "").
func (c *checker) argv(argv []string) {
	if len(argv) == 0 {
		return
	}
	cmd, nested, fan := unwrap(argv)
	for _, n := range nested {
		c.nested(n)
	}
	if len(cmd) == 0 {
		return
	}
	if fan != "" {
		// It adds the names it reads to the command's words.
		if r := remover(append(cmd[:len(cmd):len(cmd)], manyNames), c.depth); r != "" {
			c.flag(Ask, strings.Join(argv, " "), "removes many files: %s runs %s on every name it reads", fan, r)
		}
	}
	shown := strings.Join(cmd, " ")
	if n := base(cmd[0]); n == "sudo" || n == "doas" {
		c.flag(Ask, shown, "asks for other privileges (%s)", n)
		if cmd = cmd[1:]; len(cmd) == 0 {
			return
		}
	}
	name := base(cmd[0])
	args := cmd[1:]
	for _, a := range args {
		c.sensitive(shown, a)
	}
	if placers[name] || name == "git" && slices.Contains(args, "mv") {
		c.placer = name
	}
	switch {
	case name == "rm":
		c.rm(shown, args)
	case name == "rimraf" || name == "del-cli":
		c.rm(shown, append([]string{"-r"}, args...)) // rm -r by another name
	case name == "find":
		c.find(shown, args)
	case name == "fd" || name == "fdfind":
		c.fd(shown, args)
	case name == "mv":
		c.mv(shown, args)
	case name == "rsync" || name == "rclone":
		c.mirror(shown, name, args)
	case name == "dd":
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "of="); ok && isDisk(v) {
				c.flag(Deny, shown, "writes straight onto a disk device (%s)", v)
			}
		}
	case name == "mkfs" || strings.HasPrefix(name, "mkfs.") || name == "mke2fs" || name == "mkswap" || name == "wipefs" ||
		name == "sfdisk" || name == "fdisk" || name == "parted" || name == "sgdisk":
		c.flag(Deny, shown, "formats or repartitions a disk (%s)", name)
	case name == "shred" && anyArg(args, isDisk):
		c.flag(Deny, shown, "wipes a disk device")
	case destroyers[name] != "":
		c.many(shown, destroyers[name], name, operands(args, valueOptions[name]))
	case name == "shutdown" || name == "reboot" || name == "halt" || name == "poweroff" || name == "kexec":
		c.flag(Deny, shown, "shuts down or restarts the machine (%s)", name)
	case (name == "init" || name == "telinit") && len(args) > 0 && (args[0] == "0" || args[0] == "6"):
		c.flag(Deny, shown, "shuts down or restarts the machine (%s %s)", name, args[0])
	case name == "systemctl" && anyArg(args, func(a string) bool {
		switch a {
		case "poweroff", "reboot", "halt", "kexec", "emergency", "rescue":
			return true
		}
		return false
	}):
		c.flag(Deny, shown, "shuts down or restarts the machine (systemctl)")
	case name == "chmod" || name == "chown" || name == "chgrp":
		c.perms(shown, name, args)
	case name == "git":
		c.git(shown, args)
	case isInterpreter(name):
		if code, loop, ok := inlineCode(name, args); ok {
			c.merge(checkCode(code, loop))
		}
	case name == "sudo" || name == "su" || name == "doas" || name == "pkexec":
		c.flag(Ask, shown, "asks for other privileges (%s)", name)
	case name == "eval" || name == "source" || name == ".":
		if name == "eval" {
			c.nested(strings.Join(args, " "))
		}
	case name == "rg" && anyArg(args, func(a string) bool { return a == "--pre" || strings.HasPrefix(a, "--pre=") }),
		name == "sort" && anyArg(args, func(a string) bool { return strings.HasPrefix(a, "--compress-program") }),
		name == "man" && anyArg(args, func(a string) bool { return a == "-P" || strings.HasPrefix(a, "--pager") || strings.HasPrefix(a, "-H") }),
		name == "tar" && anyArg(args, func(a string) bool {
			return strings.HasPrefix(a, "--to-command") || strings.HasPrefix(a, "--use-compress-program") ||
				strings.HasPrefix(a, "--checkpoint-action") || strings.HasPrefix(a, "--info-script") || strings.HasPrefix(a, "--new-volume-script")
		}):
		c.flag(Ask, shown, "an option of %s that runs another program", name)
	case name == "tar" || name == "zip" || name == "7z" || name == "7za" || name == "7zz":
		c.archive(shown, name, args)
	case name == "tee" && !appends(args):
		c.many(shown, "empties many files", "tee", operands(args, nil))
	case name == "sed":
		if files, ok := sedEmpties(args); ok {
			c.many(shown, "empties many files", "sed -i d", files)
		}
	}
	for _, a := range args {
		if a == "--no-preserve-root" {
			c.flag(Deny, shown, "--no-preserve-root: removes the whole file system")
		}
	}
}

// nested checks a command line given as a string (sh -c, eval, …).
func (c *checker) nested(line string) {
	if c.depth >= maxDepth {
		c.flag(Deny, "", "commands nested more than %d levels deep", maxDepth)
		return
	}
	n := &checker{depth: c.depth + 1}
	n.shell(line)
	c.merge(n.worst)
	if n.spared != "" {
		c.spared = n.spared
	}
	if n.placer != "" {
		c.placer = n.placer
	}
}

// unwrap looks through wrapper commands (sudo, env, nice, timeout,
// nohup, time, command, exec, xargs, parallel, stdbuf, ionice, chrt,
// taskset, setsid, unbuffer, watch, flock) to the command they run.
// Command lines passed as strings (sh -c "…", find -exec …) are returned
// in nested; fan names the wrapper (xargs, parallel) that runs cmd once
// for every name it reads, if any.
func unwrap(argv []string) (cmd []string, nested []string, fan string) {
	for i := 0; i < 16 && len(argv) > 0; i++ {
		name := base(argv[0])
		rest := argv[1:]
		switch name {
		case "sudo", "doas":
			// Keep sudo itself visible (it asks), but also check what it runs.
			inner := skipOptions(rest, map[string]bool{"-u": true, "-g": true, "-C": true, "-D": true, "-h": true, "-p": true, "-r": true, "-t": true, "-U": true, "-T": true})
			if len(inner) > 0 {
				c2, n2, f2 := unwrap(inner)
				return append([]string{name}, c2...), n2, f2
			}
			return argv, nil, fan
		case "env":
			j := 0
			for j < len(rest) {
				a := rest[j]
				switch {
				case a == "-u" || a == "-C" || a == "--chdir" || a == "--unset" || a == "-S" || a == "--split-string":
					if (a == "-S" || a == "--split-string") && j+1 < len(rest) {
						nested = append(nested, rest[j+1])
					}
					j += 2
				case strings.HasPrefix(a, "-"):
					j++
				case strings.Contains(a, "="):
					j++
				default:
					goto doneEnv
				}
			}
		doneEnv:
			argv = rest[min(j, len(rest)):]
		case "nice":
			argv = skipOptions(rest, map[string]bool{"-n": true, "--adjustment": true})
		case "timeout":
			r := skipOptions(rest, map[string]bool{"-s": true, "--signal": true, "-k": true, "--kill-after": true})
			if len(r) > 0 {
				r = r[1:] // the duration
			}
			argv = r
		case "nohup", "time", "command", "builtin", "exec", "setsid", "unbuffer", "nocache":
			argv = skipOptions(rest, nil)
		case "npx", "bunx":
			argv = skipOptions(rest, map[string]bool{"-p": true, "--package": true})
		case "stdbuf":
			argv = skipOptions(rest, map[string]bool{"-i": true, "-o": true, "-e": true})
		case "ionice":
			argv = skipOptions(rest, map[string]bool{"-c": true, "-n": true, "-p": true})
		case "chrt":
			r := skipOptions(rest, nil)
			if len(r) > 0 {
				r = r[1:] // the priority
			}
			argv = r
		case "taskset":
			r := skipOptions(rest, nil)
			if len(r) > 0 {
				r = r[1:] // the mask
			}
			argv = r
		case "flock":
			r := skipOptions(rest, map[string]bool{"-w": true, "-E": true, "-c": true})
			for k, a := range rest {
				if (a == "-c" || a == "--command") && k+1 < len(rest) {
					nested = append(nested, rest[k+1])
				}
			}
			if len(r) > 0 {
				r = r[1:] // the lock file
			}
			argv = r
		case "watch":
			argv = skipOptions(rest, map[string]bool{"-n": true, "--interval": true, "-d": false})
			if len(argv) > 0 {
				nested = append(nested, strings.Join(argv, " "))
				return nil, nested, fan
			}
		case "xargs":
			argv = skipOptions(rest, map[string]bool{"-I": true, "-i": false, "-n": true, "-P": true, "-L": true, "-d": true,
				"-E": true, "-s": true, "-a": true, "--max-args": true, "--max-procs": true, "--delimiter": true, "--arg-file": true})
			if len(argv) == 0 {
				return []string{"xargs"}, nested, fan
			}
			fan = "xargs"
		case "parallel":
			argv = skipOptions(rest, map[string]bool{"-j": true, "--jobs": true, "-S": true, "--sshlogin": true, "-a": true,
				"--arg-file": true, "-d": true, "--delimiter": true, "-I": true, "-n": true, "-N": true, "-L": true, "--colsep": true})
			for k, a := range argv {
				if strings.HasPrefix(a, ":::") {
					argv = argv[:k]
					break
				}
			}
			if len(argv) == 0 {
				return []string{"parallel"}, nested, fan
			}
			fan = "parallel"
		case "sh", "bash", "dash", "zsh", "ksh", "busybox":
			if name == "busybox" && len(rest) > 0 {
				argv = rest
				continue
			}
			for k, a := range rest {
				if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") && k+1 < len(rest) {
					nested = append(nested, rest[k+1])
					return argv, nested, fan
				}
			}
			return argv, nested, fan
		case "find":
			start := "."
			if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
				start = rest[0]
			}
			for k := 0; k < len(rest); k++ {
				switch rest[k] {
				case "-exec", "-execdir", "-ok", "-okdir":
					var inner []string
					for k++; k < len(rest) && rest[k] != ";" && rest[k] != "+"; k++ {
						inner = append(inner, strings.ReplaceAll(rest[k], "{}", start))
					}
					if len(inner) > 0 {
						nested = append(nested, quoteArgv(inner))
					}
				}
			}
			return argv, nested, fan
		default:
			return argv, nested, fan
		}
	}
	return argv, nested, fan
}

// skipOptions drops leading options; withValue names the options that
// take the next word as their value.
func skipOptions(args []string, withValue map[string]bool) []string {
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			return args[1:]
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return args
		}
		if withValue[a] && len(args) > 1 {
			args = args[2:]
			continue
		}
		args = args[1:]
	}
	return args
}

func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

func (c *checker) rm(shown string, args []string) {
	recursive := false
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--recursive" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "rR") {
			recursive = true
		}
	}
	targets := operands(args, nil)
	for _, t := range targets {
		switch {
		case (t == "" || t == manyNames) && recursive: // a word the shell computes: $X, $(…)
			c.flag(Ask, shown, "removes many files: rm -r of a path computed when the command runs, which cannot be checked")
		case wholeFolder(t) && (recursive || path.Clean(t) != "."): // rm . alone fails
			c.flag(Ask, shown, "removes many files: everything in the working folder (%s)", t)
		case isSystemPath(t) && recursive:
			c.flag(Deny, shown, "removes %s, a system or home folder, recursively", t)
		case isSystemPath(t):
			c.flag(Ask, shown, "removes %s, outside the workspace", t)
		case recursive && outsideWorkspace(t):
			c.flag(Ask, shown, "removes %s, outside the workspace, recursively", t)
		case recursive && isRegenerable(t): // rm -rf node_modules (unless the line puts files there: finish)
			c.spared = shown
		case recursive && t != "" && !isGlob(t):
			c.flag(Ask, shown, "removes many files: rm -r removes the whole folder tree %s", t)
		}
	}
	c.many(shown, "removes many files", "rm", targets)
}

// wholeFolder reports whether an rm target is the working folder itself
// or all of its entries (., ./, *, ./*, .*).
func wholeFolder(t string) bool {
	switch path.Clean(t) {
	case ".", "*", ".*":
		return true
	}
	return false
}

func (c *checker) perms(shown, name string, args []string) {
	recursive := false
	var mode string
	var targets []string
	for _, a := range args {
		switch {
		case a == "-R" || a == "--recursive":
			recursive = true
		case strings.HasPrefix(a, "-") && len(a) > 1 && !isModeLike(a):
			if strings.Contains(a, "R") {
				recursive = true
			}
		case mode == "":
			mode = a
		default:
			targets = append(targets, a)
		}
	}
	for _, t := range targets {
		if isSystemPath(t) && (recursive || t == "/") {
			c.flag(Deny, shown, "changes the permissions or owner of %s recursively", t)
		}
	}
	if name == "chmod" && setsID(mode) {
		c.flag(Ask, shown, "sets the set-user-ID or set-group-ID bit (%s)", mode)
	}
}

func isModeLike(a string) bool {
	// -x, -w, -rwx are modes for chmod, not options.
	return strings.Trim(a[1:], "rwxXst") == ""
}

// setsID reports whether a chmod mode sets setuid or setgid bits.
func setsID(mode string) bool {
	if mode == "" {
		return false
	}
	if strings.Trim(mode, "01234567") == "" {
		if len(mode) >= 4 {
			d := mode[len(mode)-4]
			return d == '2' || d == '4' || d == '6' || d == '3' || d == '5' || d == '7'
		}
		return false
	}
	for _, clause := range strings.Split(mode, ",") {
		if i := strings.IndexAny(clause, "+="); i >= 0 && strings.Contains(clause[i:], "s") {
			return true
		}
	}
	return false
}

// gitSubcommand skips git's global options to its subcommand; config
// says whether one of them was -c (configuration that can run programs).
func gitSubcommand(args []string) (sub string, rest []string, config bool) {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		switch args[i] {
		case "-c":
			config = true
			i += 2
			continue
		case "-C", "--git-dir", "--work-tree", "--namespace":
			i += 2
			continue
		}
		i++
	}
	if i >= len(args) {
		return "", nil, config
	}
	return args[i], args[i+1:], config
}

func (c *checker) git(shown string, args []string) {
	sub, rest, config := gitSubcommand(args)
	if config {
		c.flag(Ask, shown, "git -c sets configuration that can run programs")
	}
	has := func(opts ...string) bool {
		for _, a := range rest {
			for _, o := range opts {
				if a == o || strings.HasPrefix(o, "-") && !strings.HasPrefix(o, "--") && len(o) == 2 &&
					strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a[1:], o[1:]) {
					return true
				}
			}
		}
		return false
	}
	switch {
	case sub == "reset" && has("--hard", "--merge", "--keep"):
		c.flag(Ask, shown, "git reset --hard throws away uncommitted work")
	case sub == "clean":
		// -i deletes too, once its menu is answered; a line it cannot read
		// exempts nothing.
		o := parseOptions(rest, gitCleanOptions())
		if (o.set["force"] || o.set["interactive"] || !o.known) && !(o.known && o.set["dry-run"]) {
			c.flag(Ask, shown, "removes many files: git clean -f deletes every untracked file")
		}
	case sub == "rm":
		if o := parseOptions(rest, gitRmOptions()); !o.known || !o.set["dry-run"] && !o.set["cached"] {
			if o.set["-r"] {
				c.flag(Ask, shown, "removes many files: git rm -r removes whole folder trees")
			}
			c.pathspecs(shown, "removes many files: git rm", o.operands)
		}
	case sub == "checkout" && has("-f", "--force"), sub == "switch" && has("-f", "--force", "--discard-changes"):
		c.flag(Ask, shown, "git %s --force discards uncommitted changes to every file", sub)
	case sub == "checkout":
		c.pathspecs(shown, "discards uncommitted changes to many files: git checkout", operands(rest, map[string]bool{"-s": true, "--source": true, "-b": true, "-B": true}))
	case sub == "restore":
		if o := parseOptions(rest, gitRestoreOptions()); !o.known || !o.set["staged"] || o.set["worktree"] {
			c.pathspecs(shown, "discards uncommitted changes to many files: git restore", o.operands)
		}
	case sub == "push" && (has("-f", "--force", "--force-with-lease", "--mirror", "--delete", "-d") || anyArg(rest, func(a string) bool {
		return strings.HasPrefix(a, "+") || strings.HasPrefix(a, ":") || strings.HasPrefix(a, "--force")
	})):
		c.flag(Ask, shown, "git push rewrites or deletes remote history")
	case sub == "branch" && has("-D"):
		c.flag(Ask, shown, "git branch -D deletes a branch with unmerged work")
	case sub == "stash" && len(rest) > 0 && (rest[0] == "drop" || rest[0] == "clear"),
		sub == "filter-branch", sub == "filter-repo",
		sub == "reflog" && len(rest) > 0 && (rest[0] == "expire" || rest[0] == "delete"),
		sub == "update-ref" && has("-d"):
		c.flag(Ask, shown, "git %s discards work or history", sub)
	}
}

// sensitive flags an argument naming a credential store or a system
// secret.
func (c *checker) sensitive(shown, a string) {
	if reason := sensitivePath(a); reason != "" {
		c.flag(Ask, shown, "touches %s (%s), outside the workspace", a, reason)
	}
}

func (c *checker) writeTarget(target string) {
	if isDisk(target) {
		c.flag(Deny, "> "+target, "writes straight onto a disk device (%s)", target)
		return
	}
	if reason := sensitivePath(target); reason != "" {
		c.flag(Ask, "> "+target, "writes to %s (%s)", target, reason)
		return
	}
	if strings.HasPrefix(target, "/proc/") || strings.HasPrefix(target, "/sys/") {
		c.flag(Ask, "> "+target, "writes to kernel settings (%s)", target)
	}
}

var secretMarks = []struct{ mark, reason string }{
	{"/etc/shadow", "password hashes"}, {"/etc/gshadow", "password hashes"}, {"/etc/sudoers", "privilege rules"},
	{".ssh/", "SSH keys"}, {".ssh", "SSH keys"}, {".gnupg", "GPG keys"}, {".aws/", "cloud credentials"},
	{".config/gcloud", "cloud credentials"}, {".azure/", "cloud credentials"}, {".kube/config", "cluster credentials"},
	{".docker/config.json", "registry credentials"}, {".netrc", "credentials"}, {".git-credentials", "credentials"},
	{".npmrc", "registry tokens"}, {".pypirc", "registry tokens"}, {"id_rsa", "a private key"}, {"id_ed25519", "a private key"},
	{"id_ecdsa", "a private key"}, {"/proc/sys/", "kernel settings"}, {"/sys/fs/cgroup", "control groups"},
	{"/sys/kernel", "kernel settings"}, {"/var/run/docker.sock", "the Docker socket"}, {"/run/docker.sock", "the Docker socket"},
}

func sensitivePath(a string) string {
	if a == "" {
		return ""
	}
	if a == "/root" || strings.HasPrefix(a, "/root/") || strings.HasPrefix(a, "~root") {
		return "root's home folder"
	}
	if strings.HasPrefix(a, "/proc/") && strings.HasSuffix(a, "/environ") {
		return "process environments"
	}
	for _, m := range secretMarks {
		if strings.HasSuffix(m.mark, "/") || strings.HasPrefix(m.mark, "/") {
			if strings.Contains(a, m.mark) {
				return m.reason
			}
			continue
		}
		// A name: as a path component.
		for _, part := range strings.Split(a, "/") {
			if part == m.mark || strings.HasPrefix(m.mark, ".") && part == m.mark {
				return m.reason
			}
		}
		if strings.Contains(m.mark, "/") && strings.Contains(a, m.mark) {
			return m.reason
		}
	}
	return ""
}

// systemDirs are the folders whose removal breaks a machine.
var systemDirs = map[string]bool{
	"/": true, "/bin": true, "/boot": true, "/dev": true, "/etc": true, "/home": true, "/lib": true, "/lib32": true,
	"/lib64": true, "/libx32": true, "/media": true, "/mnt": true, "/opt": true, "/proc": true, "/root": true,
	"/run": true, "/sbin": true, "/srv": true, "/sys": true, "/usr": true, "/var": true, "/usr/bin": true,
	"/usr/lib": true, "/usr/local": true, "/usr/sbin": true, "/usr/share": true, "/var/lib": true, "/var/log": true,
	"/System": true, "/Users": true, "/Library": true, "/Applications": true,
}

// isSystemPath reports whether p is / or a system or home folder (or a
// glob of one's contents), the home folder included.
func isSystemPath(p string) bool {
	if p == "" {
		return false
	}
	if p == "~" || p == "~/" || strings.HasPrefix(p, "~/*") || p == "~/." || p == "$HOME" || p == "${HOME}" || p == "$HOME/" || p == "$HOME/*" {
		return true
	}
	if !strings.HasPrefix(p, "/") {
		return false
	}
	clean := path.Clean(strings.TrimRight(strings.TrimSuffix(p, "*"), "/"))
	if clean == "." || clean == "" {
		clean = "/"
	}
	if strings.HasSuffix(p, "/*") || strings.HasSuffix(p, "/.*") {
		clean = path.Clean(strings.TrimSuffix(strings.TrimSuffix(p, "*"), "."))
	}
	return systemDirs[clean]
}

// outsideWorkspace reports whether a path plainly leaves the working
// folder (absolute, ~, or climbing with ..).
func outsideWorkspace(p string) bool {
	return strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$HOME") ||
		p == ".." || strings.HasPrefix(p, "../")
}

// isDisk reports whether p names a block device of a disk.
func isDisk(p string) bool {
	for _, d := range []string{"/dev/sd", "/dev/hd", "/dev/vd", "/dev/xvd", "/dev/nvme", "/dev/mmcblk", "/dev/disk", "/dev/md", "/dev/dm-", "/dev/mapper/", "/dev/loop", "/dev/root"} {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

func anyArg(args []string, f func(string) bool) bool {
	for _, a := range args {
		if f(a) {
			return true
		}
	}
	return false
}

func base(name string) string { return path.Base(name) }

// words returns the literal value of each word and which words were
// literal. A word holding an expansion is "", or manyNames when the shell
// may make several names of it; $HOME and ${HOME} are kept as written
// (as ~), so that rules can see them.
func words(ws []*syntax.Word) ([]string, []bool) {
	out := make([]string, len(ws))
	lits := make([]bool, len(ws))
	for i, w := range ws {
		out[i], lits[i] = literal(w)
		if !lits[i] {
			if splits(w) {
				out[i] = manyNames
			}
			s := printNode(w)
			if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
				s = s[1 : len(s)-1]
			}
			if s == "$HOME" || s == "${HOME}" || strings.HasPrefix(s, "$HOME/") || strings.HasPrefix(s, "${HOME}/") {
				out[i] = strings.Replace(strings.Replace(s, "${HOME}", "$HOME", 1), "$HOME", "~", 1)
			}
		}
	}
	return out, lits
}

// literal returns the value the shell gives w when w holds no expansion:
// quotes removed, backslash escapes resolved.
func literal(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(x.Value, false))
		case *syntax.SglQuoted:
			if x.Dollar {
				return "", false
			}
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(unescape(l.Value, true))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// unescape resolves backslashes as the shell does outside quotes (any
// character) or inside double quotes ($ ` " \ and newline only).
func unescape(s string, dquoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		n := s[i+1]
		switch {
		case n == '\n':
			i++
		case !dquoted || strings.IndexByte("$`\"\\", n) >= 0:
			b.WriteByte(n)
			i++
		default:
			b.WriteByte('\\')
		}
	}
	return b.String()
}

func printNode(n syntax.Node) string {
	var b strings.Builder
	syntax.NewPrinter().Print(&b, n)
	return b.String()
}

// inlineCode returns the program an interpreter is given on its command
// line (python -c, node -e, perl -e, ruby -e, php -r, also in a cluster
// of short options such as perl -lne), and whether the interpreter runs it
// once for every line it reads (perl and ruby -n or -p).
func inlineCode(name string, args []string) (code string, loop, ok bool) {
	var flags string
	switch {
	case strings.HasPrefix(name, "python"):
		flags = "c"
	case name == "node":
		flags = "ep"
	case name == "perl":
		flags = "eE"
	case name == "ruby":
		flags = "e"
	case name == "php":
		flags = "r"
	}
	for i, a := range args {
		if i+1 == len(args) {
			break
		}
		short := len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.Trim(a[1:], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == ""
		if short {
			loop = loop || (name == "perl" || name == "ruby") && strings.ContainsAny(a, "np")
		}
		if short && strings.ContainsRune(flags, rune(a[len(a)-1])) || name == "node" && (a == "--eval" || a == "--print") {
			return args[i+1], loop, true
		}
	}
	return "", false, false
}
