package fs

import (
	"runtime"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/toolgate/toolgate/tool"
)

// TestGlobBounds: a glob longer than a path, with too many {a,b} groups,
// groups nested too deep, or spelling too many alternatives (in number or
// in bytes) is refused with invalid_arguments naming the argument, and
// checking any glob allocates a bounded amount, whatever its shape; globs
// at the bounds are accepted.
func TestGlobBounds(t *testing.T) {
	e := newEnv(t, Options{})
	base, err := e.set.resolve(".", true, Read)
	if err != nil {
		t.Fatal(err)
	}
	nest := func(open, inner, close string, n int) string {
		return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
	}
	refused := []struct{ glob, why string }{
		{strings.Repeat("{a}", 16000), "bytes long"},
		{nest("{", "a", "}", 32000), "bytes long"},
		{nest("{a,", "b", "}", 16000), "bytes long"},
		{strings.Repeat("a", MaxPathBytes+1), "bytes long"},
		{"**/" + strings.Repeat("x/", MaxPathBytes/2) + "*.go", "bytes long"},
		{strings.Repeat("{a,b}", 1000), "bytes long"},
		{"/" + strings.Repeat("{", MaxPathBytes), "bytes long"},
		{nest("{", "a", "}", maxGlobDepth+1), "nested"},
		{nest("{a,", "b", "}", maxGlobDepth+1), "nested"},
		{nest("x{y,", "z", "}w", maxGlobDepth+1), "nested"},
		{nest("{", "a", "", 1000), "nested"}, // unbalanced
		{"src/" + nest("{", "../x", "}", 40), "nested"},
		{strings.Repeat("{a}", maxGlobGroups+1), "groups"},
		{strings.Repeat("{a}/", maxGlobGroups+1), "groups"},
		{strings.Repeat("[x]{a}", maxGlobGroups+1), "groups"},
		{strings.Repeat("{a,b}", 11), "alternatives"},
		{strings.Repeat("{a,b,c,d}/", 6), "alternatives"},
		{"*.{" + strings.Repeat("x,", maxGlobAlternatives) + "y}", "alternatives"},
		{strings.Repeat("x", 3000) + strings.Repeat("{a,b}", 9), "alternatives"},
		{strings.Repeat("{"+strings.Repeat("x", 60)+",y}", maxGlobGroups), "alternatives"},
		{nest("{a,b,", "c", "}", maxGlobDepth) + strings.Repeat("{a,b}", 20), "alternatives"},
	}
	accepted := []string{
		nest("{", "a", "}", maxGlobDepth),
		nest("{a,", "b", "}", maxGlobDepth),
		strings.Repeat("{a}", maxGlobGroups),
		strings.Repeat("{a,b}", 10),
		strings.Repeat("a/", MaxPathBytes/2-1) + "*",
		strings.Repeat("x", 3000) + strings.Repeat("{a,b}", 7),
		"**/*.{go,ts,tsx,js,md}",
	}
	// allocated returns the bytes confineGlob allocates checking g.
	allocated := func(g string) (uint64, error) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := e.set.confineGlob("glob", g, base)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc, err
	}
	const maxAlloc = 4 * maxGlobExpansion
	for _, tc := range refused {
		t.Run("refused "+tc.glob[:min(len(tc.glob), 40)], func(t *testing.T) {
			for _, arg := range []string{"glob", "pattern"} {
				args := map[string]any{"pattern": "package", "glob": tc.glob}
				if arg == "pattern" {
					args = map[string]any{"pattern": tc.glob, "target": "files"}
				}
				res, err := e.call("search_files", args)
				if err == nil {
					t.Fatalf("%s accepted: %s", arg, res.Text())
				}
				if err.Type != tool.InvalidArguments || err.Details["argument"] != arg || !strings.HasPrefix(err.Message, arg+" ") || !strings.Contains(err.Message, tc.why) || err.Suggestion == "" {
					t.Fatalf("want invalid_arguments naming %s for %s: %s %v", arg, tc.why, err.Text(), err.Details)
				}
				if len(err.Message) > MaxPathBytes+512 {
					t.Errorf("the message is %d bytes long", len(err.Message))
				}
			}
			if n, err := allocated(tc.glob); err == nil || n > maxAlloc {
				t.Errorf("checking it allocated %d bytes (at most %d): %v", n, maxAlloc, err)
			}
		})
	}
	for _, g := range accepted {
		if n, err := allocated(g); err != nil || n > maxAlloc {
			t.Errorf("%.40q: %d bytes allocated (at most %d): %v", g, n, maxAlloc, err)
		}
	}
}

// FuzzConfineGlob feeds arbitrary globs to the check: it never panics,
// refuses only with invalid_arguments naming the argument, and what it
// accepts is relative, spells the same paths as its expanded alternatives
// (which the check inspected), and matches a path with a ".." segment only
// when it also matches that path with the ".." renamed: no accepted glob
// names the parent folder itself.
func FuzzConfineGlob(f *testing.F) {
	e := newEnv(f, Options{})
	base, err := e.set.resolve(".", true, Read)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range [][2]string{
		{"**/*.go", "a/b.go"}, {"../*", "../x"}, {"{a,../b}", "../b"}, {".{.,}/x", "../x"}, {`\.\./x`, "../x"},
		{"[.][.]/x", "../x"}, {"**/[!a][.]/*", "x/../y"}, {`..\x`, `..\x`}, {"/etc/*", "/etc/passwd"},
		{"~/.ssh/*", "~/.ssh/id"}, {"$HOME/*", "$HOME/x"}, {"C:\\x", "C:\\x"}, {"*.{go,md}", "x.md"},
		{"..*/x", "../x"}, {"?./x", "../x"}, {"[+-/][+-/]/x", "../x"}, {"{a,{b,{c,..}}}/x", "../x"},
		{"./src/*", "src/a"}, {"[{]a,..}", "{a/x"}, {"{[,],..}", ".."}, {`{a\,..,b}`, "a,.."},
		{base.Abs() + "/src/*.go", "src/a.go"}, {strings.Repeat("{a}", 70), "a"}, {"{,}{,}{,}..", ".."},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, glob, p string) {
		out, err := e.set.confineGlob("glob", glob, base)
		if err != nil {
			if te, ok := err.(*tool.Error); !ok || te.Type != tool.InvalidArguments || te.Details["argument"] != "glob" || te.Suggestion == "" {
				t.Fatalf("%q: %v", glob, err)
			}
			return
		}
		if glob != "" && (out == "" || strings.HasPrefix(out, "/") || len(out) > len(glob)) {
			t.Fatalf("%q accepted as %q", glob, out)
		}
		if !doublestar.ValidatePattern(out) {
			return
		}
		alts, ok := braceAlternatives(out, maxGlobAlternatives, maxGlobExpansion)
		if !ok {
			t.Fatalf("%q accepted as %q, which does not expand", glob, out)
		}
		if p == "" {
			return // no file has an empty path ("*{,0}" and "*" differ only there)
		}
		any := false
		for _, a := range alts {
			any = any || doublestar.ValidatePattern(a) && doublestar.MatchUnvalidated(a, p)
		}
		if whole := doublestar.MatchUnvalidated(out, p); whole != any {
			t.Fatalf("%q on %q: %v, its alternatives %q: %v", out, p, whole, alts, any)
		}
		segs := strings.Split(p, "/")
		if !any || !containsDotDot(segs) {
			return
		}
		for c := byte('!'); c <= '~'; c++ {
			if c == '.' || c == '/' || c == '\\' {
				continue
			}
			s := string(c)
			for _, name := range []string{s + ".", "." + s, s + s, ".." + s, s + "..", "." + s + ".", "..."} {
				renamed := make([]string, len(segs))
				for i, seg := range segs {
					if renamed[i] = seg; seg == ".." {
						renamed[i] = name
					}
				}
				if doublestar.MatchUnvalidated(out, strings.Join(renamed, "/")) {
					return
				}
			}
		}
		t.Fatalf("%q (accepted as %q) matches %q only with its \"..\"", glob, out, p)
	})
}

func containsDotDot(segs []string) bool {
	for _, s := range segs {
		if s == ".." {
			return true
		}
	}
	return false
}
