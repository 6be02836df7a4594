package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
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
