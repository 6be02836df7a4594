package exec

import (
	"path"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Mass deletion asks first: a command or program that removes, empties or
// moves away many files at once, where one slip loses a project. The
// class is recognised by its shape, not by a list of spellings:
//
//   - a removal fanned out over names found when it runs: find -delete,
//     find -exec rm, xargs rm, parallel rm, a shell loop running rm, rm of
//     a glob, of a brace expansion of many names or of $(…);
//   - a removal of a whole folder tree: rm -r DIR, git rm -r, git clean -f,
//     rsync --delete, rclone sync, mv of a folder or of many files out of
//     the workspace, git checkout/restore of a whole tree, an archiver
//     deleting what it archives (tar --remove-files, zip -m, 7z -sdel);
//   - emptying many files: a redirection onto the name a loop, find -exec
//     or xargs runs for (for f in *; do : > "$f"; done), tee, truncate,
//     cp /dev/null or dd of= over many names, sed -i d over a glob;
//   - the same in interpreter code: a folder-tree routine (rmtree,
//     rmSync recursive, rm_rf, RemoveAll…), or a file removal with a
//     computed argument in code that lists folders or loops
//     (os.remove over os.listdir, unlinkSync in readdirSync().forEach…).
//
// A dry run (git clean -n, git rm -n or --cached, git restore --staged,
// rsync -n) does not ask, when the command line parses as the program
// reads it (options.go).
//
// One named file, or a few, does not ask: rm notes.txt, rm a b,
// os.remove("one.txt"); nor does rm -r or mv of a folder a build or a
// package manager makes again, named literally (rm -rf node_modules,
// rm -rf packages/web/dist: see regenerable).
//
// An in-place edit (sed -i, perl -pi) rewrites files and does not ask,
// over a glob too: telling an edit from one that empties its files would
// be guessing at a program, and the files stay. The one exception is a
// sed script that deletes every line (sed -i d *).

// regenerable are the folders a build, a test run or a package manager
// makes again from the sources, so that removing one loses nothing. Not
// bin (some projects keep scripts there), vendor (often committed),
// .terraform (state) nor tmp.
var regenerable = map[string]bool{
	"node_modules": true, "bower_components": true, ".pnpm-store": true,
	"dist": true, "build": true, "out": true, "target": true, "obj": true, "_build": true, ".build": true,
	"coverage": true, "htmlcov": true, ".nyc_output": true, ".cache": true, ".parcel-cache": true,
	".next": true, ".nuxt": true, ".svelte-kit": true, ".turbo": true, ".angular": true, ".docusaurus": true,
	".venv": true, "venv": true, "__pycache__": true, ".pytest_cache": true, ".mypy_cache": true,
	".ruff_cache": true, ".tox": true, ".nox": true, ".hypothesis": true, ".eggs": true,
	".gradle": true, ".dart_tool": true, ".stack-work": true, "zig-cache": true, ".zig-cache": true, "zig-out": true,
}

// isRegenerable reports whether a removal's operand names a regenerable
// folder literally: a relative path of plain names (letters, digits,
// . _ - + @; no glob, brace, variable, ~ or ..) whose last element is on
// the list, without a trailing slash (through a symbolic link, rm -r
// link/ may remove what it points to).
func isRegenerable(t string) bool {
	parts := strings.Split(t, "/")
	for _, p := range parts {
		if p == "" || p == ".." || strings.TrimLeft(p, plainNameChars) != "" {
			return false
		}
	}
	return regenerable[parts[len(parts)-1]]
}

const plainNameChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+@"

// manyNames stands, in the words of a command, for a word the shell may
// turn into several names when the command runs: $(…), an unquoted
// variable, "${list[@]}".
const manyNames = "$(…)"

// braceMany is how many names a brace expansion may make before it counts
// as many: rm {a,b}.txt is two named files, rm f{1..100} is not. Counts
// stop at veryMany.
const (
	braceMany = 4
	veryMany  = 1 << 20
)

// destroyers are the programs that remove, shred or empty the files named
// on their command line (rm has its own rule), and what doing it to many
// files is called.
var destroyers = map[string]string{
	"unlink": "removes many files", "rmdir": "removes many files", "srm": "removes many files",
	"wipe": "removes many files", "trash": "removes many files", "trash-put": "removes many files",
	"shred": "destroys many files", "truncate": "empties many files",
}

// valueOptions are the options of the destroyers that take the next word
// as their value (not an operand).
var valueOptions = map[string]map[string]bool{
	"truncate": {"-s": true, "--size": true, "-r": true, "--reference": true},
	"shred":    {"-n": true, "--iterations": true, "-s": true, "--size": true, "--random-source": true},
}

// operands returns the arguments of a command that are not options (nor
// their values); everything after -- is an operand.
func operands(args []string, withValue map[string]bool) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return append(out, args[i+1:]...)
		case withValue[a]:
			i++
		case len(a) > 1 && a[0] == '-':
		default:
			out = append(out, a)
		}
	}
	return out
}

// many flags the operands of a command that destroys what it is given when
// one of them stands for many names: a glob, a brace expansion of many
// names, a word computed when the command runs.
func (c *checker) many(shown, class, name string, operands []string) {
	for _, t := range operands {
		switch n := braceNames(t); {
		case t == manyNames:
			c.flag(Ask, shown, "%s: %s of names computed when the command runs", class, name)
		case isGlob(t):
			c.flag(Ask, shown, "%s: %s over a glob (%s)", class, name, t)
		case n > braceMany:
			c.flag(Ask, shown, "%s: %s over a brace expansion of %d names (%s)", class, name, n, t)
		}
	}
}

// isGlob reports whether a word holds a glob pattern (quoted or not: a file
// named *.log is rarer than a slip, and git and find expand quoted ones).
func isGlob(t string) bool { return strings.ContainsAny(t, "*?[") }

// braceNames counts the names bash's brace expansion makes of a word (1
// when it has none), without making them: {a,b}c{1..3} is 6. A word of
// more than 64 braces counts as very many, unexamined.
func braceNames(s string) int {
	if strings.Count(s, "{") > 64 {
		return veryMany
	}
	n := 1
	for i := 0; i < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		end := closingBrace(s, i)
		if end < 0 {
			break
		}
		inner := s[i+1 : end]
		count := 1
		if alts := splitTop(inner); len(alts) > 1 {
			count = 0
			for _, a := range alts {
				count = min(count+braceNames(a), veryMany)
			}
		} else if r := rangeNames(inner); r > 0 {
			count = r
		}
		n = min(n*count, veryMany)
		i = end
	}
	return n
}

func closingBrace(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// splitTop splits the inside of a brace pair at its top-level commas.
func splitTop(s string) []string {
	var parts []string
	depth, from := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[from:i])
				from = i + 1
			}
		}
	}
	return append(parts, s[from:])
}

// rangeNames counts the names of a brace range x..y[..step] (0 when s is
// not one); a range too large to count is counted as very many.
func rangeNames(s string) int {
	parts := strings.Split(s, "..")
	if len(parts) < 2 || len(parts) > 3 {
		return 0
	}
	step := 1
	if len(parts) == 3 {
		v, err := strconv.Atoi(parts[2])
		if err != nil {
			return 0
		}
		step = max(abs(v), 1)
	}
	if len(parts[0]) == 1 && len(parts[1]) == 1 && !isDigit(parts[0][0]) && !isDigit(parts[1][0]) {
		return abs(int(parts[1][0])-int(parts[0][0]))/step + 1
	}
	x, err1 := strconv.ParseInt(parts[0], 10, 32)
	y, err2 := strconv.ParseInt(parts[1], 10, 32)
	switch {
	case err1 == nil && err2 == nil:
		return abs(int(y-x))/step + 1
	case isNumber(parts[0]) && isNumber(parts[1]):
		return veryMany
	}
	return 0
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func isNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// splits reports whether the shell may make several names of a word: it
// holds a command substitution, an unquoted variable, "$@" or
// "${list[@]}", an extended glob, or an unquoted glob around an expansion.
func splits(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.CmdSubst, *syntax.ParamExp, *syntax.ExtGlob, *syntax.ProcSubst:
			return true
		case *syntax.Lit:
			if isGlob(x.Value) {
				return true
			}
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				switch y := q.(type) {
				case *syntax.CmdSubst:
					return true
				case *syntax.ParamExp:
					if y.Param != nil && (y.Param.Value == "@" || y.Param.Value == "*") || y.Index != nil && strings.ContainsAny(printNode(y.Index), "@*") {
						return true
					}
				}
			}
		}
	}
	return false
}

// find flags find -delete and find -exec/-execdir/-ok/-okdir running a
// removal: with or without a filter, it removes every file it finds.
func (c *checker) find(shown string, args []string) {
	for k := 0; k < len(args); k++ {
		switch a := args[k]; a {
		case "-delete":
			for _, s := range findStarts(args) {
				if isSystemPath(s) {
					c.flag(Deny, shown, "removes %s, a system or home folder, recursively", s)
				}
			}
			c.flag(Ask, shown, "removes many files: find -delete removes every file it finds")
		case "-exec", "-execdir", "-ok", "-okdir":
			j := k + 1
			for j < len(args) && args[j] != ";" && args[j] != "+" {
				j++
			}
			if r := remover(args[k+1:j], c.depth); r != "" {
				c.flag(Ask, shown, "removes many files: find %s runs %s on every file it finds", a, r)
			}
			k = j
		}
	}
}

// findStarts returns the folders find starts from (. when none is given).
func findStarts(args []string) []string {
	i := 0
	for ; i < len(args) && (args[i] == "-H" || args[i] == "-L" || args[i] == "-P" || args[i] == "-D" || strings.HasPrefix(args[i], "-O")); i++ {
		if args[i] == "-D" {
			i++ // its debug options
		}
	}
	var starts []string
	for ; i < len(args) && !strings.HasPrefix(args[i], "-") && args[i] != "(" && args[i] != "!"; i++ {
		starts = append(starts, args[i])
	}
	if len(starts) == 0 {
		return []string{"."}
	}
	return starts
}

// fd flags fd -x/-X running a removal on every file it finds.
func (c *checker) fd(shown string, args []string) {
	for k, a := range args {
		if a == "-x" || a == "--exec" || a == "-X" || a == "--exec-batch" {
			inner := args[k+1:]
			for j, w := range inner {
				if w == ";" {
					inner = inner[:j]
					break
				}
			}
			if r := remover(inner, c.depth); r != "" {
				c.flag(Ask, shown, "removes many files: fd %s runs %s on every file it finds", a, r)
			}
			return
		}
	}
}

// mv flags moving many files (a glob, $(…), everything) out of the
// workspace: to the sandbox's /tmp, that is removing them.
func (c *checker) mv(shown string, args []string) {
	dest, sources := mvDest(args)
	if !outsideWorkspace(dest) {
		return
	}
	const class = "moves many files out of the workspace"
	for _, s := range sources {
		if wholeFolder(s) || s != manyNames && !fileLike(s) && !isRegenerable(s) {
			c.flag(Ask, shown, "%s: mv %s %s moves a folder tree away", class, s, dest)
		}
	}
	c.many(shown, class, "mv", sources)
}

// fileLike reports whether a name looks like one file's: its last
// element has an extension (a.txt, .eslintrc.json). Anything else
// (src, Makefile, .env, a computed word) may be a folder tree.
func fileLike(p string) bool {
	name := path.Base(p)
	dot := strings.LastIndexByte(name, '.')
	return !strings.HasSuffix(p, "/") && dot > 0 && dot < len(name)-1
}

// archive flags an archiver that deletes what it archives: tar
// --remove-files (or an abbreviation), zip -m or --move, 7z -sdel.
func (c *checker) archive(shown, name string, args []string) {
	for _, a := range args {
		switch {
		case a == "--":
			return
		case name == "tar" && len(a) >= 5 && strings.HasPrefix("--remove-files", a),
			name == "zip" && (a == "--move" || len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.Contains(a, "m")),
			strings.HasPrefix(name, "7z") && a == "-sdel":
			c.flag(Ask, shown, "removes many files: %s %s deletes every file it archives", name, a)
		}
	}
}

// appends reports whether tee appends to its files (-a) rather than
// emptying them first.
func appends(args []string) bool {
	return anyArg(args, func(a string) bool {
		return a == "--append" || len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.Contains(a, "a")
	})
}

// truncation returns the target of a redirection of s that empties the
// file a variable names (: > "$f", 2> $1, >| "${f}"), or "". Inside a
// loop over many names, or run by find -exec or xargs, it empties them
// all; a fixed target (> list.txt) or a made-up one (> "$f.bak") is one
// file or a new one.
func truncation(s *syntax.Stmt) string {
	for _, r := range s.Redirs {
		if r.Word == nil || r.Op != syntax.RdrOut && r.Op != syntax.ClbOut && r.Op != syntax.RdrAll {
			continue
		}
		parts := r.Word.Parts
		if len(parts) == 1 {
			if q, ok := parts[0].(*syntax.DblQuoted); ok {
				parts = q.Parts
			}
		}
		if l, ok := literal(r.Word); ok && l == "{}" {
			return l
		}
		if len(parts) == 1 {
			if _, ok := parts[0].(*syntax.ParamExp); ok {
				return printNode(r.Word)
			}
		}
	}
	return ""
}

// emptiesAll matches a sed script that deletes every line: d, 1,$d,
// /^/d, /.*/d (spaces and a final ; removed).
var emptiesAll = compiled(`^(?:1,\$|/\^?(?:\.\*)?\$?/)?d$`)

// sedEmpties returns the files sed edits in place with a script one of
// whose expressions deletes every line, and whether it does. A script it cannot see (-f)
// is no such script.
func sedEmpties(args []string) (files []string, ok bool) {
	inPlace := false
	var scripts, ops []string
	// value returns the value of the option at args[i][k]: the rest of
	// its word, or the next word.
	value := func(i *int, rest string) string {
		if rest == "" && *i+1 < len(args) {
			*i++
			return args[*i]
		}
		return rest
	}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			ops = append(ops, args[i+1:]...)
			i = len(args)
		case a == "--expression" || strings.HasPrefix(a, "--expression="):
			scripts = append(scripts, value(&i, strings.TrimPrefix(strings.TrimPrefix(a, "--expression"), "=")))
		case a == "--file" || strings.HasPrefix(a, "--file="):
			return nil, false
		case strings.HasPrefix(a, "--in-place"):
			inPlace = true
		case len(a) > 1 && a[0] == '-' && a[1] != '-':
		cluster:
			for k := 1; k < len(a); k++ {
				switch a[k] {
				case 'i': // the rest of the word is a backup suffix
					inPlace = true
					break cluster
				case 'e':
					scripts = append(scripts, value(&i, a[k+1:]))
					break cluster
				case 'l':
					value(&i, a[k+1:])
					break cluster
				case 'f':
					return nil, false
				}
			}
		case strings.HasPrefix(a, "-") && a != "-":
		default:
			ops = append(ops, a)
		}
	}
	if len(scripts) == 0 && len(ops) > 0 {
		scripts, ops = ops[:1], ops[1:]
	}
	if !inPlace || len(scripts) == 0 {
		return nil, false
	}
	for _, sc := range scripts { // one d of every line is enough
		if emptiesAll().MatchString(strings.TrimSuffix(strings.Join(strings.Fields(sc), ""), ";")) {
			return ops, true
		}
	}
	return nil, false
}

// mvDest splits mv's operands into the destination and the sources.
func mvDest(args []string) (dest string, sources []string) {
	sources = operands(args, map[string]bool{"-t": true, "--target-directory": true, "-S": true, "--suffix": true})
	for i, a := range args {
		switch {
		case (a == "-t" || a == "--target-directory") && i+1 < len(args):
			dest = args[i+1]
		case strings.HasPrefix(a, "--target-directory="):
			dest = strings.TrimPrefix(a, "--target-directory=")
		case strings.HasPrefix(a, "-t") && len(a) > 2:
			dest = a[2:]
		}
	}
	if dest == "" && len(sources) >= 2 {
		dest, sources = sources[len(sources)-1], sources[:len(sources)-1]
	}
	return dest, sources
}

// mirror flags rsync and rclone when they delete: rsync --delete (and its
// variants, --remove-source-files), rclone sync, delete, purge.
func (c *checker) mirror(shown, name string, args []string) {
	if name == "rclone" {
		if ops := operands(args, nil); len(ops) > 0 {
			switch ops[0] {
			case "sync", "delete", "purge", "rmdirs", "cleanup", "bisync":
				c.flag(Ask, shown, "removes many files: rclone %s deletes files", ops[0])
			}
		}
		return
	}
	if o := parseOptions(args, rsyncOptions()); o.known && o.set["dry-run"] {
		return // rsync -n lists what it would do
	}
	for _, a := range args {
		switch {
		case a == "--" || !strings.HasPrefix(a, "--"):
		case a == "--del" || strings.HasPrefix(a, "--delete"):
			c.flag(Ask, shown, "removes many files: rsync %s deletes what the source lacks", a)
		case a == "--remove-source-files" || a == "--remove-sent-files":
			c.flag(Ask, shown, "removes many files: rsync %s deletes every file it copies", a)
		}
	}
}

// pathspecs flags git pathspecs that stand for a whole tree or many files:
// ., :/, magic, a glob, a folder.
func (c *checker) pathspecs(shown, class string, specs []string) {
	for _, p := range specs {
		if p == manyNames || wholeFolder(p) || strings.HasPrefix(p, ":") || strings.HasSuffix(p, "/") || isGlob(p) {
			c.flag(Ask, shown, "%s %s", class, p)
		}
	}
}

// manyLoop reports whether n is a shell loop over many names: a while or
// until loop (it reads them), a C-style for, a for over a glob, $(…) or
// "$@". A removal inside one is mass deletion.
func manyLoop(n syntax.Node) bool {
	switch x := n.(type) {
	case *syntax.WhileClause:
		return true
	case *syntax.ForClause:
		it, ok := x.Loop.(*syntax.WordIter)
		if !ok || !it.InPos.IsValid() {
			return true
		}
		items, _ := words(it.Items)
		for _, w := range items {
			if w == manyNames || isGlob(w) || braceNames(w) > braceMany {
				return true
			}
		}
	}
	return false
}

// inLoop flags a command inside a loop over many names that removes files.
func (c *checker) inLoop(x *syntax.CallExpr) {
	argv, _ := words(x.Args)
	if r := remover(argv, c.depth); r != "" {
		c.flag(Ask, r, "removes many files: a loop runs %s for every name", r)
	}
}

// remover names what in argv removes, empties or moves away the files it
// is given (rm, shred, git rm, mv out of the workspace, a shell script or
// inline code that does), or "" when it does not. It is what makes
// find -exec, xargs and loops mass deletion.
func remover(argv []string, depth int) string {
	cmd, nested, _ := unwrap(argv)
	if depth < maxDepth {
		for _, line := range nested {
			if f, err := parseShell(line); err == nil {
				if r := scriptRemover(f, depth+1); r != "" {
					return r
				}
			}
		}
	}
	if len(cmd) > 0 && (base(cmd[0]) == "sudo" || base(cmd[0]) == "doas") {
		cmd = cmd[1:]
	}
	if len(cmd) == 0 {
		return ""
	}
	name, args := base(cmd[0]), cmd[1:]
	switch {
	case name == "rm" || name == "rimraf" || destroyers[name] != "":
		return name
	case name == "git":
		if sub, _, _ := gitSubcommand(args); sub == "rm" || sub == "clean" {
			return "git " + sub
		}
	case name == "mv":
		if dest, _ := mvDest(args); outsideWorkspace(dest) {
			return "mv"
		}
	case name == "cp" && anyArg(args, func(a string) bool { return a == "/dev/null" }):
		return "cp /dev/null"
	case name == "dd" && anyArg(args, func(a string) bool {
		v, ok := strings.CutPrefix(a, "of=")
		return ok && (v == "" || v == manyNames || strings.Contains(v, "{}"))
	}):
		return "dd of="
	case name == "tee" && !appends(args):
		// Its files are the names it is run for (xargs tee, tee "$f",
		// tee {}), not a fixed log.
		files := operands(args, nil)
		if len(files) == 0 || anyArg(files, func(a string) bool { return a == "" || a == manyNames || strings.Contains(a, "{}") }) {
			return "tee"
		}
	case isInterpreter(name):
		if code, _, ok := inlineCode(name, args); ok {
			if r := fileRemoval().FindString(blankStrings(code)) + treeRemoval().FindString(code); r != "" {
				return name + " " + strings.SplitN(r, "(", 2)[0]
			}
		}
	}
	return ""
}

// scriptRemover is remover for every simple command in a node, and a
// redirection that empties the file a variable names.
func scriptRemover(n syntax.Node, depth int) string {
	r := ""
	syntax.Walk(n, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CallExpr:
			argv, _ := words(x.Args)
			r = remover(argv, depth)
		case *syntax.Stmt:
			if t := truncation(x); t != "" {
				r = "> " + t
			}
		}
		return r == ""
	})
	return r
}

// In code, a removal of one file is mass deletion when its argument is
// computed and the code lists folders or loops: os.remove(f) for f in
// os.listdir('.'), readdirSync(d).forEach(f => fs.unlinkSync(f)),
// unlink glob("*.log"), Dir.glob('*').each { |f| File.delete(f) }.
var (
	fileRemoval = compiled(`\bos\.(?:remove|unlink|rmdir|Remove)\b|\bFile\.(?:delete|unlink|Delete)\b|\bDir\.(?:delete|rmdir|unlink)\b` +
		`|\bFileUtils\.(?:rm_f|rm|remove_file|remove|rmdir|safe_unlink)\b|\b(?:fs|fsp|promises|fse)\.(?:rm|remove|unlink|rmdir)\b` +
		`|\b(?:unlinkSync|rmSync|rmdirSync|unlink|rmdir|remove_file|send2trash)\b`)
	listing = compiled(`\b(?:glob|iglob|rglob|globSync|Glob|listdir|scandir|iterdir|walk|Walk|WalkDir|ReadDir|readdir|readdirSync|opendir|opendirSync)\b` +
		`|\bDir\s*\[|\bDir\.(?:children|entries|each_child|foreach)\b|\bFind\.find\b|File::Find|<[^<>\s]*\*[^<>\s]*>`)
	looping = compiled(`\b(?:for|while|until|forEach|each|map|filter|foreach)\b`)
)

// manyRemoval returns the file-removal routine code runs over many names,
// or "". loop says the interpreter itself runs the code once per line it
// reads (perl -n). Strings are blanked first: a routine's name in prose
// does not count.
func manyRemoval(code string, loop bool) string {
	b := blankStrings(code)
	if !loop && !listing().MatchString(b) && !looping().MatchString(b) {
		return ""
	}
	for _, ix := range fileRemoval().FindAllStringIndex(b, -1) {
		if !namedOperand(b, ix[0], ix[1]) {
			return b[ix[0]:ix[1]]
		}
	}
	return ""
}

// namedOperand reports whether the removal routine at b[start:end] is
// given one string literal, blanked to a pair of quotes: os.remove("a.txt"),
// unlink 'x', Path("a.txt").unlink().
func namedOperand(b string, start, end int) bool {
	rest := strings.TrimLeft(b[end:], " \t")
	if strings.HasPrefix(rest, "(") {
		rest = strings.TrimLeft(rest[1:], " \t")
		if strings.HasPrefix(rest, ")") { // a method of its receiver: p.unlink()
			recv := strings.TrimRight(b[:start], ". \t")
			return strings.HasSuffix(recv, `("")`) || strings.HasSuffix(recv, `('')`)
		}
	}
	if len(rest) < 2 || rest[0] != '"' && rest[0] != '\'' || rest[1] != rest[0] {
		return false
	}
	after := strings.TrimLeft(rest[2:], " \t")
	return after == "" || strings.IndexByte("),;\n", after[0]) >= 0
}
