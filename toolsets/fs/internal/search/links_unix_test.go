//go:build unix

package search

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLinkCount: the link count comes from the stat data on every Unix, as
// the file tools and the search need it, whether the file was stated by
// name, through an os.Root or open.
func TestLinkCount(t *testing.T) {
	dir := t.TempDir()
	one, two := filepath.Join(dir, "one"), filepath.Join(dir, "two")
	if err := os.WriteFile(one, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	stats := func(name string) map[string]func() (os.FileInfo, error) {
		return map[string]func() (os.FileInfo, error){
			"lstat": func() (os.FileInfo, error) { return os.Lstat(filepath.Join(dir, name)) },
			"root":  func() (os.FileInfo, error) { return root.Lstat(name) },
			"open": func() (os.FileInfo, error) {
				f, err := root.Open(name)
				if err != nil {
					return nil, err
				}
				defer f.Close()
				return f.Stat()
			},
		}
	}
	check := func(name string, want uint64) {
		t.Helper()
		for how, stat := range stats(name) {
			fi, err := stat()
			if err != nil {
				t.Fatal(err)
			}
			if got := LinkCount(fi); got != want {
				t.Errorf("%s %s: %d links, want %d", how, name, got, want)
			}
		}
	}
	check("one", 1)
	for i, name := range []string{"two", "three", "four"} {
		if err := os.Link(one, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		check("one", uint64(i+2))
		check(name, uint64(i+2))
	}
	if err := os.Remove(two); err != nil {
		t.Fatal(err)
	}
	check("one", 3)
}
