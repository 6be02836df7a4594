//go:build unix

package search

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tree writes files (slash path → content) under a new temporary folder.
func tree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func openRoot(t testing.TB, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// run calls Run with a guard: a search that blocks (on a FIFO, say) fails
// the test instead of hanging it.
func run(t *testing.T, root *os.Root, dir string, o Options) Result {
	t.Helper()
	type out struct {
		res Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := Run(context.Background(), root, dir, o)
		done <- out{res, err}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatalf("Run(%q, %+v): %v", dir, o, o.err)
		}
		return o.res
	case <-time.After(30 * time.Second):
		t.Fatal("Run blocked")
		return Result{}
	}
}

func where(ms []Match) []string {
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%s:%d", m.Path, m.Line))
	}
	return out
}

// fixture is a tree with every kind of thing a search must handle.
func fixture(t *testing.T) (string, *os.Root) {
	t.Helper()
	long := strings.Repeat("x", 600) + "TODO" + strings.Repeat("y", 600)
	dir := tree(t, map[string]string{
		"a.go":             "package a\n\nfunc Foo() {} // TODO one\n",
		"b/c.txt":          "alpha\r\nbeta TODO\r\ngamma\r\n",
		"b/d/e.txt":        "TODO first line\nmiddle\nlast TODO",
		".hidden/x.go":     "TODO hidden\n",
		".env":             "TODO=secret\n",
		".gitignore":       "ignored.txt\nbuild/\n",
		"ignored.txt":      "TODO ignored\n",
		"build/out.go":     "TODO built\n",
		"sub/.gitignore":   "*.log\n!keep.log\n",
		"sub/x.log":        "TODO log\n",
		"sub/keep.log":     "TODO kept log\n",
		"bin.dat":          "TODO\x00binary\n",
		"huge.txt":         strings.Repeat("TODO huge\n", 300),
		"uni.txt":          "héllo wörld\nünïcode TODO ✓\n\u212Aelvin\n",
		"long.txt":         long + "\n",
		"bad.txt":          "bad \xff\xfe TODO\n",
		"noeol.txt":        "no newline TODO",
		"gitdir/.git/HEAD": "TODO in .git\n",
	})
	outside := tree(t, map[string]string{"secret.txt": "TODO outside\n"})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("a.go", filepath.Join(dir, "link_in.go")))
	must(os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "link_out.txt")))
	must(os.Symlink("../../"+filepath.Base(outside)+"/secret.txt", filepath.Join(dir, "link_rel_out.txt")))
	must(os.Symlink("b", filepath.Join(dir, "link_dir")))
	must(os.Symlink(outside, filepath.Join(dir, "link_dir_out")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	must(os.Symlink("fifo", filepath.Join(dir, "link_fifo")))
	return dir, openRoot(t, dir)
}

func TestContentSearch(t *testing.T) {
	_, root := fixture(t)
	res := run(t, root, ".", Options{Pattern: "TODO", MaxFileSize: 2 << 10, MaxLineBytes: 100})
	want := []string{
		"a.go:3", "b/c.txt:2", "b/d/e.txt:1", "b/d/e.txt:3", "bad.txt:1",
		"link_in.go:3", "long.txt:1", "noeol.txt:1", "sub/keep.log:1", "uni.txt:2",
	}
	if got := where(res.Matches); !reflect.DeepEqual(got, want) {
		t.Errorf("matches\n got %q\nwant %q", got, want)
	}
	if res.Total != len(want) || res.TotalMatches != len(want) || res.More {
		t.Errorf("Total %d TotalMatches %d More %v, want %d %d false", res.Total, res.TotalMatches, res.More, len(want), len(want))
	}
	if res.Skipped.Binary != 1 || res.Skipped.TooLarge != 1 || res.Skipped.Unreadable != 3 {
		t.Errorf("Skipped = %+v, want 1 binary, 1 too large, 3 unreadable (the links out)", res.Skipped)
	}
	byPath := map[string]Match{}
	for _, m := range res.Matches {
		byPath[m.Path] = m
	}
	if m := byPath["b/c.txt"]; m.Text != "beta TODO" {
		t.Errorf("CRLF line: %q, want %q", m.Text, "beta TODO")
	}
	if m := byPath["uni.txt"]; m.Text != "ünïcode TODO ✓" {
		t.Errorf("unicode line: %q", m.Text)
	}
	if m := byPath["bad.txt"]; m.Text != "bad \uFFFD TODO" {
		t.Errorf("invalid UTF-8 line: %q", m.Text)
	}
	if m := byPath["noeol.txt"]; m.Text != "no newline TODO" {
		t.Errorf("last line without newline: %q", m.Text)
	}
	m := byPath["long.txt"]
	if !m.Cut || !strings.Contains(m.Text, "TODO") || !strings.HasPrefix(m.Text, CutStart) || !strings.HasSuffix(m.Text, Cut) || len(m.Text) > 100+len(Cut)+len(CutStart) {
		t.Errorf("long line: cut %v, %d bytes: %q", m.Cut, len(m.Text), m.Text)
	}
}

func TestIncludeHiddenAndIgnored(t *testing.T) {
	_, root := fixture(t)
	res := run(t, root, "", Options{Pattern: "TODO", Output: OutputFiles, IncludeHidden: true, IncludeIgnored: true, MaxFileSize: 2 << 10})
	var got []string
	for _, f := range res.Files {
		got = append(got, f.Path)
	}
	for _, p := range []string{".env", ".hidden/x.go", "ignored.txt", "build/out.go", "sub/x.log"} {
		if !contains(got, p) {
			t.Errorf("%s missing with IncludeHidden and IncludeIgnored: %q", p, got)
		}
	}
	if contains(got, "gitdir/.git/HEAD") {
		t.Error(".git must always be skipped")
	}
	res = run(t, root, "", Options{Pattern: "TODO", Output: OutputFiles, IncludeHidden: true, MaxFileSize: 2 << 10})
	got = got[:0]
	for _, f := range res.Files {
		got = append(got, f.Path)
	}
	if !contains(got, ".env") || contains(got, "ignored.txt") || contains(got, "sub/x.log") || !contains(got, "sub/keep.log") {
		t.Errorf("IncludeHidden alone: %q", got)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestCaseInsensitive(t *testing.T) {
	_, root := fixture(t)
	exact := run(t, root, ".", Options{Pattern: "TODO"})
	folded := run(t, root, ".", Options{Pattern: "todo", CaseInsensitive: true})
	if !reflect.DeepEqual(where(exact.Matches), where(folded.Matches)) {
		t.Errorf("todo -i: %q, want %q", where(folded.Matches), where(exact.Matches))
	}
	// "k" also folds to the Kelvin sign (3 bytes): the bytewise prefilter
	// must not miss it.
	kelvin := run(t, root, ".", Options{Pattern: "KELVIN", CaseInsensitive: true})
	if got := where(kelvin.Matches); !reflect.DeepEqual(got, []string{"uni.txt:3"}) {
		t.Errorf("kelvin -i: %q", got)
	}
	if res := run(t, root, ".", Options{Pattern: "ÜNÏCODE", CaseInsensitive: true}); len(res.Matches) != 1 {
		t.Errorf("non-ASCII -i: %q", where(res.Matches))
	}
}

func TestRegexpLines(t *testing.T) {
	_, root := fixture(t)
	for _, c := range []struct {
		pattern string
		want    []string
	}{
		{`TODO$`, []string{"b/c.txt:2", "b/d/e.txt:3", "bad.txt:1", "noeol.txt:1"}},
		{`^beta`, []string{"b/c.txt:2"}},
		{`func \w+\(`, []string{"a.go:3", "link_in.go:3"}},
		{`^$`, []string{"a.go:2", "link_in.go:2"}},
		{`alpha|gamma`, []string{"b/c.txt:1", "b/c.txt:3"}},
		{`(?i)HÉLLO`, []string{"uni.txt:1"}},
	} {
		res := run(t, root, ".", Options{Pattern: c.pattern})
		if got := where(res.Matches); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %q, want %q", c.pattern, got, c.want)
		}
	}
}

func TestContext(t *testing.T) {
	_, root := fixture(t)
	res := run(t, root, "b", Options{Pattern: "beta|first|last", Context: 1})
	if len(res.Matches) != 3 {
		t.Fatalf("matches %q", where(res.Matches))
	}
	beta := res.Matches[0]
	if !reflect.DeepEqual(beta.Before, []Line{{1, "alpha"}}) || !reflect.DeepEqual(beta.After, []Line{{3, "gamma"}}) {
		t.Errorf("context of beta: %+v %+v", beta.Before, beta.After)
	}
	first, last := res.Matches[1], res.Matches[2]
	if len(first.Before) != 0 || !reflect.DeepEqual(first.After, []Line{{2, "middle"}}) {
		t.Errorf("context of the first line: %+v %+v", first.Before, first.After)
	}
	if !reflect.DeepEqual(last.Before, []Line{{2, "middle"}}) || len(last.After) != 0 {
		t.Errorf("context of the last line: %+v %+v", last.Before, last.After)
	}
	res = run(t, root, "b/c.txt", Options{Pattern: "gamma", Context: 5})
	if m := res.Matches[0]; len(m.Before) != 2 || m.Before[0] != (Line{1, "alpha"}) || len(m.After) != 0 {
		t.Errorf("context 5 of the last line: %+v", m)
	}
}

func TestPagination(t *testing.T) {
	files := map[string]string{}
	for i := range 7 {
		var b strings.Builder
		for j := range i + 1 {
			fmt.Fprintf(&b, "line %d hit\nfiller\n", j)
		}
		files[fmt.Sprintf("d%d/f.txt", i)] = b.String()
	}
	root := openRoot(t, tree(t, files))
	all := run(t, root, ".", Options{Pattern: "hit"})
	if all.Total != 28 || len(all.Matches) != 28 {
		t.Fatalf("all: total %d, %d matches", all.Total, len(all.Matches))
	}
	for _, budget := range []int64{0, 1} { // 1: nothing kept, every page re-read
		for _, limit := range []int{1, 5, 28, 100} {
			var pages []Match
			for off := 0; ; off += limit {
				p := run(t, root, ".", Options{Pattern: "hit", Limit: limit, Offset: off, keepBudget: budget})
				if p.Total != 28 || p.TotalMatches != 28 {
					t.Fatalf("limit %d offset %d: total %d", limit, off, p.Total)
				}
				pages = append(pages, p.Matches...)
				if p.More != (off+limit < 28) {
					t.Errorf("limit %d offset %d: More %v", limit, off, p.More)
				}
				if !p.More {
					break
				}
			}
			if !reflect.DeepEqual(pages, all.Matches) {
				t.Errorf("budget %d limit %d: pages differ from the whole:\n%q\n%q", budget, limit, where(pages), where(all.Matches))
			}
		}
	}
	if p := run(t, root, ".", Options{Pattern: "hit", Offset: 100}); len(p.Matches) != 0 || p.Total != 28 || p.More {
		t.Errorf("offset past the end: %+v", p)
	}
	counts := run(t, root, ".", Options{Pattern: "hit", Output: OutputCount, Limit: 3, Offset: 2})
	want := []File{{"d2/f.txt", 3}, {"d3/f.txt", 4}, {"d4/f.txt", 5}}
	if !reflect.DeepEqual(counts.Files, want) || counts.Total != 7 || counts.TotalMatches != 28 || !counts.More {
		t.Errorf("count page: %+v", counts)
	}
}

func TestTargetFiles(t *testing.T) {
	_, root := fixture(t)
	names := func(res Result) []string {
		var out []string
		for _, f := range res.Files {
			out = append(out, f.Path)
		}
		return out
	}
	if got := names(run(t, root, ".", Options{Target: TargetFiles, Pattern: "*.go"})); !reflect.DeepEqual(got, []string{"a.go", "link_in.go"}) {
		t.Errorf("*.go: %q", got)
	}
	if got := names(run(t, root, ".", Options{Target: TargetFiles, Pattern: "b/**/*.txt"})); !reflect.DeepEqual(got, []string{"b/c.txt", "b/d/e.txt"}) {
		t.Errorf("b/**/*.txt: %q", got)
	}
	if got := names(run(t, root, "b", Options{Target: TargetFiles, Pattern: "d/*.txt"})); !reflect.DeepEqual(got, []string{"b/d/e.txt"}) {
		t.Errorf("d/*.txt in b: %q", got)
	}
	if got := names(run(t, root, ".", Options{Target: TargetFiles, Pattern: "*.TXT", CaseInsensitive: true, Limit: 2})); !reflect.DeepEqual(got, []string{"b/c.txt", "b/d/e.txt"}) {
		t.Errorf("*.TXT -i limit 2: %q", got)
	}
	res := run(t, root, ".", Options{Target: TargetFiles, Pattern: "link*"})
	if got := names(res); !reflect.DeepEqual(got, []string{"link_in.go"}) {
		t.Errorf("links: only the one to a file inside: %q", got)
	}
	res = run(t, root, ".", Options{Pattern: "TODO", Glob: "*.txt", Output: OutputFiles})
	if got := names(res); !reflect.DeepEqual(got, []string{"b/c.txt", "b/d/e.txt", "bad.txt", "huge.txt", "long.txt", "noeol.txt", "uni.txt"}) {
		t.Errorf("glob *.txt: %q", got)
	}
}

func TestSingleFileAndErrors(t *testing.T) {
	_, root := fixture(t)
	if res := run(t, root, "b/d/e.txt", Options{Pattern: "TODO"}); !reflect.DeepEqual(where(res.Matches), []string{"b/d/e.txt:1", "b/d/e.txt:3"}) {
		t.Errorf("single file: %q", where(res.Matches))
	}
	if res := run(t, root, ".hidden", Options{Pattern: "TODO"}); len(res.Matches) != 1 {
		t.Errorf("a hidden folder named explicitly is searched: %q", where(res.Matches))
	}
	ctx := context.Background()
	if _, err := Run(ctx, root, ".", Options{Pattern: "a("}); !errors.Is(err, ErrInvalidPattern) {
		t.Errorf("bad regexp: %v", err)
	}
	if _, err := Run(ctx, root, ".", Options{Pattern: "a", Glob: "[a"}); !errors.Is(err, ErrInvalidGlob) {
		t.Errorf("bad glob: %v", err)
	}
	if _, err := Run(ctx, root, "nope", Options{Pattern: "a"}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing folder: %v", err)
	}
	if _, err := Run(ctx, root, "link_dir_out", Options{Pattern: "a"}); err == nil {
		t.Error("a folder reached through a link out of the root must fail")
	}
	if _, err := Run(ctx, root, "fifo", Options{Pattern: "a"}); err == nil {
		t.Error("a FIFO named explicitly must fail")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Run(cancelled, root, ".", Options{Pattern: "TODO"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestAgainstReference compares the engine with the obvious line-by-line
// regexp on random text, for patterns that take every path of the matcher
// (literal only, literal prefilter, folded pairs, no literal).
func TestAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	words := []string{"foo", "Bar", "BAZ", "qux", "Ünï", "\u212A", "x", " ", " ", "\t", "\r", "é", "ſ", "s", "K", "0x1F", "()", "func", "Context("}
	files := map[string]string{}
	for i := range 40 {
		var b strings.Builder
		for range rng.Intn(60) {
			for range rng.Intn(12) {
				b.WriteString(words[rng.Intn(len(words))])
			}
			b.WriteString("\n")
		}
		if rng.Intn(3) == 0 {
			b.WriteString("tail foo bar")
		}
		files[fmt.Sprintf("f%02d.txt", i)] = b.String()
	}
	dir := tree(t, files)
	root := openRoot(t, dir)
	patterns := []string{
		"foo", "Bar", "foo Bar", "(?i)bar", "(?i)baz qux", "(?i)k", "(?i)s", "(?i)ünï", "(?i)0X1f", "x",
		`func \w+Context\(`, `^foo`, `foo$`, `(foo|qux)+`, `\bBar\b`, `[0-9]+`, `ſ`, "(?i)FOO BAR", `a{2,}`, `x*`, `\s$`,
	}
	for _, p := range patterns {
		for _, fold := range []bool{false, true} {
			want := reference(t, dir, p, fold)
			res := run(t, root, ".", Options{Pattern: p, CaseInsensitive: fold})
			if got := where(res.Matches); !reflect.DeepEqual(got, want) {
				t.Errorf("%q (fold %v): %d matches, reference %d\n got %q\nwant %q", p, fold, len(got), len(want), got, want)
			}
		}
	}
}

func reference(t *testing.T, dir, pattern string, fold bool) []string {
	if fold {
		pattern = "(?i)" + pattern
	}
	re := regexp.MustCompile(pattern)
	names, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	sort.Strings(names)
	var out []string
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		for i, l := range lines {
			if re.MatchString(strings.TrimSuffix(l, "\r")) {
				out = append(out, fmt.Sprintf("%s:%d", filepath.Base(name), i+1))
			}
		}
	}
	return out
}

func TestPathOrder(t *testing.T) {
	paths := []string{"a.go", "a/b", "a-b", "a", "ab", "a/a/c", "a/a.go"}
	sort.Slice(paths, func(i, j int) bool { return pathLess(paths[i], paths[j]) })
	want := []string{"a", "a/a/c", "a/a.go", "a/b", "a-b", "a.go", "ab"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("order %q, want %q", paths, want)
	}
}

// goroot is the Go source tree, the benchmarks' corpus.
func goroot(b *testing.B) string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Fatal(err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "src")
}

func benchmarkGoroot(b *testing.B, o Options) {
	root := openRoot(b, goroot(b))
	var n int
	for b.Loop() {
		res, err := Run(context.Background(), root, ".", o)
		if err != nil {
			b.Fatal(err)
		}
		n = res.Total
	}
	b.ReportMetric(float64(n), "items")
}

func BenchmarkGorootLiteral(b *testing.B) {
	benchmarkGoroot(b, Options{Pattern: "ErrUnexpectedEOF"})
}

func BenchmarkGorootRegexp(b *testing.B) {
	benchmarkGoroot(b, Options{Pattern: `func \w+Context\(`})
}

func BenchmarkGorootFold(b *testing.B) {
	benchmarkGoroot(b, Options{Pattern: "unexpected eof", CaseInsensitive: true})
}

func BenchmarkGorootNoLiteral(b *testing.B) {
	benchmarkGoroot(b, Options{Pattern: `[A-Z]{12}\d`, Output: OutputCount})
}

func BenchmarkGorootFiles(b *testing.B) {
	benchmarkGoroot(b, Options{Target: TargetFiles, Pattern: "*_test.go"})
}
