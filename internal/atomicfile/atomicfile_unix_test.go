//go:build unix

package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteLink: a file that is a link is replaced by a regular file; the
// link's target is not followed and keeps its content.
func TestWriteLink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "target")
	os.WriteFile(target, []byte("target"), 0o600)
	f := filepath.Join(dir, "f")
	if err := os.Symlink(target, f); err != nil {
		t.Fatal(err)
	}
	if err := Write(f, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(f)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("%s is %v (%v), want a regular file", f, fi.Mode(), err)
	}
	content(t, f, "new")
	content(t, target, "target")
	only(t, dir, "f")
}
