package exec

import (
	"regexp"
	"strings"
	"sync"
)

// Code cannot be parsed for every language, so CheckCode looks for the
// calls that matter: a library routine that removes a folder tree, a file
// removal run over many names (mass.go), and a command given as literals
// to the routines that run one: a shell line (os.system("…"),
// execSync(`…`), subprocess.run("…", shell=True), qx{…}) or an argument
// vector (subprocess.run(["rm", "-rf", d]), spawnSync("rm", […]),
// exec.Command("rm", …)).
var (
	treeRemoval = compiled(`\b(?:rmtree|removedirs|remove_tree|rm_rf|rm_r|remove_dir|remove_dir_all|remove_entry|remove_entry_secure` +
		`|RemoveAll|rimraf|rimrafSync|deleteSync|deleteAsync|removeSync|emptyDir|emptyDirSync|deleteDirectory)\b` +
		`|\b(?:rmSync|rmdirSync|rm|rmdir|rmdir_p)\s*\((?:[^;()]|\([^;()]*\))*?\brecursive\b(?:\s*:\s*(\w+))?`)
	runner = compiled(`\b(?:system|popen[23]?|capture[23]e?|exec|execSync|execFile|execFileSync|spawn|spawnSync|run|call|Popen` +
		`|check_output|check_call|getoutput|getstatusoutput|Command|CommandContext|execv|execvp|execvpe|execl|execlp|spawnv|spawnvp` +
		`|shell_exec|passthru|proc_open)\s*\(`)
	quotedCommand = compiled(`(?:%x|\bqx)\s*(?:\(([^)]*)\)|\{([^}]*)\}|\[([^\]]*)\])`)
	// keyword is an argument that is not positional: shell=True, chdir: d.
	keyword = compiled(`^(?:[A-Za-z_]\w*\s*=[^=]|:?\w+\s*(?::|=>)\s)`)
)

// CheckCode checks a program for run_code or an interpreter's inline code
// (Python, Node, Perl, Ruby): removing a folder tree or many files asks,
// and a command passed as literals to system(), subprocess, execSync(),
// spawn() and the like is checked as one. What the code computes at run
// time is not seen: the sandbox is the defence there.
func CheckCode(code string) Finding {
	return checkCode(code, false)
}

// checkCode is CheckCode; loop says the interpreter runs the code once for
// every line it reads (perl -n).
func checkCode(code string, loop bool) Finding {
	c := &checker{depth: 1}
	for _, m := range treeRemoval().FindAllStringSubmatch(code, -1) {
		if m[1] != "false" { // rmSync(d, {recursive: false})
			c.flag(Ask, "", "removes many files: the code removes folder trees (%s)", strings.TrimSpace(strings.SplitN(m[0], "(", 2)[0]))
			break
		}
	}
	if r := manyRemoval(code, loop); r != "" {
		c.flag(Ask, "", "removes many files: the code runs %s over names it lists or loops over", r)
	}
	for _, ix := range runner().FindAllStringIndex(code, 64) {
		c.command(callArgs(code[ix[1]:]))
	}
	for _, m := range quotedCommand().FindAllStringSubmatch(code, 16) {
		c.line(m[1] + m[2] + m[3])
	}
	return c.worst
}

// command checks what a program passes to a routine that runs a command:
// a list, or several strings of which the first names a program, is an
// argument vector; one string is a shell line.
func (c *checker) command(args []string) {
	var pos []string
	for _, a := range args {
		if a = strings.TrimSpace(a); a != "" && !keyword().MatchString(a) && a[0] != '{' {
			pos = append(pos, a)
		}
	}
	if len(pos) == 0 {
		return
	}
	first, isString := stringLiteral(pos[0])
	switch {
	case pos[0][0] == '[':
		c.argv(listArgv(pos[0]))
	case isString && len(pos) > 1 && pos[1][0] == '[':
		c.argv(append([]string{first}, listArgv(pos[1])...))
	case isString && len(pos) > 1 && !strings.ContainsAny(first, " \t"):
		argv := []string{first}
		for _, p := range pos[1:] {
			argv = append(argv, element(p))
		}
		c.argv(argv)
	case isString:
		c.line(first)
	}
}

// line checks a string that may be a shell command line. Only a string
// that parses as one is: exec() also runs Python code and JavaScript
// regular expressions.
func (c *checker) line(s string) {
	if f, err := parseShell(s); err == nil {
		sc := &checker{depth: c.depth}
		sc.file(f)
		c.merge(sc.worst)
	}
}

// callArgs splits the arguments of a call at their top-level commas; s
// starts after the call's "(" and the arguments end at its ")".
func callArgs(s string) []string {
	var args []string
	depth, from := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\'', '`':
			i = quotedEnd(s, i) - 1
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth == 0 {
				return append(args, s[from:i])
			}
			depth--
		case ',':
			if depth == 0 {
				args = append(args, s[from:i])
				from = i + 1
			}
		}
	}
	return nil // not closed: not a call that can be read
}

// listArgv returns the elements of a list literal ["rm", "-rf", d]; what
// follows it (["rm"] + files) stands for many names.
func listArgv(s string) []string {
	elems := callArgs(s[1:])
	argv := make([]string, 0, len(elems)+1)
	for _, e := range elems {
		if e = strings.TrimSpace(e); e != "" {
			argv = append(argv, element(e))
		}
	}
	if end := strings.LastIndexByte(s, ']'); end >= 0 && strings.TrimSpace(s[end+1:]) != "" {
		argv = append(argv, manyNames)
	}
	return argv
}

// element returns the word one argument gives a command: a string
// literal's value, manyNames for a spread (*files, ...files, files...),
// "" for a single computed value.
func element(e string) string {
	if v, ok := stringLiteral(e); ok {
		return v
	}
	if strings.HasPrefix(e, "*") || strings.HasPrefix(e, "...") || strings.HasSuffix(e, "...") {
		return manyNames
	}
	return ""
}

// stringLiteral returns the value of a string literal ("…", '…', `…`,
// with Python's r/b/u/f prefixes) when s is one and nothing else.
func stringLiteral(s string) (string, bool) {
	s = strings.TrimSpace(s)
	p := 0
	for p < 2 && p < len(s) && strings.IndexByte("rRbBuUfF", s[p]) >= 0 {
		p++
	}
	if p >= len(s) || strings.IndexByte("\"'`", s[p]) < 0 || quotedEnd(s, p) != len(s) || len(s)-p < 2 {
		return "", false
	}
	q := 1
	if len(s)-p >= 6 && s[p+1] == s[p] && s[p+2] == s[p] {
		q = 3
	}
	return strings.NewReplacer(`\"`, `"`, `\'`, `'`, `\\`, `\`, `\n`, "\n").Replace(s[p+q : len(s)-q]), true
}

// quotedEnd returns the index just past the string literal that opens at
// s[i]: a string in single or double quotes ends at the line's end when
// not closed; one in tripled quotes or backquotes may span lines.
func quotedEnd(s string, i int) int {
	q := s[i]
	if q != '`' && strings.HasPrefix(s[i:], strings.Repeat(string(q), 3)) {
		if j := strings.Index(s[i+3:], s[i:i+3]); j >= 0 {
			return i + 3 + j + 3
		}
		return len(s)
	}
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case q:
			return j + 1
		case '\n':
			if q != '`' {
				return j
			}
		}
	}
	return len(s)
}

// blankStrings empties every string literal of code (keeping its quotes,
// as ""), so that what strings say is not taken for what code does.
func blankStrings(code string) string {
	var b strings.Builder
	for i := 0; i < len(code); {
		switch q := code[i]; q {
		case '"', '\'', '`':
			b.WriteByte(q)
			b.WriteByte(q)
			i = quotedEnd(code, i)
		default:
			b.WriteByte(q)
			i++
		}
	}
	return b.String()
}

// compiled returns a function that compiles expr on its first call: the
// checks' expressions would otherwise be compiled when every toolgate
// process starts, though most never check a command or code.
func compiled(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
