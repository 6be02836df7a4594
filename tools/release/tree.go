package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"
)

// A tree is the file system of an image layer being assembled, by clean
// relative path ("usr/bin/toolgate").
type tree struct {
	files map[string]*entry
}

type entry struct {
	hdr  tar.Header
	data []byte // a regular file's content
	from string // what put it there (a Debian package), for conflicts
}

func newTree() *tree { return &tree{files: map[string]*entry{}} }

// clean turns an archive's name ("./bin/sh", "/etc/") into the tree's
// ("bin/sh", "etc"), or "" for the root.
func clean(name string) string {
	name = strings.Trim(path.Clean("/"+name), "/")
	return name
}

// add puts e at its name, making the folders above it. A folder added
// twice is kept as first added; a file or link added twice must be the
// same both times (two Debian packages shipping one path differently is
// an error, never a silent choice).
func (t *tree) add(e *entry) error {
	name := clean(e.hdr.Name)
	if name == "" {
		return nil
	}
	e.hdr.Name = name
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		if old, ok := t.files[dir]; ok {
			if old.hdr.Typeflag != tar.TypeDir {
				return fmt.Errorf("%s (%s) is under %s, which %s made a %c, not a folder", name, e.from, dir, old.from, old.hdr.Typeflag)
			}
			continue
		}
		t.files[dir] = &entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755}, from: e.from}
	}
	old, ok := t.files[name]
	if !ok {
		t.files[name] = e
		return nil
	}
	switch {
	case old.hdr.Typeflag == tar.TypeDir && e.hdr.Typeflag == tar.TypeDir:
		return nil
	case old.hdr.Typeflag == e.hdr.Typeflag && old.hdr.Linkname == e.hdr.Linkname && old.hdr.Mode == e.hdr.Mode && bytes.Equal(old.data, e.data):
		return nil
	}
	return fmt.Errorf("%s is shipped differently by %s and %s", name, old.from, e.from)
}

// dir adds a folder owned by uid:gid.
func (t *tree) dir(name string, mode int64, uid, gid int) error {
	return t.add(&entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: uid, Gid: gid}, from: "release"})
}

// file adds a regular file owned by root.
func (t *tree) file(name string, mode int64, data []byte) error {
	return t.add(&entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))}, data: data, from: "release"})
}

// symlink adds name → target.
func (t *tree) symlink(name, target string) error {
	return t.add(&entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}, from: "release"})
}

// readTar adds every entry of an archive, named by from; keep, when not
// nil, chooses the entries (by clean name) and may rename them.
func (t *tree) readTar(r io.Reader, from string, keep func(h *tar.Header) bool) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeDir, tar.TypeSymlink, tar.TypeLink:
		default:
			return fmt.Errorf("%s: %s is a %c, which an image layer built here does not carry", from, h.Name, h.Typeflag)
		}
		h.Name = clean(h.Name)
		if h.Typeflag == tar.TypeLink {
			h.Linkname = clean(h.Linkname)
		}
		if h.Name == "" || (keep != nil && !keep(h)) {
			continue
		}
		e := &entry{hdr: tar.Header{Typeflag: h.Typeflag, Name: h.Name, Linkname: h.Linkname, Mode: h.Mode, Uid: h.Uid, Gid: h.Gid, Size: h.Size}, from: from}
		if h.Typeflag == tar.TypeReg {
			if e.data, err = io.ReadAll(tr); err != nil {
				return fmt.Errorf("%s: %s: %w", from, h.Name, err)
			}
		} else {
			e.hdr.Size = 0
		}
		if err := t.add(e); err != nil {
			return err
		}
	}
}

// writeTar writes the tree as a tar archive that depends on nothing but
// its content: entries sorted by name (hard links last, after what they
// name), every time mtime, no user or group names.
func (t *tree) writeTar(w io.Writer, mtime time.Time) error {
	names := make([]string, 0, len(t.files))
	for n := range t.files {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := t.files[names[i]].hdr.Typeflag == tar.TypeLink, t.files[names[j]].hdr.Typeflag == tar.TypeLink
		if a != b {
			return b
		}
		return names[i] < names[j]
	})
	tw := tar.NewWriter(w)
	for _, n := range names {
		e := t.files[n]
		h := e.hdr
		h.ModTime = mtime
		h.Format = tar.FormatPAX
		if h.Typeflag == tar.TypeDir {
			h.Name += "/"
		}
		if h.Typeflag == tar.TypeLink {
			if target, ok := t.files[h.Linkname]; !ok || target.hdr.Typeflag != tar.TypeReg {
				return fmt.Errorf("%s (%s) is a hard link to %s, which is not a file here", n, e.from, h.Linkname)
			}
		}
		if err := tw.WriteHeader(&h); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	return tw.Close()
}
