package policy

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// cmdPattern is the specifier of a command rule, e.g. "npm run test:*".
//
// The pattern is split into words the way the shell would (quotes group
// words; no expansion happens). A trailing ":*" (on the last word, or as a
// word of its own) or a trailing "*" word makes it a prefix: the command's
// words must begin with the pattern's words, whole words only, and may go
// on with any words ("npm run test:*" matches "npm run test" and "npm run
// test --watch", not "npm run test:unit" nor "npm run tests"). Without it the
// command must have exactly the pattern's words. Within a word, * matches
// any run of characters and ? one character ("git log --since=*").
//
// Options are compared as a set, not in order: clusters of single-letter
// options are split ("-rf" is "-r" "-f"), a few long spellings of dangerous
// options are folded onto their short form (rm --recursive is -r, --force
// is -f), so "rm -rf", "rm -fr" and "rm -r -f" are the same command.
//
// The command name is compared exactly for allow rules ("./npm" is not
// "npm"); deny and ask rules also match on the name's last path component
// ("/bin/rm" is "rm"). Deny and ask rules are generous in a second way: the
// pattern's options must all be present and its other words must appear in
// order but not necessarily adjacent, so "rm -rf /" also catches
// "rm -rf /tmp/x / --no-preserve-root".
type cmdPattern struct {
	name   string
	flags  []string
	args   []string
	prefix bool
}

func parseCmdPattern(spec string) (*cmdPattern, error) {
	s := strings.TrimSpace(spec)
	prefix := false
	if strings.HasSuffix(s, ":*") {
		s, prefix = strings.TrimSpace(strings.TrimSuffix(s, ":*")), true
	}
	if s == "" {
		return nil, fmt.Errorf("the command pattern is empty (for every command, write the tool alone: \"Bash\")")
	}
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(s), "")
	if err != nil {
		return nil, fmt.Errorf("the command pattern is not shell words: %v", err)
	}
	if len(file.Stmts) != 1 {
		return nil, fmt.Errorf("a command pattern names one simple command; write one rule per command")
	}
	st := file.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(st.Redirs) > 0 || st.Negated || st.Background || len(call.Args) == 0 {
		return nil, fmt.Errorf("a command pattern names one simple command without operators, redirections or assignments")
	}
	var ws []string
	for _, a := range call.Args {
		w := literalPattern(a)
		if w.dyn {
			return nil, fmt.Errorf("a command pattern cannot contain expansions ($…, `…`)")
		}
		ws = append(ws, w.s)
	}
	if n := len(ws); n > 1 && ws[n-1] == "*" {
		ws, prefix = ws[:n-1], true
	}
	if strings.ContainsAny(ws[0], "*?") {
		return nil, fmt.Errorf("the command name %q cannot be a wildcard", ws[0])
	}
	p := &cmdPattern{name: ws[0], prefix: prefix}
	p.flags, p.args = splitFlags(ws[0], ws[1:])
	return p, nil
}

// foldFlags maps long spellings onto the short option they mean, per
// command, so a deny rule cannot be dodged by spelling it differently.
var foldFlags = map[string]map[string]string{
	"rm":    {"--recursive": "-r", "-R": "-r", "--force": "-f", "--dir": "-d"},
	"cp":    {"--recursive": "-r", "-R": "-r", "--force": "-f"},
	"chmod": {"--recursive": "-R"},
	"chown": {"--recursive": "-R"},
	"chgrp": {"--recursive": "-R"},
	"git":   {"--force": "-f", "--hard": "--hard"},
	"mv":    {"--force": "-f"},
	"ln":    {"--force": "-f", "--symbolic": "-s"},
}

// splitFlags separates options from other words. After "--" every word is
// an operand.
func splitFlags(name string, ws []string) (flags, args []string) {
	fold := foldFlags[path.Base(name)]
	operands := false
	for _, w := range ws {
		switch {
		case operands || w == "-" || !strings.HasPrefix(w, "-"):
			args = append(args, w)
		case w == "--":
			operands = true
		case !strings.HasPrefix(w, "--") && isLetters(w[1:]) && len(w) > 2:
			for _, c := range w[1:] {
				flags = append(flags, foldFlag(fold, "-"+string(c)))
			}
		default:
			flags = append(flags, foldFlag(fold, w))
		}
	}
	return flags, args
}

func foldFlag(fold map[string]string, f string) string {
	if v, ok := fold[f]; ok {
		return v
	}
	return f
}

func isLetters(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return s != ""
}

// partWords splits a part's words (after the name) into options and
// operands; dynamic words go to dyn.
func partWords(p cmdPart) (flags, args []word) {
	fold := foldFlags[path.Base(p.name())]
	operands := false
	for _, w := range p.words[1:] {
		switch {
		case w.dyn || operands || w.s == "-" || !strings.HasPrefix(w.s, "-"):
			args = append(args, w)
		case w.s == "--":
			operands = true
		case !strings.HasPrefix(w.s, "--") && isLetters(w.s[1:]) && len(w.s) > 2:
			for _, c := range w.s[1:] {
				flags = append(flags, word{s: foldFlag(fold, "-"+string(c))})
			}
		default:
			flags = append(flags, word{s: foldFlag(fold, w.s)})
		}
	}
	return flags, args
}

// allows reports whether the part is exactly what the pattern allows.
func (c *cmdPattern) allows(p cmdPart) bool {
	if p.name() != c.name || len(p.words) == 0 {
		return false
	}
	for _, a := range p.assigns {
		if isDangerousEnv(a) {
			return false
		}
	}
	if p.extra && !c.prefix {
		return false
	}
	flags, args := partWords(p)
	for _, f := range c.flags {
		if !hasWord(flags, f) {
			return false
		}
	}
	if !c.prefix {
		if !sameSet(flags, c.flags) || len(args) != len(c.args) {
			return false
		}
	}
	if len(args) < len(c.args) {
		return false
	}
	for i, a := range c.args {
		if args[i].dyn || !wildcard(a, args[i].s) {
			return false
		}
	}
	return true
}

// catches reports whether the part could be what the pattern denies (deny
// and ask rules): name or base name, every pattern option present, the
// pattern's operands in order. A dynamic word may be anything.
func (c *cmdPattern) catches(p cmdPart) bool {
	if len(p.words) == 0 {
		return false
	}
	if p.words[0].dyn {
		return true
	}
	n := p.name()
	if n != c.name && path.Base(n) != path.Base(c.name) {
		return false
	}
	flags, args := partWords(p)
	anyDyn := p.extra
	for _, a := range args {
		if a.dyn {
			anyDyn = true
		}
	}
	for _, f := range c.flags {
		if !hasWord(flags, f) && !anyDyn {
			return false
		}
	}
	i := 0
	for _, a := range args {
		if i == len(c.args) {
			break
		}
		if a.dyn || wildcard(c.args[i], a.s) || sameCleanPath(c.args[i], a.s) {
			i++
		}
	}
	return i == len(c.args) || p.extra
}

func hasWord(ws []word, s string) bool {
	for _, w := range ws {
		if !w.dyn && w.s == s {
			return true
		}
	}
	return false
}

func sameSet(ws []word, want []string) bool {
	have := map[string]bool{}
	for _, w := range ws {
		have[w.s] = true
	}
	wantSet := map[string]bool{}
	for _, s := range want {
		wantSet[s] = true
	}
	if len(have) != len(wantSet) {
		return false
	}
	for s := range wantSet {
		if !have[s] {
			return false
		}
	}
	return true
}

func sameCleanPath(a, b string) bool {
	if !strings.Contains(a, "/") || !strings.Contains(b, "/") {
		return false
	}
	return path.Clean(a) == path.Clean(b)
}

// wildcard matches s against a pattern where * is any run of characters
// and ? is one character (no other metacharacters).
func wildcard(pat, s string) bool {
	if !strings.ContainsAny(pat, "*?") {
		return pat == s
	}
	// iterative matcher with backtracking on the last star
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(pat) && (pat[pi] == '?' || pat[pi] == s[si]):
			pi++
			si++
		case pi < len(pat) && pat[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(pat) && pat[pi] == '*' {
		pi++
	}
	return pi == len(pat)
}
