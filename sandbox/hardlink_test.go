//go:build linux

package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadOnlyFileHardLinked: a read-only file grant with another hard
// link inside the writable workspace is refused by every backend, since
// the mount covers its name and not the file, so the command would write
// it through the link; so is one whose link lies on a file system of its
// own mounted inside the workspace (not the workspace's device, writable
// all the same). The same file without the link is granted, and
// read-only.
func TestReadOnlyFileHardLinked(t *testing.T) {
	for _, c := range []struct {
		name    string
		backend Backend
	}{{"native", &Native{}}, {"bwrap", &Bwrap{}}, {"reduced", &Reduced{}}} {
		t.Run(c.name, func(t *testing.T) {
			// write runs a command that writes the read-only file ro
			// through the link (a name in ws) and through its own name.
			write := func(ws, ro, link string) (Outcome, error) {
				return c.backend.Run(context.Background(), Spec{Shell: "echo pwned >> " + link + "; echo pwned >> " + ro + "; true",
					Root: ws, ReadOnly: []string{ro}, Writable: []string{}})
			}
			refused := func(ws, ro, link string) {
				t.Helper()
				o, err := write(ws, ro, link)
				if !errors.Is(err, ErrInvalidSpec) || !errors.Is(err, ErrLinkedReadOnly) {
					t.Errorf("a read-only file hard-linked as %s: %v (%s), want ErrLinkedReadOnly", link, err, o.Stderr)
				}
				if b, _ := os.ReadFile(ro); string(b) != "{}\n" {
					t.Fatalf("the read-only file was written through %s: %q", link, b)
				}
			}
			ws, outside := t.TempDir(), t.TempDir()
			ro := filepath.Join(outside, "settings.json")
			must(t, os.WriteFile(ro, []byte("{}\n"), 0o644))
			link := filepath.Join(ws, "link")
			must(t, os.Link(ro, link))
			refused(ws, ro, link)
			must(t, os.Remove(link))
			o, err := write(ws, ro, link)
			if err != nil {
				t.Fatalf("the file without the link: %v", err)
			}
			if b, _ := os.ReadFile(ro); string(b) != "{}\n" {
				t.Fatalf("the read-only file was written: %q (%s)", b, o.Stderr)
			}

			// A tmpfs holding the file and its link, bound at ws/sub.
			other := t.TempDir()
			mount(t, "tmpfs", other, "tmpfs", 0)
			ro = filepath.Join(other, "settings.json")
			must(t, os.WriteFile(ro, []byte("{}\n"), 0o644))
			must(t, os.Link(ro, filepath.Join(other, "link")))
			sub := filepath.Join(ws, "sub")
			must(t, os.Mkdir(sub, 0o755))
			mount(t, other, sub, "", unix.MS_BIND)
			refused(ws, ro, filepath.Join(sub, "link"))
		})
	}
}

// mount mounts source at target for the rest of the test.
func mount(t *testing.T, source, target, fstype string, flags uintptr) {
	t.Helper()
	if err := unix.Mount(source, target, fstype, flags, ""); err != nil {
		t.Fatalf("mount %s at %s: %v", source, target, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", target, err)
		}
	})
}
