package fs

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// beneathEnv is a workspace with every kind of path read_file meets: plain
// files at several depths, a second root, links inside and out (relative,
// absolute, to folders, chains, loops), "." and ".." spellings, special
// files, a hard link to a file outside, and protected files.
func beneathEnv(t testing.TB) *env {
	t.Helper()
	parent := t.TempDir()
	second := filepath.Join(parent, "second")
	mustWrite(t, filepath.Join(second, "s.txt"), "SECOND\n")
	e := newEnv(t, Options{}, second)
	ws := e.ws
	mustWrite(t, filepath.Join(ws, "a.txt"), "A\n")
	mustWrite(t, filepath.Join(ws, "d", "e", "f.txt"), "F\n")
	mustWrite(t, filepath.Join(ws, "sp ace", "ü.txt"), "U\n")
	mustWrite(t, filepath.Join(ws, ".env"), "TOKEN=x\n")
	mustWrite(t, filepath.Join(ws, "d", ".env.local"), "TOKEN=y\n")
	for _, l := range []struct{ name, target string }{
		{"link.txt", "a.txt"}, {"dlink", "d"}, {"up", ".."}, {"out.txt", "../outside/secret.txt"},
		{"abs.txt", filepath.Join(ws, "a.txt")}, {"absout", filepath.Join(e.parent, "outside")},
		{"loop1", "loop2"}, {"loop2", "loop1"}, {"self", "self"}, {"chain1", "chain2"}, {"chain2", "d/e/f.txt"},
		{"d/back", "../a.txt"}, {"d/escape", "../../secret.txt"}, {"envlink", ".env"}, {"proc", "/proc/self/root/etc/passwd"},
		{"dangling", "nowhere"},
	} {
		if err := os.Symlink(l.target, filepath.Join(ws, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mknod(filepath.Join(ws, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(e.parent, "outside", "secret.txt"), filepath.Join(ws, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	return e
}

// beneathPaths are the paths beneathEnv is read by; fast says which the
// fast open takes (canonical, no link, a regular file, not protected).
func beneathPaths(e *env) []struct {
	path string
	fast bool
} {
	ws := e.ws
	return []struct {
		path string
		fast bool
	}{
		{"a.txt", true}, {"d/e/f.txt", true}, {"sp ace/ü.txt", true}, {filepath.Join(ws, "a.txt"), true},
		{filepath.Join(ws, "d", "e", "f.txt"), true}, {ws + "/../ws/a.txt", false},
		{filepath.Join(e.roots.Dirs()[1], "s.txt"), true}, {ws + "//d/./e/f.txt", true},
		{"./a.txt", false}, {"d/../a.txt", false}, {"d//e/f.txt", false}, {"d/e/f.txt/", false}, {"d/e/./f.txt", false},
		{"../outside/secret.txt", false}, {"..", false}, {".", false}, {"d", false}, {"", false},
		{"link.txt", false}, {"dlink/e/f.txt", false}, {"up/outside/secret.txt", false}, {"up/ws/a.txt", false},
		{"out.txt", false}, {"abs.txt", false}, {"absout/secret.txt", false}, {"loop1", false}, {"self", false},
		{"loop1/x", false}, {"chain1", false}, {"d/back", false}, {"d/escape", false}, {"envlink", false},
		{"proc", false}, {"dangling", false}, {"missing.txt", false}, {"d/missing/x", false}, {"a.txt/x", false},
		{"fifo", false}, {"null", false}, {"hard.txt", false}, {".env", false}, {"d/.env.local", false},
		{"/proc/self/root/etc/passwd", false}, {"/etc/passwd", false}, {"a.txt\x00", false}, {"a\u202e.txt", false},
	}
}

// The fast open is taken exactly for canonical paths of regular files that
// no link leads through, and read_file answers every path, fast or not,
// exactly as the walk alone answers it: the same text and metadata, or the
// same error.
func TestOpenBeneathSameAsWalk(t *testing.T) {
	e := beneathEnv(t)
	walk := &Set{roots: &Roots{list: e.roots.list}, opts: e.set.opts, guard: e.set.guard}
	walk.roots.noOpenat2.Store(true)
	for _, c := range beneathPaths(e) {
		l, f, _, ok := e.set.openBeneath(c.path)
		if ok {
			f.Close()
		}
		if ok != c.fast {
			t.Errorf("openBeneath(%q) took the fast open: %v, want %v (%+v)", c.path, ok, c.fast, l)
		}
		args := map[string]any{"path": c.path, "offset": 1, "limit": 500}
		got, gerr := e.set.readFile(t.Context(), ReadFileIn{Path: c.path, Offset: 1, Limit: 500})
		want, werr := walk.readFile(t.Context(), ReadFileIn{Path: c.path, Offset: 1, Limit: 500})
		if g, w := errText(gerr), errText(werr); g != w || got.Text() != want.Text() || !sameMeta(got.Meta, want.Meta) {
			t.Errorf("read_file %v:\n fast %q %v %s\n walk %q %v %s", args, got.Text(), got.Meta, g, want.Text(), want.Meta, w)
		}
		if strings.Contains(got.Text(), "SECRET") || strings.Contains(got.Text(), "root:") {
			t.Errorf("read_file %q read outside the roots: %q", c.path, got.Text())
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func sameMeta(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Whatever replaces the path between the fast open's type check and its
// open (a folder or the file swapped for a link inside or out, a FIFO, a
// device, a hard link to a file outside, another file), read_file reads
// nothing outside the roots, never hangs on the FIFO, and answers as the
// walk answers for what is there now.
func TestOpenBeneathSwapped(t *testing.T) {
	for _, c := range []struct {
		name, path string
		swap       func(e *env) error
	}{
		{"folder-to-link-out", "d/e/f.txt", func(e *env) error {
			return swapFor(filepath.Join(e.ws, "d"), func(p string) error { return os.Symlink("../outside", p) })
		}},
		{"folder-to-abs-link", "d/e/f.txt", func(e *env) error {
			return swapFor(filepath.Join(e.ws, "d"), func(p string) error { return os.Symlink(filepath.Join(e.parent, "outside"), p) })
		}},
		{"folder-to-link-in", "d/e/f.txt", func(e *env) error {
			mustWrite(t, filepath.Join(e.ws, "other", "e", "f.txt"), "OTHER\n")
			return swapFor(filepath.Join(e.ws, "d"), func(p string) error { return os.Symlink("other", p) })
		}},
		{"file-to-link-out", "a.txt", func(e *env) error {
			return swapFor(filepath.Join(e.ws, "a.txt"), func(p string) error { return os.Symlink("../outside/secret.txt", p) })
		}},
		{"file-to-proc-link", "a.txt", func(e *env) error {
			return swapFor(filepath.Join(e.ws, "a.txt"), func(p string) error { return os.Symlink("/proc/self/root/etc/passwd", p) })
		}},
		{"file-to-fifo", "a.txt", func(e *env) error {
			return swapFor(filepath.Join(e.ws, "a.txt"), func(p string) error { return syscall.Mkfifo(p, 0o644) })
		}},
		{"file-to-device", "a.txt", func(e *env) error {
			return swapFor(filepath.Join(e.ws, "a.txt"), func(p string) error { return syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3) })
		}},
		{"file-to-hard-link-out", "a.txt", func(e *env) error {
			return swapFor(filepath.Join(e.ws, "a.txt"), func(p string) error { return os.Link(filepath.Join(e.parent, "outside", "secret.txt"), p) })
		}},
		{"file-to-other-file", "a.txt", func(e *env) error {
			return swapFor(filepath.Join(e.ws, "a.txt"), func(p string) error { return os.WriteFile(p, []byte("NEW\n"), 0o644) })
		}},
		{"file-to-folder", "a.txt", func(e *env) error {
			return swapFor(filepath.Join(e.ws, "a.txt"), func(p string) error { return os.Mkdir(p, 0o755) })
		}},
		{"file-removed", "d/e/f.txt", func(e *env) error { return os.RemoveAll(filepath.Join(e.ws, "d")) }},
		{"root-content-moved", "d/e/f.txt", func(e *env) error {
			return os.Rename(filepath.Join(e.ws, "d"), filepath.Join(e.parent, "outside", "d"))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := beneathEnv(t)
			swapped := false
			e.set.beforeOpen = func(Location) {
				if !swapped {
					swapped = true
					if err := c.swap(e); err != nil {
						t.Fatal(err)
					}
				}
			}
			got, gerr := e.set.readFile(t.Context(), ReadFileIn{Path: c.path, Offset: 1, Limit: 500})
			if !swapped {
				t.Fatalf("the fast open was not taken for %q", c.path)
			}
			if strings.Contains(got.Text(), "SECRET") || strings.Contains(got.Text(), "root:") {
				t.Fatalf("read_file %q read outside the roots after the swap: %q", c.path, got.Text())
			}
			e.set.beforeOpen = nil
			e.roots.noOpenat2.Store(true)
			want, werr := e.set.readFile(t.Context(), ReadFileIn{Path: c.path, Offset: 1, Limit: 500})
			if errText(gerr) != errText(werr) || got.Text() != want.Text() {
				t.Errorf("after the swap: fast %q %s, walk %q %s", got.Text(), errText(gerr), want.Text(), errText(werr))
			}
		})
	}
}

// swapFor replaces p by what make creates there.
func swapFor(p string, make func(string) error) error {
	if err := os.RemoveAll(p); err != nil {
		return err
	}
	return make(p)
}

// FuzzOpenBeneath: for any path, read_file with the fast open answers as
// the walk alone answers, and whatever the fast open takes is the very
// location the walk resolves.
func FuzzOpenBeneath(f *testing.F) {
	for _, s := range []string{"a.txt", "d/e/f.txt", "dlink/e/f.txt", "up/ws/a.txt", "d/../a.txt", "./a.txt", "loop1", "fifo", "null",
		"hard.txt", ".env", "envlink", "proc", "abs.txt", "d//e/f.txt", "/etc/passwd", "sp ace/ü.txt", "D/E/F.TXT"} {
		f.Add(s)
	}
	e := beneathEnv(f)
	f.Fuzz(func(t *testing.T, p string) {
		if l, fh, _, ok := e.set.openBeneath(p); ok {
			fh.Close()
			w, err := e.roots.resolve(p, true)
			if err != nil || w.Rel != l.Rel || w.Root != l.Root {
				t.Fatalf("openBeneath(%q) took %d:%q, the walk resolves %d:%q (%v)", p, l.Root, l.Rel, w.Root, w.Rel, err)
			}
		}
		walk := &Set{roots: &Roots{list: e.roots.list}, opts: e.set.opts, guard: e.set.guard}
		walk.roots.noOpenat2.Store(true)
		got, gerr := e.set.readFile(t.Context(), ReadFileIn{Path: p, Offset: 1, Limit: 500})
		want, werr := walk.readFile(t.Context(), ReadFileIn{Path: p, Offset: 1, Limit: 500})
		if errText(gerr) != errText(werr) || got.Text() != want.Text() {
			t.Fatalf("read_file %q: fast %q %s, walk %q %s", p, got.Text(), errText(gerr), want.Text(), errText(werr))
		}
		if strings.Contains(got.Text(), "SECRET") || strings.Contains(got.Text(), "root:") {
			t.Fatalf("read_file %q read outside the roots: %q", p, got.Text())
		}
	})
}

// After the roots are closed, the fast open uses no stale descriptor
// number, even when another folder (outside) was given that number since.
func TestOpenBeneathAfterClose(t *testing.T) {
	e := beneathEnv(t)
	mustWrite(t, filepath.Join(e.parent, "outside", "a.txt"), "OUTSIDE-SECRET\n")
	e.roots.Close()
	var held []*os.File
	defer func() {
		for _, f := range held {
			f.Close()
		}
	}()
	for range 8 { // take the numbers the roots freed
		f, err := os.Open(filepath.Join(e.parent, "outside"))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, f)
	}
	if _, f, _, ok := e.set.openBeneath("a.txt"); ok {
		f.Close()
		t.Fatal("openBeneath opened a file through closed roots")
	}
	if res, err := e.call("read_file", map[string]any{"path": "a.txt"}); err == nil || strings.Contains(res.Text(), "SECRET") {
		t.Fatalf("read_file through closed roots: %q %v", res.Text(), err)
	}
}
