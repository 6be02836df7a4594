package trust

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHashesKept: a file changed long enough ago (a system program) is
// hashed once and its hash kept; a file just written is not kept.
func TestHashesKept(t *testing.T) {
	h := &Hashes{Path: filepath.Join(t.TempDir(), "state", "hashes.json")}
	sh, err := exec.LookPath("sh")
	must(t, err)
	sh, err = filepath.EvalSymlinks(sh)
	must(t, err)
	want, err := (*Hashes)(nil).sum(sh)
	must(t, err)
	if got, err := h.sum(sh); err != nil || got != want {
		t.Fatalf("sum %q %v, want %q", got, err, want)
	}
	if !fsKept(t, sh) {
		t.Fatalf("%s is on a file system whose hashes are not kept: this test needs one that is", sh)
	}
	fi, err := os.Stat(h.Path)
	must(t, err)
	if fi.Mode().Perm() != 0o600 || h.read()[sh].SHA256 != want {
		t.Fatalf("kept %v (mode %v), want %s's hash kept, 0600", h.read(), fi.Mode(), sh)
	}
	fresh := filepath.Join(mountFS(t, "tmpfs"), "fresh")
	must(t, os.WriteFile(fresh, []byte("just written"), 0o755))
	if _, err := h.sum(fresh); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.read()[fresh]; ok {
		t.Fatal("the hash of a file changed a moment ago was kept")
	}
}

// TestHashesFailClosed: a kept hash is given only while the file is the
// one hashed and the kept file is this user's alone and whole: any other
// case hashes the file again. A planted hash shows which was given.
func TestHashesFailClosed(t *testing.T) {
	dir := mountFS(t, "tmpfs")
	h := &Hashes{Path: filepath.Join(dir, "hashes.json")}
	file := filepath.Join(dir, "server")
	must(t, os.WriteFile(file, []byte("#!/bin/sh\necho one\n"), 0o755))
	real, err := (*Hashes)(nil).sum(file)
	must(t, err)
	planted := "0000000000000000000000000000000000000000000000000000000000000000"
	key := func() fileKey { return keyOf(t, file) }
	plant := func(k fileKey, mode os.FileMode) { plantHash(t, h.Path, file, k, planted, mode) }
	plant(key(), 0o600)
	if got, _ := (&Hashes{Path: h.Path}).sum(file); got != planted {
		t.Fatalf("the kept hash of an unchanged file was not given: %s", got)
	}
	for name, change := range map[string]func(*fileKey){
		"device": func(k *fileKey) { k.Dev++ }, "inode": func(k *fileKey) { k.Ino++ }, "size": func(k *fileKey) { k.Size++ },
		"modification time": func(k *fileKey) { k.ModNs++ }, "change time": func(k *fileKey) { k.ChangNs-- },
	} {
		k := key()
		change(&k)
		plant(k, 0o600)
		if got, _ := (&Hashes{Path: h.Path}).sum(file); got != real {
			t.Errorf("another %s: the kept hash was given", name)
		}
	}
	for _, garbled := range []string{strings.Repeat("Z", 64), strings.ToUpper(strings.Repeat("ab", 32)), planted[:63], planted + "0"} {
		b, err := json.Marshal(map[string]keptHash{file: {Key: key(), SHA256: garbled}})
		must(t, err)
		must(t, os.WriteFile(h.Path, b, 0o600))
		if got, _ := (&Hashes{Path: h.Path}).sum(file); got != real {
			t.Errorf("a kept hash %q was given: %s", garbled, got)
		}
	}
	// Larger than maxKeptFile, though whole: not read.
	b, err := json.Marshal(map[string]keptHash{file: {Key: key(), SHA256: planted}})
	must(t, err)
	must(t, os.WriteFile(h.Path, append(b, bytes.Repeat([]byte(" "), maxKeptFile)...), 0o600))
	if got, _ := (&Hashes{Path: h.Path}).sum(file); got != real {
		t.Error("a kept file larger than maxKeptFile was taken")
	}
	plant(key(), 0o644)
	if got, _ := (&Hashes{Path: h.Path}).sum(file); got != real {
		t.Error("a kept file others may read was taken")
	}
	plant(key(), 0o600)
	must(t, os.WriteFile(h.Path, []byte(`{"`+file+`": {"key": `), 0o600))
	if got, _ := (&Hashes{Path: h.Path}).sum(file); got != real {
		t.Error("a damaged kept file was taken")
	}
	// Changed in place, its times set back: the change time tells.
	plant(key(), 0o600)
	old, err := os.Stat(file)
	must(t, err)
	must(t, os.WriteFile(file, []byte("#!/bin/sh\necho two\n"), 0o755))
	must(t, os.Chtimes(file, old.ModTime(), old.ModTime()))
	want, err := (*Hashes)(nil).sum(file)
	must(t, err)
	if got, _ := (&Hashes{Path: h.Path}).sum(file); got != want || got == planted {
		t.Errorf("a file changed in place with its times set back: %s, want %s", got, want)
	}
}

// TestHashesReadOnce: a Hashes reads its kept file once, at its first
// hash (a start hashes every upstream's executable and files: each hash
// read the file again): a hash planted in it after that is not given.
func TestHashesReadOnce(t *testing.T) {
	dir := mountFS(t, "tmpfs")
	h := &Hashes{Path: filepath.Join(dir, "hashes.json")}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	must(t, os.WriteFile(a, []byte("a"), 0o755))
	must(t, os.WriteFile(b, []byte("b"), 0o755))
	_, err := h.sum(a)
	must(t, err)
	planted := strings.Repeat("0", 64)
	plantHash(t, h.Path, b, keyOf(t, b), planted, 0o600)
	if got, _ := (&Hashes{Path: h.Path}).sum(b); got != planted {
		t.Fatalf("a new Hashes did not take the planted hash: %s", got)
	}
	real, err := (*Hashes)(nil).sum(b)
	must(t, err)
	if got, _ := h.sum(b); got != real {
		t.Errorf("the kept file was read again: %s given, want %s", got, real)
	}
}

// TestHashesMerged: two Hashes on one kept file (two toolgate processes)
// each keep their hash: the second to write reads the file again and
// keeps the first's (it wrote its own map whole over the file).
func TestHashesMerged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hashes.json")
	h1, h2 := &Hashes{Path: path}, &Hashes{Path: path}
	fresh := filepath.Join(t.TempDir(), "fresh")
	must(t, os.WriteFile(fresh, []byte("fresh"), 0o755))
	_, err := h2.sum(fresh) // h2 reads the kept file: none yet
	must(t, err)
	var progs []string
	for _, name := range []string{"sh", "cat"} {
		p, err := exec.LookPath(name)
		must(t, err)
		p, err = filepath.EvalSymlinks(p)
		must(t, err)
		progs = append(progs, p)
	}
	if progs[0] == progs[1] || !fsKept(t, progs[0]) || !fsKept(t, progs[1]) {
		t.Fatalf("%q: this test needs two programs on a file system whose hashes are kept", progs)
	}
	_, err = h1.sum(progs[0])
	must(t, err)
	_, err = h2.sum(progs[1])
	must(t, err)
	kept := (&Hashes{Path: path}).read()
	for _, p := range progs {
		if _, ok := kept[p]; !ok {
			t.Errorf("the hash of %s was lost: kept %v", p, kept)
		}
	}
}

// keyOf is the key of the file at path.
func keyOf(t *testing.T, path string) fileKey {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	k, ok := statKey(f)
	if !ok {
		t.Fatal("no key")
	}
	return k
}

// plantHash writes the kept file at kept with sum as the hash of file
// whose key is k, in mode.
func plantHash(t *testing.T, kept, file string, k fileKey, sum string, mode os.FileMode) {
	t.Helper()
	b, err := json.Marshal(map[string]keptHash{file: {Key: k, SHA256: sum}})
	must(t, err)
	must(t, os.WriteFile(kept, b, mode))
	must(t, os.Chmod(kept, mode))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mountFS mounts a file system of type fsType (tmpfs, ramfs) on a new
// folder, unmounted at the end. Root only.
func mountFS(t *testing.T, fsType string) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Fatalf("this test mounts a %s: run it as root (uid %d)", fsType, os.Getuid())
	}
	dir := t.TempDir()
	must(t, unix.Mount(fsType, dir, fsType, 0, ""))
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// fsKept reports whether keptFS allows the file system of path.
func fsKept(t *testing.T, path string) bool {
	var fs unix.Statfs_t
	must(t, unix.Statfs(path, &fs))
	return keptFS(int64(fs.Type))
}

// TestKeptFS: only ext2/3/4, xfs, btrfs and tmpfs keep hashes; FUSE,
// vfat, exfat, NFS, SMB, overlayfs, ramfs and an unknown type do not.
func TestKeptFS(t *testing.T) {
	for _, fsType := range []int64{unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC} {
		if !keptFS(fsType) {
			t.Errorf("%#x: not kept", fsType)
		}
	}
	for _, fsType := range []int64{unix.FUSE_SUPER_MAGIC, unix.MSDOS_SUPER_MAGIC, unix.EXFAT_SUPER_MAGIC, unix.NFS_SUPER_MAGIC,
		unix.CIFS_SUPER_MAGIC, unix.SMB2_SUPER_MAGIC, unix.SMB_SUPER_MAGIC, unix.OVERLAYFS_SUPER_MAGIC, unix.RAMFS_MAGIC, 0, 0x12345678} {
		if keptFS(fsType) {
			t.Errorf("%#x: kept", fsType)
		}
	}
}

// TestHashesUnwritten: a hash is kept only for a file no one could write
// while it was hashed, on a file system keptFS allows. The files are made
// and written, then left older than recentChange; then each is hashed
// with what holds it open. A writable shared mapping (REVIEW12 T1) writes
// the file again after the hash without changing any field of its key:
// the next sum must see the new content.
func TestHashesUnwritten(t *testing.T) {
	tmp, ram, disk := mountFS(t, "tmpfs"), mountFS(t, "ramfs"), t.TempDir()
	type hold struct {
		after func() // after the first sum: a write that changes no key field
		close func()
	}
	mapped := func(p string) hold {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		must(t, err)
		m, err := unix.Mmap(int(f.Fd()), 0, 8192, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		must(t, err)
		f.Close()  // the mapping keeps the file open for writing
		m[0] = 'A' // the write fault stamps the times now
		return hold{after: func() { m[1] = 'B' }, close: func() { unix.Munmap(m) }}
	}
	opened := func(flag int) func(string) hold {
		return func(p string) hold {
			f, err := os.OpenFile(p, flag, 0)
			must(t, err)
			return hold{close: func() { f.Close() }}
		}
	}
	cases := []struct {
		name, dir string
		hold      func(string) hold
		kept      bool
	}{
		{"tmpfs", tmp, nil, true},
		{"tmpfs, read by another", tmp, opened(os.O_RDONLY), true},
		{"tmpfs, open for writing", tmp, opened(os.O_WRONLY), false},
		{"tmpfs, mapped for writing", tmp, mapped, false},
		{"disk", disk, nil, fsKept(t, disk)},
		{"disk, open for writing", disk, opened(os.O_RDWR), false},
		{"disk, mapped for writing", disk, mapped, false},
		{"ramfs", ram, nil, false},
	}
	holds := make([]hold, len(cases))
	for i, c := range cases {
		p := filepath.Join(c.dir, fmt.Sprint(i))
		must(t, os.WriteFile(p, make([]byte, 8192), 0o755))
		if c.hold != nil {
			holds[i] = c.hold(p)
			defer holds[i].close()
		}
	}
	time.Sleep(recentChange + 500*time.Millisecond)
	for i, c := range cases {
		p := filepath.Join(c.dir, fmt.Sprint(i))
		h := &Hashes{Path: filepath.Join(t.TempDir(), "hashes.json")}
		first, err := h.sum(p)
		must(t, err)
		if _, kept := h.read()[p]; kept != c.kept {
			t.Errorf("%s: kept %v, want %v", c.name, kept, c.kept)
		}
		if holds[i].after == nil {
			continue
		}
		holds[i].after()
		b, err := os.ReadFile(p)
		must(t, err)
		s := sha256.Sum256(b)
		if got, _ := h.sum(p); got != hex.EncodeToString(s[:]) || got == first {
			t.Errorf("%s: the first hash %.12s given for changed content %.12x", c.name, got, s)
		}
	}
}

// TestReadLeaseBroken: a read lease is broken by an open for writing made
// while it is held (the open waits for it): release reports it, and the
// hash taken meanwhile is not kept. Unbroken, release reports it held.
func TestReadLeaseBroken(t *testing.T) {
	p := filepath.Join(mountFS(t, "tmpfs"), "f")
	must(t, os.WriteFile(p, []byte("x"), 0o755))
	f, err := os.Open(p)
	must(t, err)
	defer f.Close()
	release, ok := readLease(f)
	if !ok || !release() {
		t.Fatalf("lease %v: not held without a writer", ok)
	}
	release, ok = readLease(f)
	if !ok {
		t.Fatal("no lease")
	}
	opened := make(chan error)
	go func() {
		w, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err == nil {
			w.Close()
		}
		opened <- err
	}()
	for { // until the writer's open breaks the lease (it waits for it)
		held, err := unix.FcntlInt(f.Fd(), unix.F_GETLEASE, 0)
		must(t, err)
		if held != unix.F_RDLCK {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if release() {
		t.Error("a broken lease was reported held")
	}
	must(t, <-opened)
}
