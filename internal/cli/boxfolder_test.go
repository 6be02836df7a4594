//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestSweepBoxFolders: the sweep removes a box folder whose lock is free
// and leaves one whose lock a live gateway holds, one with no lock file,
// one whose lock is a link, a link named like a box folder (and what it
// leads to), folders of other names, and folders of an older release's
// layout (the upstream's working folder itself) whose upstream wrote a
// free file named lock, empty, of its own or with the mark and more (review
// s44's R11: such a gateway may still run beside this one during an
// upgrade).
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
	writeData := func(p, data string) {
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) { writeData(p, "") }
	if data, err := os.ReadFile(filepath.Join(filepath.Dir(live), "lock")); err != nil || string(data) != boxLockMark {
		t.Fatalf("the live folder's lock holds %q (%v), want %q", data, err, boxLockMark)
	}
	// What a killed gateway leaves: its lock file, free, and the empty
	// working folder (cmd/toolgate's TestBoxFolderOfAKilledGateway kills
	// one).
	dead := mkdir(filepath.Join(tmp, boxFolderPrefix+"dead"))
	writeData(filepath.Join(dead, "lock"), boxLockMark)
	mkdir(filepath.Join(dead, "root"))
	var older []string
	for name, data := range map[string]string{"empty": "", "pid": "4242\n", "more": boxLockMark + "x", "less": boxLockMark[:len(boxLockMark)-1]} {
		dir := mkdir(filepath.Join(tmp, boxFolderPrefix+"older"+name))
		writeData(filepath.Join(dir, "lock"), data)
		mkdir(filepath.Join(dir, "root"))
		writeData(filepath.Join(dir, "state.json"), "{}")
		older = append(older, dir)
	}
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

	// A FIFO named lock (anything of this user may make one) is opened
	// without waiting for a writer, and left.
	fifo := mkdir(filepath.Join(tmp, boxFolderPrefix+"fifo"))
	if err := syscall.Mkfifo(filepath.Join(fifo, "lock"), 0o600); err != nil {
		t.Fatal(err)
	}

	swept := make(chan []string, 1)
	go func() { swept <- sweepBoxFolders(tmp) }()
	var gone []string
	select {
	case gone = <-swept:
	case <-time.After(30 * time.Second):
		t.Fatal("the sweep still waits after 30 s: it opened the FIFO named lock for reading and waits for a writer")
	}
	if !slices.Equal(gone, []string{dead}) {
		t.Errorf("swept %q, want only the folder whose lock is free %q", gone, dead)
	}
	for _, p := range append([]string{filepath.Dir(live), fifo, noLock, linkedLock, link, elsewhere, filepath.Join(elsewhere, "lock"), other}, older...) {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	release()
	if _, err := os.Lstat(filepath.Dir(live)); !os.IsNotExist(err) {
		t.Errorf("after release, %s: %v, want it gone", filepath.Dir(live), err)
	}
}
