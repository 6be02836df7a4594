package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// tmpfs mounts a tmpfs of size bytes on a new folder, unmounted at the
// end. Root only (as root a folder's mode refuses nothing: a read-only
// mount does).
func tmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Fatalf("this test mounts a tmpfs: run it as root (uid %d)", os.Getuid())
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// TestWriteDiskFull: a content larger than the file system's room fails
// with ENOSPC, the old file untouched and no temporary file left.
func TestWriteDiskFull(t *testing.T) {
	dir := tmpfs(t, "64k")
	f := filepath.Join(dir, "f")
	if err := Write(f, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Write(f, []byte(strings.Repeat("x", 1<<20)), 0o600)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("err = %v, want ENOSPC", err)
	}
	content(t, f, "old")
	only(t, dir, "f")
}

// TestWriteReadOnlyFolder: a folder that may not be written (a read-only
// mount: root passes any mode) fails, the old file untouched.
func TestWriteReadOnlyFolder(t *testing.T) {
	dir := tmpfs(t, "64k")
	f := filepath.Join(dir, "f")
	if err := Write(f, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	if err := Write(f, []byte("new"), 0o600); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("err = %v, want EROFS", err)
	}
	content(t, f, "old")
	only(t, dir, "f")
}

// TestWriteFolderSyncError: a folder that may be written but not read
// (mode 0333, as a user that is not root) takes the new file but cannot
// be opened to sync it: the error is returned, the file replaced. The
// write runs on a thread of its own whose file system uid is the folder's
// owner (setfsuid drops root's file capabilities on that thread alone);
// the thread ends with the goroutine, never unlocked.
func TestWriteFolderSyncError(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatalf("this test changes its thread's file system uid: run it as root (uid %d)", os.Getuid())
	}
	const nobody = 65534
	dir, err := os.MkdirTemp("", "atomicfile")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil { // the way to it, for that uid
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "w")
	f := filepath.Join(sub, "f")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{sub, f} {
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(sub, 0o333); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		unix.Setfsuid(nobody)
		if _, err := os.Open(sub); !errors.Is(err, fs.ErrPermission) {
			done <- fmt.Errorf("the folder opened as its owner with mode 0333: %v", err)
			return
		}
		done <- Write(f, []byte("new"), 0o600)
	}()
	err = <-done
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("err = %v, want the folder's permission error", err)
	}
	content(t, f, "new")
	if err := os.Chmod(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	only(t, sub, "f")
}
