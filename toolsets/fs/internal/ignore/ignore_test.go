package ignore

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// repo is a real git work tree in a temporary folder.
type repo struct {
	t   *testing.T
	dir string
	env []string
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	dir := t.TempDir()
	home := t.TempDir()
	r := &repo{t: t, dir: dir, env: append(os.Environ(),
		"HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+filepath.Join(home, "none"))}
	r.git(nil, "init", "-q")
	// An empty info/exclude, so only our .gitignore files count.
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *repo) git(stdin []byte, args ...string) ([]byte, int) {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = r.env
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			r.t.Fatalf("git %v: %v", args, err)
		}
		code = ee.ExitCode()
		if code != 1 {
			r.t.Fatalf("git %v: exit %d: %s", args, code, stderr.String())
		}
	}
	return out, code
}

// build creates the entries (a trailing "/" makes a directory) and the
// .gitignore files (folder → contents), removing what an earlier build made.
func (r *repo) build(entries []string, ignores map[string]string) {
	r.t.Helper()
	items, _ := os.ReadDir(r.dir)
	for _, it := range items {
		if it.Name() != ".git" {
			os.RemoveAll(filepath.Join(r.dir, it.Name()))
		}
	}
	for _, e := range entries {
		p := filepath.Join(r.dir, filepath.FromSlash(e))
		if strings.HasSuffix(e, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				r.t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	for dir, content := range ignores {
		p := filepath.Join(r.dir, filepath.FromSlash(dir), ".gitignore")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

// gitIgnored asks git which of the entries are ignored.
func (r *repo) gitIgnored(entries []string) map[string]bool {
	r.t.Helper()
	var in bytes.Buffer
	for _, e := range entries {
		in.WriteString(strings.TrimSuffix(e, "/"))
		in.WriteByte(0)
	}
	out, _ := r.git(in.Bytes(), "check-ignore", "--stdin", "-z")
	got := map[string]bool{}
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			got[p] = true
		}
	}
	return got
}

// matcher builds our Matcher from the same .gitignore files.
func matcher(ignores map[string]string) *Matcher {
	dirs := make([]string, 0, len(ignores))
	for d := range ignores {
		dirs = append(dirs, d)
	}
	sort.Slice(dirs, func(i, j int) bool {
		return strings.Count(dirs[i], "/") < strings.Count(dirs[j], "/") || strings.Count(dirs[i], "/") == strings.Count(dirs[j], "/") && dirs[i] < dirs[j]
	})
	var m *Matcher
	for _, d := range dirs {
		m = m.Push(Parse(d, []byte(ignores[d])))
	}
	return m
}

// compare checks our answer against git's for every entry.
func compare(t *testing.T, r *repo, name string, entries []string, ignores map[string]string) {
	t.Helper()
	r.build(entries, ignores)
	want := r.gitIgnored(entries)
	m := matcher(ignores)
	for _, e := range entries {
		isDir := strings.HasSuffix(e, "/")
		p := strings.TrimSuffix(e, "/")
		if got := m.Match(p, isDir); got != want[p] {
			t.Errorf("%s: %q with %q: Match = %v, git check-ignore says %v", name, e, ignores, got, want[p])
		}
	}
}

var cases = []struct {
	name    string
	ignores map[string]string
	entries []string
}{
	{"basename at any depth", map[string]string{"": "foo\n"},
		[]string{"foo", "a/foo", "a/b/foo", "foobar", "a/foo.txt", "bar/", "x/foo/", "x/foo/y"}},
	{"comment blank escaped hash", map[string]string{"": "# comment\n\n\\#hash\n #sp\n"},
		[]string{"# comment", "#hash", " #sp", "hash", "comment"}},
	{"negation re-includes", map[string]string{"": "*.log\n!keep.log\n"},
		[]string{"a.log", "keep.log", "d/keep.log", "d/b.log", "x.txt"}},
	{"later rule wins", map[string]string{"": "!keep.log\n*.log\n"},
		[]string{"a.log", "keep.log"}},
	{"escaped bang", map[string]string{"": "\\!important\n"},
		[]string{"!important", "important"}},
	{"leading slash anchors", map[string]string{"": "/top\n"},
		[]string{"top", "a/top", "b/top/", "b/top/x"}},
	{"middle slash anchors", map[string]string{"": "a/b\n"},
		[]string{"a/b", "x/a/b", "y/a/b/", "y/a/b/c"}},
	{"trailing slash dirs only", map[string]string{"": "build/\n"},
		[]string{"build/", "build/x", "src/build/", "src/build/y", "build2/", "other/build"}},
	{"trailing slash file named like dir", map[string]string{"": "out/\n"},
		[]string{"out", "d/out"}},
	{"double star prefix", map[string]string{"": "**/logs\n"},
		[]string{"logs/", "logs/x", "a/logs/", "a/b/logs/y", "logsx"}},
	{"double star middle", map[string]string{"": "a/**/b\n"},
		[]string{"a/b", "a/x/b", "a/x/y/b", "x/a/b", "a/bb"}},
	{"double star suffix", map[string]string{"": "abc/**\n"},
		[]string{"abc/", "abc/x", "abc/d/y", "x/abc/z"}},
	{"double star not alone", map[string]string{"": "a**b\nx/**y\n"},
		[]string{"ab", "aXb", "a/b", "x/y", "x/zy", "x/z/y"}},
	{"star does not cross slash", map[string]string{"": "a/*.c\n"},
		[]string{"a/x.c", "a/b/x.c", "a/.c"}},
	{"question mark", map[string]string{"": "?.txt\nd/?\n"},
		[]string{"a.txt", "ab.txt", ".txt", "d/x", "d/xy"}},
	{"character classes", map[string]string{"": "[abc].1\n[!x-z].2\n[^x].3\n[]].4\n[a-].5\n[[:digit:]].6\n[[:alpha:][:digit:]]z.7\n"},
		[]string{"a.1", "d.1", "y.2", "b.2", "x.3", "y.3", "].4", "a.5", "-.5", "b.5", "3.6", "a.6", "qz.7", "9z.7", "-z.7"}},
	{"unterminated class never matches", map[string]string{"": "[abc\nfoo[\n"},
		[]string{"[abc", "a", "foo[", "foo"}},
	{"escaped wildcards", map[string]string{"": "\\*star\nq\\?\n"},
		[]string{"*star", "xstar", "q?", "qa"}},
	{"trailing spaces", map[string]string{"": "sp   \nesc\\ \nesc2\\  \ntab\t\n"},
		[]string{"sp", "sp   ", "esc ", "esc", "esc2 ", "tab\t", "tab"}},
	{"crlf lines", map[string]string{"": "win\r\n*.tmp\r\n"},
		[]string{"win", "a.tmp", "x"}},
	{"nested gitignore applies below", map[string]string{"": "*.o\n", "sub": "!keep.o\n/local\n"},
		[]string{"a.o", "keep.o", "sub/keep.o", "sub/a.o", "sub/local", "local", "sub/deep/local", "sub/deep/keep.o"}},
	{"deeper file wins", map[string]string{"": "!*.txt\n", "d": "*.txt\n"},
		[]string{"a.txt", "d/a.txt", "d/e/a.txt"}},
	{"excluded dir cannot be re-included", map[string]string{"": "dir/\n!dir/keep\n"},
		[]string{"dir/", "dir/keep", "dir/other"}},
	{"re-include under star dir", map[string]string{"": "/d/*\n!/d/keep/\n"},
		[]string{"d/", "d/a", "d/keep/", "d/keep/x", "d/other/", "d/other/y"}},
	{"negated dir only", map[string]string{"": "*\n!*/\n!*.go\n"},
		[]string{"a.go", "b.txt", "dir/", "dir/c.go", "dir/d.txt"}},
	{"anchored in subdir", map[string]string{"sub": "/x\ny/z\n"},
		[]string{"x", "sub/x", "sub/a/x", "sub/y/z", "sub/q/y/z", "y/z"}},
	{"unicode names", map[string]string{"": "résumé.txt\n*.日本\n"},
		[]string{"résumé.txt", "x/résumé.txt", "a.日本", "b.txt"}},
	{"dots and hidden", map[string]string{"": ".*\n!.keep\n"},
		[]string{".env", ".keep", "a/.hidden", "normal"}},
	{"only slash and bang", map[string]string{"": "/\n!\n!/\n"},
		[]string{"a", "b/", "b/c"}},
	{"posix classes", map[string]string{"": "[[:upper:]]*\n[[:space:]]x\n[[:punct:]]p\n[[:xdigit:]][[:lower:]]\n"},
		[]string{"Abc", "abc", " x", "!p", "ap", "fz", "gz", "F1"}},
	{"unknown posix class", map[string]string{"": "[[:nope:]]\na[[:x]\n"},
		[]string{"n", "[", "a[", "ax", "a:"}},
	{"slash inside class", map[string]string{"": "a[/]b\na[!x]c\na[+-0]d\n"},
		[]string{"a/b", "a/c", "ayc", "a+d", "a0d"}},
	{"bom", map[string]string{"": "\xef\xbb\xbfbom\n"},
		[]string{"bom", "x"}},
	{"trailing backslash", map[string]string{"": "tb\\\n"},
		[]string{"tb", "tb\\"}},
}

func TestMatchAgainstGit(t *testing.T) {
	r := newRepo(t)
	for _, c := range cases {
		compare(t, r, c.name, c.entries, c.ignores)
	}
}

// TestRandomAgainstGit compares random patterns on a fixed tree with git's
// verdicts (a fixed seed, so a failure reproduces).
func TestRandomAgainstGit(t *testing.T) {
	r := newRepo(t)
	entries := []string{
		"ab", "a.o", "b.o", ".x", "x.o", "c/a", "c/b",
		"a/", "a/a", "a/b", "a/b.o", "a/c/", "a/c/a", "a/c/b.o",
		"b/", "b/a/", "b/a/b", "b/a/a.o", "c/", "c/ab", "c/.x",
		"d/", "d/a/", "d/a/b/", "d/a/b/c", "[x]", "a b",
	}
	tokens := []string{"a", "b", "c", "*", "**", "?", "/", ".o", "[ab]", "[!a]", "[a-c]", "\\*", " ", "x", "."}
	rng := rand.New(rand.NewSource(3))
	for round := 0; round < 120; round++ {
		ignores := map[string]string{}
		for _, dir := range []string{"", "a", "d/a"} {
			if dir != "" && rng.Intn(2) == 0 {
				continue
			}
			var lines []string
			for n := 1 + rng.Intn(4); n > 0; n-- {
				var pat strings.Builder
				if rng.Intn(4) == 0 {
					pat.WriteString("!")
				}
				for k := 1 + rng.Intn(4); k > 0; k-- {
					pat.WriteString(tokens[rng.Intn(len(tokens))])
				}
				lines = append(lines, pat.String())
			}
			ignores[dir] = strings.Join(lines, "\n") + "\n"
		}
		compare(t, r, fmt.Sprintf("round %d", round), entries, ignores)
	}
}

func TestMatcherBasics(t *testing.T) {
	var m *Matcher
	if !m.Match(".git", true) || !m.Match("a/.git", true) || !m.Match(".git/config", false) {
		t.Error("a nil Matcher must ignore .git and what is inside")
	}
	if m.Match("a", false) || m.Match("", true) {
		t.Error("a nil Matcher must ignore nothing else")
	}
	root := Parse(".", []byte("*.log\n"))
	if root.Dir() != "" || root.Len() != 1 {
		t.Errorf("Parse(\".\"): Dir %q Len %d", root.Dir(), root.Len())
	}
	m1 := New(root)
	m2 := m1.Push(Parse("sub", []byte("!a.log\n")))
	if !m1.Match("sub/a.log", false) {
		t.Error("Push must leave the parent Matcher unchanged")
	}
	if m2.Match("sub/a.log", false) || !m2.Match("suba.log", false) || !m2.Match("sub2/a.log", false) {
		t.Error("rules of sub must apply below sub only (component-wise, not by string prefix)")
	}
	if m1.Push(Parse("x", []byte("# only a comment\n"))) != m1 {
		t.Error("pushing empty rules should return the same Matcher")
	}
}

func FuzzParse(f *testing.F) {
	for _, c := range cases {
		for _, content := range c.ignores {
			f.Add([]byte(content), c.entries[0])
		}
	}
	f.Add([]byte("[[:alpha:]-z]\n[z-a]\n[\\\n**/**/**\n"), "a/b/c")
	f.Fuzz(func(t *testing.T, data []byte, p string) {
		m := New(Parse("d", data))
		full := path.Join("d", p)
		a := m.Match(full, false)
		b := m.Match(full, true)
		_, _ = a, b
		m.MatchEntry(p, false)
	})
}

func BenchmarkMatch(b *testing.B) {
	m := New(Parse("", []byte("*.o\n/build/\nnode_modules/\n**/testdata/*.golden\n!keep.o\n"))).Push(Parse("src", []byte("gen_*.go\n[abc]?.tmp\n")))
	paths := []string{"src/cmd/main.go", "src/x/testdata/a.golden", "src/gen_x.go", "a/b/c/d/e.o", "src/ab.tmp"}
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range paths {
			m.MatchEntry(p, false)
		}
	}
}
