package policy

import (
	"path"
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
