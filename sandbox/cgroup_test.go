//go:build linux

package sandbox

import (
	"maps"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCgroupLayoutsCached: the cached layout is the one read afresh; the
// mount table is read again after a mount, once; a stale cache reads again.
func TestCgroupLayoutsCached(t *testing.T) {
	var c cgroupLayouts
	defer c.close()
	wantOwn, wantMounts, err := cgroupLayout()
	must(t, err)
	for i := range 3 {
		own, mounts, err := c.get()
		must(t, err)
		if !maps.Equal(own, wantOwn) || !maps.Equal(mounts, wantMounts) {
			t.Fatalf("get %d: %v %v, read afresh: %v %v", i, own, mounts, wantOwn, wantMounts)
		}
	}
	watch := c.watch
	if mountsChanged(watch) {
		t.Fatal("the mount table changed with no mount")
	}
	if os.Getuid() != 0 {
		t.Fatalf("this test mounts a tmpfs: run it as root (uid %d)", os.Getuid())
	}
	dir := t.TempDir()
	must(t, unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"))
	unmounted := false
	unmount := func() {
		if !unmounted {
			must(t, unix.Unmount(dir, 0))
			unmounted = true
		}
	}
	defer unmount()
	_, _, err = c.get()
	must(t, err)
	if c.watch == watch {
		t.Fatal("a mount did not make get read the mount table again")
	}
	watch = c.watch
	_, _, err = c.get()
	must(t, err)
	if c.watch != watch {
		t.Fatal("the mount table was read again with no change since")
	}
	unmount()
	if !mountsChanged(c.watch) {
		t.Fatal("an unmount went unseen")
	}
	c.stale()
	own, mounts, err := c.get()
	must(t, err)
	if c.watch == nil || !maps.Equal(own, wantOwn) || !maps.Equal(mounts, wantMounts) {
		t.Fatalf("after stale: %v %v", own, mounts)
	}
}

// TestControlFiles: writeFile and readSmall as os.WriteFile and os.ReadFile
// would do, for small and larger files, and errors that name the path.
func TestControlFiles(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 1023, 1024, 1025, 5000, 70000} {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte('a' + i%26)
		}
		must(t, os.WriteFile(dir+"/f", b, 0o644))
		got, err := readSmall(dir + "/f")
		if err != nil || string(got) != string(b) {
			t.Fatalf("size %d: read %d bytes, %v", size, len(got), err)
		}
	}
	must(t, writeFile(dir, "f", 12345))
	if v, err := readInt(dir, "f"); err != nil || v != 12345 {
		t.Fatalf("readInt = %d, %.80v", v, err)
	}
	must(t, os.WriteFile(dir+"/k", []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"), 0o644))
	if v := keyed(dir, "k", "oom_kill"); v != 3 {
		t.Fatalf("keyed oom_kill = %d", v)
	}
	for _, err := range []error{writeFile(dir, "missing", 1), func() error { _, err := readSmall(dir + "/missing"); return err }()} {
		var pe *os.PathError
		if err == nil || !asPathError(err, &pe) || pe.Path != dir+"/missing" {
			t.Fatalf("missing file: %v", err)
		}
	}
}

func asPathError(err error, pe **os.PathError) bool {
	p, ok := err.(*os.PathError)
	*pe = p
	return ok
}
