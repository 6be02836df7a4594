//go:build linux

package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestReadOnlyFileHardLinked: a read-only file grant with another hard
// link inside the writable workspace is refused by every backend, since
// the mount covers its name and not the file, so the command would write
// it through the link; the same file without the link is granted, and
// read-only.
func TestReadOnlyFileHardLinked(t *testing.T) {
	for _, c := range []struct {
		name    string
		backend Backend
	}{{"native", &Native{}}, {"bwrap", &Bwrap{}}, {"reduced", &Reduced{}}} {
		t.Run(c.name, func(t *testing.T) {
			ws, outside := t.TempDir(), t.TempDir()
			ro := filepath.Join(outside, "settings.json")
			must(t, os.WriteFile(ro, []byte("{}\n"), 0o644))
			link := filepath.Join(ws, "link")
			must(t, os.Link(ro, link))
			spec := Spec{Shell: "echo pwned >> link; echo pwned >> " + ro + "; true", Root: ws, ReadOnly: []string{ro}, Writable: []string{}}
			o, err := c.backend.Run(context.Background(), spec)
			if !errors.Is(err, ErrInvalidSpec) || !errors.Is(err, ErrLinkedReadOnly) {
				t.Errorf("a read-only file hard-linked into the workspace: %v (%s), want ErrLinkedReadOnly", err, o.Stderr)
			}
			if b, _ := os.ReadFile(ro); string(b) != "{}\n" {
				t.Fatalf("the read-only file was written: %q", b)
			}
			must(t, os.Remove(link))
			o, err = c.backend.Run(context.Background(), spec)
			if err != nil {
				t.Fatalf("the file without the link: %v", err)
			}
			if b, _ := os.ReadFile(ro); string(b) != "{}\n" {
				t.Fatalf("the read-only file was written: %q (%s)", b, o.Stderr)
			}
		})
	}
}
