//go:build linux || darwin

package trust

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
	fi, err := os.Stat(h.Path)
	must(t, err)
	if fi.Mode().Perm() != 0o600 || h.read()[sh].SHA256 != want {
		t.Fatalf("kept %v (mode %v), want %s's hash kept, 0600", h.read(), fi.Mode(), sh)
	}
	fresh := filepath.Join(t.TempDir(), "fresh")
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
	dir := t.TempDir()
	h := &Hashes{Path: filepath.Join(dir, "hashes.json")}
	file := filepath.Join(dir, "server")
	must(t, os.WriteFile(file, []byte("#!/bin/sh\necho one\n"), 0o755))
	real, err := (*Hashes)(nil).sum(file)
	must(t, err)
	planted := "0000000000000000000000000000000000000000000000000000000000000000"
	key := func() fileKey {
		f, err := os.Open(file)
		must(t, err)
		defer f.Close()
		k, ok := statKey(f)
		if !ok {
			t.Fatal("no key")
		}
		return k
	}
	plant := func(k fileKey, mode os.FileMode) {
		b, err := json.Marshal(map[string]keptHash{file: {Key: k, SHA256: planted}})
		must(t, err)
		must(t, os.WriteFile(h.Path, b, mode))
		must(t, os.Chmod(h.Path, mode))
	}
	plant(key(), 0o600)
	if got, _ := h.sum(file); got != planted {
		t.Fatalf("the kept hash of an unchanged file was not given: %s", got)
	}
	for name, change := range map[string]func(*fileKey){
		"device": func(k *fileKey) { k.Dev++ }, "inode": func(k *fileKey) { k.Ino++ }, "size": func(k *fileKey) { k.Size++ },
		"modification time": func(k *fileKey) { k.ModNs++ }, "change time": func(k *fileKey) { k.ChangNs-- },
	} {
		k := key()
		change(&k)
		plant(k, 0o600)
		if got, _ := h.sum(file); got != real {
			t.Errorf("another %s: the kept hash was given", name)
		}
	}
	plant(key(), 0o644)
	if got, _ := h.sum(file); got != real {
		t.Error("a kept file others may read was taken")
	}
	plant(key(), 0o600)
	must(t, os.WriteFile(h.Path, []byte(`{"`+file+`": {"key": `), 0o600))
	if got, _ := h.sum(file); got != real {
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
	if got, _ := h.sum(file); got != want || got == planted {
		t.Errorf("a file changed in place with its times set back: %s, want %s", got, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
