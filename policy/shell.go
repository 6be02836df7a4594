package policy

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// This file turns a shell command into the simple commands it would run, so
// that command rules can judge each one. It never runs anything.
//
// What counts as a part: every simple command anywhere in the text (after
// &&, ||, ;, |, &, newlines, inside subshells, blocks, if/while/for/case,
// function bodies, $(…), backticks, <(…) and >(…), here-documents), with
// wrappers seen through (env, nice, timeout, nohup, command, exec, time,
// stdbuf, setsid, ionice, builtin, xargs, watch), the strings given to
// sh/bash/zsh/dash/ksh -c and eval parsed as shell in turn, and find's
// -exec commands. sudo and doas stay visible: both the sudo part and the
// command it runs must be allowed.

// maxShellDepth bounds nested shell strings (bash -c 'bash -c …').
const maxShellDepth = 8

// word is one argument of a simple command.
type word struct {
	s   string // the literal value, quotes removed
	dyn bool   // only known when the shell runs (expansions, globs, braces)
}

// cmdPart is one simple command that a command line runs.
type cmdPart struct {
	words   []word   // the command name first
	extra   bool     // more arguments are appended when it runs (xargs, find -exec … +)
	assigns []string // environment variables set for it (X=1 cmd, env X=1 cmd, export X=1)
}

// name returns the command name ("" when dynamic).
func (c cmdPart) name() string {
	if len(c.words) == 0 || c.words[0].dyn {
		return ""
	}
	return c.words[0].s
}

func (c cmdPart) String() string {
	var b strings.Builder
	for i, w := range c.words {
		if i > 0 {
			b.WriteByte(' ')
		}
		if w.dyn {
			b.WriteString("<dynamic>")
		} else {
			b.WriteString(w.s)
		}
	}
	return b.String()
}

// access is how a path is used.
type access uint8

const (
	accRead access = 1 << iota
	accWrite
)

// pathUse is a path a call touches.
type pathUse struct {
	p      string
	acc    access
	weak   bool // guessed (a command's operand): deny and ask rules only
	origin string
}

// shellFacts is what analysing a command line found.
type shellFacts struct {
	parts  []cmdPart
	paths  []pathUse
	opaque []string // what cannot be known before the command runs
	err    error    // not valid shell: fail closed
}

func (f *shellFacts) dark(format string, args ...any) {
	if len(f.opaque) < 8 {
		f.opaque = append(f.opaque, fmt.Sprintf(format, args...))
	}
}

// analyzeShell parses src as bash and collects its parts.
func analyzeShell(src string) *shellFacts {
	f := &shellFacts{}
	f.shell(src, 0)
	return f
}

// analyzeArgv collects the parts of a command given as an argument vector
// (no shell involved).
func analyzeArgv(argv []string) *shellFacts {
	f := &shellFacts{}
	ws := make([]word, len(argv))
	for i, a := range argv {
		ws[i] = word{s: a}
	}
	if len(ws) == 0 {
		f.err = fmt.Errorf("argv is empty")
		return f
	}
	f.call(ws, nil, 0)
	return f
}

func (f *shellFacts) shell(src string, depth int) {
	if depth > maxShellDepth {
		f.dark("shell strings nested more than %d deep", maxShellDepth)
		return
	}
	if strings.IndexByte(src, 0) >= 0 {
		f.err = fmt.Errorf("the command contains a NUL byte")
		return
	}
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		if f.err == nil {
			f.err = err
		}
		return
	}
	syntax.Walk(file, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			for _, r := range n.Redirs {
				f.redirect(r)
			}
		case *syntax.CallExpr:
			var assigns []string
			for _, a := range n.Assigns {
				f.assign(a)
				if a.Name != nil {
					assigns = append(assigns, a.Name.Value)
				}
			}
			if len(n.Args) == 0 {
				if len(assigns) > 0 {
					f.parts = append(f.parts, cmdPart{assigns: assigns})
				}
				return true
			}
			ws := make([]word, len(n.Args))
			for i, a := range n.Args {
				ws[i] = literal(a)
			}
			f.call(ws, assigns, depth)
		case *syntax.DeclClause:
			ws := []word{{s: n.Variant.Value}}
			var assigns []string
			for _, a := range n.Args {
				f.assign(a)
				switch {
				case a.Name != nil:
					v := a.Name.Value
					assigns = append(assigns, v)
					if a.Value != nil {
						w := literal(a.Value)
						w.s = v + "=" + w.s
						ws = append(ws, w)
					} else {
						ws = append(ws, word{s: v})
					}
				case a.Value != nil:
					ws = append(ws, literal(a.Value))
				}
			}
			p := cmdPart{words: ws}
			if n.Variant.Value == "export" || n.Variant.Value == "declare" || n.Variant.Value == "typeset" {
				p.assigns = assigns
			}
			f.parts = append(f.parts, p)
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.CStyleLoop:
			if !arithmeticLiteral(n) {
				f.dark("arithmetic on variables (bash evaluates their values as code)")
			}
		case *syntax.ParamExp:
			if n.Excl || n.Index != nil && !arithmeticLiteral(n.Index) || n.Slice != nil && !arithmeticLiteral(n.Slice.Offset) ||
				n.Exp != nil && strings.HasPrefix(n.Exp.Op.String(), "@") {
				f.dark("a parameter expansion that can run code (${!x}, ${x[i]}, ${x@P})")
			}
		case *syntax.TestClause:
			syntax.Walk(n.X, func(m syntax.Node) bool {
				switch t := m.(type) {
				case *syntax.BinaryTest:
					switch t.Op {
					case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
						if !numericWord(t.X) || !numericWord(t.Y) {
							f.dark("[[ … -eq … ]] on variables (bash evaluates their values as code)")
						}
					}
				case *syntax.UnaryTest:
					if t.Op == syntax.TsVarSet || t.Op == syntax.TsRefVar {
						f.dark("[[ -v … ]] (bash evaluates subscripts as code)")
					}
				}
				return true
			})
		case *syntax.CoprocClause:
			// the statement inside is walked like any other
		}
		return true
	})
}

func (f *shellFacts) assign(a *syntax.Assign) {
	if a.Index != nil && !arithmeticLiteral(a.Index) {
		f.dark("an array subscript on variables")
	}
}

// redirect records the file a redirection reads or writes.
func (f *shellFacts) redirect(r *syntax.Redirect) {
	var acc access
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
		acc = accWrite
	case syntax.RdrIn:
		acc = accRead
	case syntax.RdrInOut:
		acc = accRead | accWrite
	case syntax.DplIn, syntax.DplOut:
		w := literal(r.Word)
		if !w.dyn && (w.s == "-" || isDigits(strings.TrimSuffix(w.s, "-"))) {
			return // duplicating or closing a descriptor
		}
		acc = accWrite
		if r.Op == syntax.DplIn {
			acc = accRead
		}
	default:
		return // here-documents and here-strings name no file
	}
	if r.Word == nil {
		return
	}
	w := literal(r.Word)
	if w.dyn {
		f.dark("a redirection to a file named at run time")
		return
	}
	f.paths = append(f.paths, pathUse{p: w.s, acc: acc, origin: "redirection"})
}

// call records a simple command, seeing through wrappers.
func (f *shellFacts) call(ws []word, assigns []string, depth int) {
	extra := false
	for guard := 0; len(ws) > 0 && guard < 64; guard++ {
		if ws[0].dyn {
			f.dark("a command whose name is only known when it runs")
			f.parts = append(f.parts, cmdPart{words: ws, extra: extra, assigns: assigns})
			return
		}
		name := path.Base(ws[0].s)
		switch name {
		case "env":
			rest, envAssigns, split, ok := skipEnv(ws[1:])
			assigns = append(assigns, envAssigns...)
			if !ok {
				f.dark("env options that are not understood")
				f.parts = append(f.parts, cmdPart{words: ws, extra: extra, assigns: assigns})
				return
			}
			if split != nil {
				if split.dyn {
					f.dark("env -S with a string known only at run time")
					return
				}
				sub := &shellFacts{}
				sub.shell(split.s, depth+1)
				f.merge(sub, extra)
				return
			}
			if len(rest) == 0 {
				f.parts = append(f.parts, cmdPart{words: ws[:1], extra: extra, assigns: assigns})
				return
			}
			ws = rest
			continue
		case "nice", "timeout", "nohup", "time", "stdbuf", "setsid", "ionice", "builtin", "exec", "command", "xargs", "doas", "sudo":
			rest, ok := skipWrapper(name, ws[1:])
			if name == "command" && commandLookupOnly(ws[1:]) {
				f.parts = append(f.parts, cmdPart{words: ws, extra: extra, assigns: assigns})
				return
			}
			if name == "sudo" || name == "doas" {
				// the privilege itself must be allowed too
				f.parts = append(f.parts, cmdPart{words: ws, extra: extra, assigns: assigns})
			}
			if !ok {
				f.dark("%s options that are not understood", name)
				if name != "sudo" && name != "doas" {
					f.parts = append(f.parts, cmdPart{words: ws, extra: extra, assigns: assigns})
				}
				return
			}
			if len(rest) == 0 {
				switch name {
				case "xargs":
					rest = []word{{s: "echo"}}
				case "sudo", "doas", "exec":
					return
				default:
					f.parts = append(f.parts, cmdPart{words: ws, extra: extra, assigns: assigns})
					return
				}
			}
			if name == "xargs" {
				extra = true
			}
			ws = rest
			continue
		case "watch":
			rest, ok := skipWrapper(name, ws[1:])
			if !ok || len(rest) == 0 {
				f.dark("watch options that are not understood")
				f.parts = append(f.parts, cmdPart{words: ws, extra: extra, assigns: assigns})
				return
			}
			f.nested(joinWords(rest), depth, extra)
			return
		case "eval":
			f.nested(joinWords(ws[1:]), depth, extra)
			return
		case "sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "rbash", "busybox":
			if name == "busybox" {
				if len(ws) > 1 && !ws[1].dyn && (ws[1].s == "sh" || ws[1].s == "ash" || ws[1].s == "bash") {
					ws = ws[1:]
				} else {
					break
				}
			}
			if script, found := shellDashC(ws[1:]); found {
				if script == nil {
					f.dark("%s -c without a command string", name)
					f.parts = append(f.parts, cmdPart{words: ws, extra: extra, assigns: assigns})
					return
				}
				if len(assigns) > 0 {
					f.parts = append(f.parts, cmdPart{assigns: assigns})
				}
				f.nested(*script, depth, extra)
				return
			}
		case "find":
			f.findExec(ws, depth)
		}
		f.parts = append(f.parts, cmdPart{words: ws, extra: extra, assigns: assigns})
		f.operands(ws)
		return
	}
}

// nested analyses a shell string found inside a command (bash -c, eval, watch).
func (f *shellFacts) nested(w word, depth int, extra bool) {
	if w.dyn {
		f.dark("a shell string known only at run time")
		return
	}
	sub := &shellFacts{}
	sub.shell(w.s, depth+1)
	f.merge(sub, extra)
}

func (f *shellFacts) merge(sub *shellFacts, extra bool) {
	for _, p := range sub.parts {
		p.extra = p.extra || extra
		f.parts = append(f.parts, p)
	}
	f.paths = append(f.paths, sub.paths...)
	f.opaque = append(f.opaque, sub.opaque...)
	if f.err == nil && sub.err != nil {
		f.err = fmt.Errorf("inside a nested shell string: %w", sub.err)
	}
}

// operands records a command's arguments that may name files, for deny and
// ask path rules (a guess: "cp x .git/hooks/pre-commit" writes a hook).
func (f *shellFacts) operands(ws []word) {
	switch path.Base(ws[0].s) {
	case "echo", "printf", "true", "false", ":":
		return
	}
	for _, w := range ws[1:] {
		if w.dyn || w.s == "" || strings.ContainsAny(w.s, " \t\n") {
			continue
		}
		s := w.s
		if strings.HasPrefix(s, "-") {
			i := strings.IndexByte(s, '=')
			if i < 0 {
				continue
			}
			s = s[i+1:]
		}
		if s != "" {
			f.paths = append(f.paths, pathUse{p: s, acc: accRead | accWrite, weak: true, origin: "argument of " + ws[0].s})
		}
	}
}

// findExec records the commands of find's -exec, -execdir, -ok and -okdir.
func (f *shellFacts) findExec(ws []word, depth int) {
	for i := 1; i < len(ws); i++ {
		switch ws[i].s {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		j := i + 1
		for j < len(ws) && !(ws[j].s == ";" || ws[j].s == "+") {
			j++
		}
		if j > i+1 {
			sub := &shellFacts{}
			sub.call(ws[i+1:j], nil, depth+1)
			f.merge(sub, j < len(ws) && ws[j].s == "+")
		}
		i = j
	}
}

func joinWords(ws []word) word {
	var parts []string
	for _, w := range ws {
		if w.dyn {
			return word{dyn: true}
		}
		parts = append(parts, w.s)
	}
	return word{s: strings.Join(parts, " ")}
}

// dangerousEnv lists variables through which an assignment alone makes a
// program run other code; a command setting one is never allowed by an
// allow rule.
var dangerousEnv = []string{
	"LD_", "DYLD_", "PATH", "BASH_ENV", "ENV", "IFS", "PS4", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS",
	"BASH_FUNC_", "NODE_OPTIONS", "NODE_PATH", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONINSPECT",
	"PERL5LIB", "PERL5OPT", "PERLLIB", "RUBYOPT", "RUBYLIB", "GIT_", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
	"JDK_JAVA_OPTIONS", "GCONV_PATH", "LOCPATH", "EDITOR", "VISUAL", "PAGER", "LESSOPEN", "LESSCLOSE",
	"SSH_ASKPASS", "SUDO_ASKPASS", "NPM_CONFIG_", "npm_config_", "CARGO_", "RUSTC", "RUSTC_WRAPPER", "CC", "CXX",
	"MAKEFLAGS", "GOFLAGS", "TERMINFO", "ZDOTDIR", "HOME", "XDG_CONFIG_HOME", "BROWSER", "GNUPGHOME",
}

func isDangerousEnv(name string) bool {
	for _, d := range dangerousEnv {
		if name == d || strings.HasSuffix(d, "_") && strings.HasPrefix(name, d) {
			return true
		}
	}
	return false
}

// skipEnv skips env's options and assignments. split is the argument of
// -S/--split-string, which env parses as a command line.
func skipEnv(ws []word) (rest []word, assigns []string, split *word, ok bool) {
	i := 0
	for i < len(ws) {
		w := ws[i]
		if w.dyn {
			return nil, assigns, nil, false
		}
		switch {
		case w.s == "--":
			i++
			goto names
		case w.s == "-" || w.s == "-i" || w.s == "--ignore-environment" || w.s == "-0" || w.s == "--null" || w.s == "-v" || w.s == "--debug":
			i++
		case w.s == "-u" || w.s == "--unset" || w.s == "-C" || w.s == "--chdir":
			i += 2
		case strings.HasPrefix(w.s, "--unset=") || strings.HasPrefix(w.s, "--chdir=") || strings.HasPrefix(w.s, "-u") && len(w.s) > 2 || strings.HasPrefix(w.s, "-C") && len(w.s) > 2:
			i++
		case w.s == "-S" || w.s == "--split-string":
			if i+1 >= len(ws) {
				return nil, assigns, nil, false
			}
			s := ws[i+1]
			if !s.dyn {
				rest := joinWords(ws[i+2:])
				if rest.dyn {
					s.dyn = true
				} else if rest.s != "" {
					s.s += " " + rest.s
				}
			}
			return nil, assigns, &s, true
		case strings.HasPrefix(w.s, "-S") || strings.HasPrefix(w.s, "--split-string="):
			s := word{s: strings.TrimPrefix(strings.TrimPrefix(w.s, "--split-string="), "-S")}
			rest := joinWords(ws[i+1:])
			if rest.dyn {
				s.dyn = true
			} else if rest.s != "" {
				s.s += " " + rest.s
			}
			return nil, assigns, &s, true
		case strings.HasPrefix(w.s, "-"):
			return nil, assigns, nil, false
		default:
			goto names
		}
	}
names:
	for i < len(ws) {
		w := ws[i]
		eq := strings.IndexByte(w.s, '=')
		if w.dyn || eq <= 0 {
			break
		}
		assigns = append(assigns, w.s[:eq])
		i++
	}
	if i > len(ws) {
		i = len(ws)
	}
	return ws[i:], assigns, nil, true
}

// wrapperArgs lists, for each wrapper, the options that take a value (short
// options may also carry it attached, "-n5"), and whether a positional
// argument comes before the command (timeout's duration).
var wrapperArgs = map[string]struct {
	short      string // option letters that take a value
	long       []string
	positional int
}{
	"nice":    {short: "n", long: []string{"--adjustment"}},
	"timeout": {short: "sk", long: []string{"--signal", "--kill-after"}, positional: 1},
	"nohup":   {},
	"time":    {short: "fo", long: []string{"--format", "--output"}},
	"stdbuf":  {short: "ioe", long: []string{"--input", "--output", "--error"}},
	"setsid":  {},
	"ionice":  {short: "cnp", long: []string{"--class", "--classdata", "--pid"}},
	"builtin": {},
	"exec":    {short: "a"},
	"command": {},
	"xargs":   {short: "adEeIiLlnPs", long: []string{"--arg-file", "--delimiter", "--eof", "--replace", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}},
	"sudo":    {short: "CDghprtUTRu", long: []string{"--close-from", "--chdir", "--group", "--host", "--prompt", "--role", "--type", "--other-user", "--command-timeout", "--user", "--chroot"}},
	"doas":    {short: "uC"},
	"watch":   {short: "nqd", long: []string{"--interval", "--differences"}},
}

// skipWrapper skips a wrapper's options; ok is false when an option is not
// understood well enough to find the command.
func skipWrapper(name string, ws []word) ([]word, bool) {
	spec := wrapperArgs[name]
	i := 0
	for i < len(ws) {
		w := ws[i]
		if w.dyn {
			return nil, false
		}
		s := w.s
		if s == "--" {
			i++
			break
		}
		if !strings.HasPrefix(s, "-") || s == "-" {
			break
		}
		if name == "nice" && len(s) > 1 && isDigits(s[1:]) { // nice -10 cmd
			i++
			continue
		}
		if strings.HasPrefix(s, "--") {
			takes := false
			for _, l := range spec.long {
				if s == l {
					takes = true
				}
			}
			if takes {
				i += 2
			} else {
				i++
			}
			continue
		}
		// a cluster of short options: the first that takes a value ends it
		i++
		for k := 1; k < len(s); k++ {
			if strings.IndexByte(spec.short, s[k]) >= 0 {
				if k == len(s)-1 && !(name == "xargs" && (s[k] == 'i' || s[k] == 'e' || s[k] == 'l')) {
					i++ // the value is the next word
				}
				break
			}
		}
	}
	for n := 0; n < spec.positional && i < len(ws); n++ {
		i++
	}
	if i > len(ws) {
		return nil, true
	}
	return ws[i:], true
}

// commandLookupOnly reports "command -v x" and "command -V x", which only
// look a name up.
func commandLookupOnly(ws []word) bool {
	for _, w := range ws {
		if !strings.HasPrefix(w.s, "-") || w.s == "--" {
			return false
		}
		if strings.ContainsAny(w.s, "vV") {
			return true
		}
	}
	return false
}

// shellDashC finds the command string of "sh -c STRING" (options may be
// clustered: -ec, -lc). found is false when the shell runs no -c string.
func shellDashC(ws []word) (script *word, found bool) {
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		if w.dyn {
			return nil, true // cannot tell: treat as a string we cannot see
		}
		if w.s == "--" || !strings.HasPrefix(w.s, "-") && !strings.HasPrefix(w.s, "+") {
			return nil, false
		}
		if strings.HasPrefix(w.s, "--") {
			continue
		}
		if (w.s[0] == '-' || w.s[0] == '+') && strings.ContainsAny(w.s[1:], "oO") {
			i++ // -o option / +O shopt take a value
			continue
		}
		if w.s[0] == '-' && strings.IndexByte(w.s, 'c') > 0 {
			for j := i + 1; j < len(ws); j++ {
				if ws[j].dyn || !strings.HasPrefix(ws[j].s, "-") {
					s := ws[j]
					return &s, true
				}
			}
			return nil, true
		}
	}
	return nil, false
}

// literal returns a word's value when the shell would pass it on unchanged,
// and marks it dynamic otherwise (expansions, substitutions, globs, brace
// expansion, $'…').
func literal(w *syntax.Word) word { return literalWord(w, false) }

// literalPattern is literal for the words of a rule's pattern, where * and ?
// are kept for the rule's own matching.
func literalPattern(w *syntax.Word) word { return literalWord(w, true) }

func literalWord(w *syntax.Word, globs bool) word {
	if w == nil {
		return word{dyn: true}
	}
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v := p.Value
			if !globs && strings.ContainsAny(v, "*?[{") && unquotedMeta(v) {
				return word{dyn: true}
			}
			b.WriteString(unescapeLit(v))
		case *syntax.SglQuoted:
			if p.Dollar && strings.IndexByte(p.Value, '\\') >= 0 {
				return word{dyn: true}
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return word{dyn: true}
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return word{dyn: true}
				}
				b.WriteString(unescapeDbl(l.Value))
			}
		default:
			return word{dyn: true}
		}
	}
	return word{s: b.String()}
}

// unquotedMeta reports whether v has a glob or brace character that is not
// escaped with a backslash.
func unquotedMeta(v string) bool {
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '*', '?', '[':
			return true
		case '{':
			if strings.ContainsAny(v[i:], ",.") && strings.IndexByte(v[i:], '}') > 0 {
				return true
			}
		}
	}
	return false
}

func unescapeLit(v string) string {
	if strings.IndexByte(v, '\\') < 0 {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
			if v[i] == '\n' {
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

func unescapeDbl(v string) string {
	if strings.IndexByte(v, '\\') < 0 {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("$`\"\\\n", v[i+1]) >= 0 {
			i++
			if v[i] == '\n' {
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// arithmeticLiteral reports whether an arithmetic expression uses only
// number literals (bash evaluates a variable's value as an expression, which
// can run code through array subscripts).
func arithmeticLiteral(n syntax.Node) bool {
	if n == nil {
		return true
	}
	ok := true
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.ParamExp, *syntax.CmdSubst:
			ok = false
		case *syntax.Lit:
			if !isNumber(m.Value) {
				ok = false
			}
		}
		return ok
	})
	return ok
}

func numericWord(e syntax.TestExpr) bool {
	w, ok := e.(*syntax.Word)
	if !ok {
		return false
	}
	l := literal(w)
	return !l.dyn && isNumber(l.s)
}

func isNumber(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		s = s[2:]
		if s == "" {
			return false
		}
		for _, c := range s {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
		return true
	}
	return isDigits(s)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
