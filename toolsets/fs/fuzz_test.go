package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzResolve feeds arbitrary paths to the resolver and to read_file: it
// never panics, every accepted path lies inside the root, and what it opens
// (checked by the kernel's own name for the handle) is inside the root.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		".", "a.txt", "sub/b.txt", "../x", "sub/../../x", "/", "/etc/passwd", "in", "in/b.txt", "out", "out/secret.txt",
		"loop", "abs", "sub/up/up/x", "./././a.txt", "a.txt/", "~/x", "$HOME/x", "sub\\..\\..\\x", "\x00", "a\u202eb",
		"..", "sub/..", "sub/../..", "//a.txt", "dangling", "sub/up/sub/b.txt",
	} {
		f.Add(s)
	}
	e := newEnv(f, Options{})
	mustWrite(f, filepath.Join(e.ws, "a.txt"), "inside a\n")
	mustWrite(f, filepath.Join(e.ws, "sub", "b.txt"), "inside b\n")
	for link, target := range map[string]string{
		"in": "sub", "out": "../outside", "loop": "loop", "abs": "/etc", "sub/up": "..", "dangling": "nowhere/x",
	} {
		if err := os.Symlink(target, filepath.Join(e.ws, link)); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(e.ws + "/a.txt")
	f.Add(e.ws + "/../outside/secret.txt")
	f.Add(e.parent + "/outside/secret.txt")
	realWS, _ := filepath.EvalSymlinks(e.ws)
	f.Fuzz(func(t *testing.T, p string) {
		for _, follow := range []bool{true, false} {
			l, err := e.roots.resolve(p, follow)
			if err != nil {
				continue
			}
			if l.Rel != "." && (strings.HasPrefix(l.Rel, "/") || strings.Contains("/"+l.Rel+"/", "/../") || strings.Contains("/"+l.Rel+"/", "/./")) {
				t.Fatalf("resolve(%q) = %q: not a clean relative path", p, l.Rel)
			}
			if rel, err := filepath.Rel(e.ws, l.Abs()); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				t.Fatalf("resolve(%q) = %q, outside the root", p, l.Abs())
			}
			fh, err := l.root.r.Open(l.Rel)
			if err != nil {
				continue
			}
			real, rerr := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fh.Fd()))
			fh.Close()
			if rerr == nil {
				if rel, err := filepath.Rel(realWS, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					t.Fatalf("resolve(%q) opened %q, outside the root", p, real)
				}
			}
		}
		res, _ := e.call("read_file", map[string]any{"path": p})
		for _, m := range outsideMarkers {
			if strings.Contains(res.Text(), m) {
				t.Fatalf("read_file(%q) showed outside content", p)
			}
		}
	})
}
