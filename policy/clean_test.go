package policy

import (
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"
)

// FuzzIsClean: isClean(p) says true exactly when path.Clean(p) is p, so
// cleanPath is path.Clean.
func FuzzIsClean(f *testing.F) {
	for _, s := range []string{"", "/", ".", "..", "/..", "../..", "../a/..", "a/../..", "./a", "a/.", "a/", "//", "//a", "/a//b",
		"/a/./b", "/a/../b", "a/b/c", "/tmp/x.123/dir/small.txt", ".../a", "a/...", "..a/b", "a/..b", "/.a", "é/ß", "a\\..\\b", "\x00/..", "../../a/b", "/a/b/", "../", "./", "/./", "a/b/../../.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		want := path.Clean(p)
		if got := isClean(p); got != (want == p) {
			t.Fatalf("isClean(%q) = %v, path.Clean gives %q", p, got, want)
		}
		if got := cleanPath(p); got != want {
			t.Fatalf("cleanPath(%q) = %q, path.Clean gives %q", p, got, want)
		}
	})
}

// TestBelow: below places a clean absolute path as comparing its
// components with the folder's does, never by a string prefix ("/srv/ab"
// is not below "/srv/a").
func TestBelow(t *testing.T) {
	comps := []string{"srv", "a", "ab", "A", "é", "..a", "a.", "x y"}
	rng := rand.New(rand.NewPCG(9, 10))
	word := func() string {
		var b strings.Builder
		for range rng.IntN(4) {
			b.WriteString("/" + comps[rng.IntN(len(comps))])
		}
		return b.String()
	}
	for range 20000 {
		abs, dir := path.Clean("/"+word()), splitComponents(word())
		want, wantOK := "", false
		if parts := splitComponents(abs); len(parts) >= len(dir) && slices.Equal(parts[:len(dir)], dir) {
			want, wantOK = strings.Join(parts[len(dir):], "/"), true
			if want == "" {
				want = "."
			}
		}
		if got, ok := below(abs, dir); got != want || ok != wantOK {
			t.Fatalf("below(%q, %q) = %q, %v; want %q, %v", abs, dir, got, ok, want, wantOK)
		}
	}
}
