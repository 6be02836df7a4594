//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSweepBoxFolders: the sweep removes a box folder whose lock is free
// and leaves one whose lock a live gateway holds, one with no lock file,
// one whose lock is a link, a link named like a box folder (and what it
// leads to), and folders of other names.
func TestSweepBoxFolders(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	live, release, err := newBoxFolder()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(filepath.Dir(live)) != tmp {
		t.Fatalf("box folder %s, want one in %s", live, tmp)
	}
	if fi, err := os.Stat(live); err != nil || !fi.IsDir() {
		t.Fatalf("the working folder %s: %v", live, err)
	}
	if entries, _ := os.ReadDir(live); len(entries) != 0 {
		t.Fatalf("the working folder holds %d entries, want none", len(entries))
	}
	mkdir := func(p string) string {
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write := func(p string) {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// What a killed gateway leaves: its lock file, free, and the empty
	// working folder (cmd/toolgate's TestBoxFolderOfAKilledGateway kills
	// one).
	dead := mkdir(filepath.Join(tmp, boxFolderPrefix+"dead"))
	write(filepath.Join(dead, "lock"))
	mkdir(filepath.Join(dead, "root"))
	noLock := mkdir(filepath.Join(tmp, boxFolderPrefix+"nolock"))
	elsewhere := mkdir(filepath.Join(t.TempDir(), "elsewhere"))
	write(filepath.Join(elsewhere, "lock"))
	linkedLock := mkdir(filepath.Join(tmp, boxFolderPrefix+"linkedlock"))
	if err := os.Symlink(filepath.Join(elsewhere, "lock"), filepath.Join(linkedLock, "lock")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, boxFolderPrefix+"link")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	other := mkdir(filepath.Join(tmp, "toolgate-other"))
	write(filepath.Join(other, "lock"))

	gone := sweepBoxFolders(tmp)
	if !slices.Equal(gone, []string{dead}) {
		t.Errorf("swept %q, want only the folder whose lock is free %q", gone, dead)
	}
	for _, p := range []string{filepath.Dir(live), noLock, linkedLock, link, elsewhere, filepath.Join(elsewhere, "lock"), other} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	release()
	if _, err := os.Lstat(filepath.Dir(live)); !os.IsNotExist(err) {
		t.Errorf("after release, %s: %v, want it gone", filepath.Dir(live), err)
	}
}
