package cli

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHashTreeFIFO: a FIFO in the tree is refused, not opened (the open
// would block the listing of tools for ever).
func TestHashTreeFIFO(t *testing.T) {
	tree := t.TempDir()
	os.WriteFile(filepath.Join(tree, "a.js"), []byte("run()\n"), 0o644)
	if err := unix.Mkfifo(filepath.Join(tree, "b.js"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := hashTree(tree); err == nil {
		t.Errorf("a FIFO in the tree was hashed")
	}
}
