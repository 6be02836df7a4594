package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/policy"
)

// guardedAutoRun returns the protected configuration entries of write
// grant w (opened as root), configs (grantConfigs: policy.ConfigPaths at
// its top, the nested configuration of the folders directly below it and
// of the package folders it declares: the pip.conf of a virtual
// environment there when the upstream starts, the .npmrc of a package;
// with linkedConfigs, that of a folder in it a link at a grant's top leads
// to, and such a link) that the box cannot be trusted to leave as they
// are, for a watcher to look at while the upstream runs and once it ended
// (watchAutoRun, planted):
//   - those that do not exist: a mount cannot cover them, so any that
//     appears is moved out of the grant;
//   - those below a folder of the grant that exist (mounted read-only by
//     autoRunEntries): a mount covers the entry, not the folder above it,
//     which the box may rename and make again with an entry of its own
//     under the name; the entry under that name that is not the one
//     mounted (by device and inode) is moved out. An entry at the top is
//     left out: its folder is the grant, itself a mount the box cannot
//     rename.
//
// An entry behind a link that leaves the grant is missing from it too; the
// links on its way are remembered, so that only one made later is moved.
// A link through which a declared package folder is reached
// (policy.ConfigPath.Links) is an entry too: anything else in its place
// (another link, a folder of the upstream's with an .npmrc) is moved out,
// and the link made again.
// An error is a grant that cannot be checked (made unreadable): the
// upstream is then not started.
func guardedAutoRun(w string, root *os.Root, configs []policy.ConfigPath) ([]autoRunEntry, error) {
	mounted := autoRunEntries(w, configs)
	var out []autoRunEntry
	seen := map[string]bool{} // links and names, each watched once
	for _, c := range configs {
		for _, l := range c.Links {
			if seen[l.Name] {
				continue
			}
			seen[l.Name] = true
			k, err := policy.KeepLink(root, l)
			if err != nil {
				return nil, err
			}
			out = append(out, autoRunEntry{grant: w, rel: filepath.FromSlash(l.Name), reason: c.Reason, own: &k})
		}
		if seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		rel := filepath.FromSlash(c.Name)
		e := autoRunEntry{grant: w, rel: rel, reason: c.Reason}
		if fi, err := root.Lstat(rel); err == nil {
			if !strings.ContainsRune(rel, filepath.Separator) || !slices.Contains(mounted, e.path()) {
				continue
			}
			e.mounted = fi
		} else if errors.Is(err, fs.ErrPermission) {
			return nil, err // not there, or behind a link: missing from the grant
		}
		for _, p := range parents(rel) {
			if fi, err := root.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				target, err := root.Readlink(p)
				if err != nil {
					return nil, err
				}
				if e.links == nil {
					e.links = map[string]policy.KeptLink{}
				}
				e.links[p] = policy.KeptLink{Link: policy.Link{Name: p, Target: target}, Info: fi}
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// absent reports whether err says a path is not there: it does not exist,
// or a folder on its way is a file.
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// parents returns the folders on the way to rel, shortest first: a/b/c
// gives a and a/b.
func parents(rel string) []string {
	var out []string
	for i, r := range rel {
		if r == filepath.Separator {
			out = append(out, rel[:i])
		}
	}
	return out
}

// autoRunEntry is a protected entry of a write grant, missing or mounted
// read-only when the upstream started.
type autoRunEntry struct {
	grant, rel, reason string
	// mounted is the entry mounted read-only, as it was when the upstream
	// started; nil: the entry was missing.
	mounted fs.FileInfo
	// links are the links on the way to rel when the upstream started.
	links map[string]policy.KeptLink
	// own is set when the entry is itself a link, through which a
	// declared package folder is reached, as it was when the upstream
	// started: it stays, or goes, but nothing else takes its name (what
	// does is moved out, and the link made again: putLinkBack).
	// A link is the person's own only while it holds (policy.KeptLink):
	// the upstream could remove the person's link and make its own,
	// pointing elsewhere, on the same inode.
	own *policy.KeptLink
}

// path is the entry's path on the host.
func (e autoRunEntry) path() string { return filepath.Join(e.grant, e.rel) }

// find returns what to move out of root (the grant) for e: the entry
// itself when it exists inside the grant and is not the one mounted
// (compared by device and inode, following no link at the entry), or else
// a link on its way made since the upstream started (one that leaves the
// grant: the entry behind it is outside, and is never touched). Nothing is resolved outside the
// grant: os.Root refuses a path that leaves it. An error says what could
// not be checked, with the folder that cannot be searched (made
// unreadable on the way): it fails closed, as a refusal.
func (e autoRunEntry) find(root *os.Root) (string, bool, error) {
	if e.own != nil {
		return e.findLink(root)
	}
	fi, err := root.Lstat(e.rel)
	if err == nil {
		if e.mounted != nil && os.SameFile(e.mounted, fi) {
			return "", false, nil // the entry mounted, in its place
		}
		return e.rel, true, nil
	}
	if absent(err) {
		return "", false, nil
	}
	for _, p := range parents(e.rel) {
		fi, err := root.Lstat(p)
		if absent(err) {
			return "", false, nil
		}
		if err != nil {
			return filepath.Dir(p), false, err // the folder that cannot be searched
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if old, ok := e.links[p]; ok {
				held, err := old.Holds(root, fi)
				if err != nil {
					return filepath.Dir(p), false, err
				}
				if held {
					return "", false, nil // the user's own link, there before the upstream
				}
			}
			return p, true, nil
		}
	}
	return filepath.Dir(e.rel), false, err
}

// findLink is find for an entry that is a link (e.own): a link in place of
// a folder on its way (there were none) is moved out, or else what stands
// at its name when it is not the link as it was (by device and inode, and
// target).
func (e autoRunEntry) findLink(root *os.Root) (string, bool, error) {
	for _, p := range append(parents(e.rel), e.rel) {
		fi, err := root.Lstat(p)
		switch {
		case absent(err):
			return "", false, nil
		case err != nil:
			return filepath.Dir(p), false, err
		case p == e.rel:
			held, err := e.own.Holds(root, fi)
			if err != nil {
				return filepath.Dir(p), false, err
			}
			if held {
				return "", false, nil
			}
			return p, true, nil
		case fi.Mode()&fs.ModeSymlink != 0:
			return p, true, nil
		}
	}
	return "", false, nil
}

// planted moves the entries of missing that now exist (for an entry
// mounted read-only: another file under its name) into quarantine (a
// folder of its own under toolgate's state folder, made on first use) and
// returns, for each, the refusal to audit. Each is reached through the
// grant's os.Root and moved by its name in the folder that holds it, so a
// link is moved as a link and nothing outside the grant is read, moved or
// removed. An entry that cannot be renamed (another file system) is copied
// into quarantine, then removed.
func planted(missing []autoRunEntry, quarantine string, seq *int) []autoRunMoved {
	var out []autoRunMoved
	roots := map[string]*os.Root{}
	defer func() {
		for _, r := range roots {
			r.Close()
		}
	}()
	unchecked := map[string]bool{} // each path that cannot be checked is said once a look
	for _, m := range missing {
		root, ok := roots[m.grant]
		if !ok {
			var err error
			if root, err = os.OpenRoot(m.grant); absent(err) {
				continue // the grant itself is gone: nothing can be planted in it
			} else if err != nil {
				if !unchecked[m.grant] {
					unchecked[m.grant] = true
					out = append(out, autoRunMoved{entry: m, target: m.grant, unchecked: true, err: err})
				}
				continue
			}
			roots[m.grant] = root
		}
		rel, ok, err := m.find(root)
		if err != nil {
			if p := filepath.Join(m.grant, rel); !unchecked[p] {
				unchecked[p] = true
				out = append(out, autoRunMoved{entry: m, target: p, unchecked: true, err: err})
			}
			continue
		}
		if !ok {
			continue
		}
		*seq++
		dst := filepath.Join(quarantine, time.Now().UTC().Format("20060102T150405Z")+"-"+strconv.Itoa(*seq), filepath.Base(rel))
		mv := autoRunMoved{entry: m, target: filepath.Join(m.grant, rel), to: dst}
		mv.partial, mv.err = moveOut(root, rel, dst)
		if rel != m.rel {
			mv.link = true
		}
		if m.own != nil && !mv.link && mv.err == nil {
			mv.putBack = putLinkBack(root, m.own)
		}
		out = append(out, mv)
	}
	return out
}

// putLinkBack makes the link k again, through root, where what took its
// name was moved out, and keeps it as the one now there: the link is the
// person's, as exec's guard puts a package link back after a command.
// It leads where it led: to the folder whose configuration is guarded.
// An error (something made in its place meanwhile: the next look moves
// it) leaves k as it was.
func putLinkBack(root *os.Root, k *policy.KeptLink) error {
	if err := root.Symlink(k.Target, filepath.FromSlash(k.Name)); err != nil {
		return err
	}
	now, err := policy.KeepLink(root, k.Link)
	if err != nil {
		return err
	}
	*k = now
	return nil
}

// The most of one planted entry that is copied into quarantine when it
// cannot be renamed there (another file system): entries (files,
// folders, links) and bytes. What is beyond is not copied; the entry is
// removed from the grant all the same, and its record says so.
const (
	maxQuarantineEntries = 4096
	maxQuarantineBytes   = 64 << 20
)

// errQuarantineFull is copyTree's error past maxQuarantineEntries or
// maxQuarantineBytes.
var errQuarantineFull = fmt.Errorf("larger than the quarantine keeps of an entry (%d files and folders, %d MiB)", maxQuarantineEntries, maxQuarantineBytes>>20)

// moveOut moves rel, inside root, to dst (outside it). partial says that
// rel was removed but only its part within the quarantine's bound was
// copied to dst.
func moveOut(root *os.Root, rel, dst string) (partial bool, err error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return false, err
	}
	dir, base := filepath.Split(rel)
	if dir == "" {
		dir = "."
	}
	parent, err := root.OpenRoot(dir)
	if err != nil {
		return false, err
	}
	defer parent.Close()
	if err := renameOut(parent, base, dst); err == nil {
		return false, nil
	}
	err = copyTree(parent, base, dst)
	if err != nil && !errors.Is(err, errQuarantineFull) {
		return false, err
	}
	return err != nil, parent.RemoveAll(base)
}

// autoRunMoved is one planted entry and where it went.
type autoRunMoved struct {
	entry  autoRunEntry
	target string // what was moved: the entry, or a link on its way
	link   bool   // target is a link on the entry's way
	// unchecked: target (the grant, or a folder on the entry's way) could
	// not be read, so what it holds is not known (err says why).
	unchecked bool
	to        string
	// partial: target was removed, but it was larger than the quarantine
	// keeps of an entry, and to holds only a part of it.
	partial bool
	err     error
	// putBack is why the entry's own link (entry.own) could not be made
	// again once what took its name was moved out; nil: it was.
	putBack error
}

// rule says what happened, for the audit record.
func (m autoRunMoved) rule() string {
	if m.unchecked {
		return fmt.Sprintf("write: %s, inside the write grant %s on the way to the auto-run entry %s, could not be checked (%v): made unreadable, it counts as refused until it can be read", m.target, m.entry.grant, m.entry.path(), m.err)
	}
	r := fmt.Sprintf("write: an auto-run entry created inside the write grant %s (%s); isolation.write {path, config: true} allows it", m.entry.grant, m.entry.reason)
	switch {
	case m.entry.own != nil && !m.link:
		r = fmt.Sprintf("write: the link %s inside the write grant %s, through which a folder whose configuration is guarded (a package, a virtual environment) is reached, was pointed elsewhere or replaced (%s)", m.entry.path(), m.entry.grant, m.entry.reason)
	case m.link:
		r = fmt.Sprintf("write: a link made inside the write grant %s on the way to the auto-run entry %s, leading out of the grant (%s)", m.entry.grant, m.entry.path(), m.entry.reason)
	case m.entry.mounted != nil:
		r = fmt.Sprintf("write: the auto-run entry %s, read-only in the box, was replaced inside the write grant %s by another file of that name (a folder on its way renamed and made again; %s)", m.entry.path(), m.entry.grant, m.entry.reason)
	}
	switch {
	case m.err != nil:
		return r + "; it could not be moved away: " + m.err.Error()
	case m.partial:
		r += "; removed: it is " + errQuarantineFull.Error() + ", so " + m.to + " holds only its first part"
	default:
		r += "; moved to " + m.to
	}
	if m.entry.own != nil && !m.link {
		if m.putBack != nil {
			return r + "; the link could not be made again: " + m.putBack.Error()
		}
		r += "; the link was made again"
	}
	return r
}

// copyTree copies a file, a link (as a link) or a folder from rel inside
// root to dst, never following a link, up to maxQuarantineEntries entries
// and maxQuarantineBytes bytes (errQuarantineFull past either: what was
// copied stays).
func copyTree(root *os.Root, rel, dst string) error {
	fi, err := root.Lstat(rel)
	if err != nil {
		return err
	}
	entries, bytes := 0, int64(0)
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := root.Readlink(rel)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	return fs.WalkDir(root.FS(), filepath.ToSlash(rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entries++; entries > maxQuarantineEntries {
			return errQuarantineFull
		}
		to := filepath.Join(dst, strings.TrimPrefix(strings.TrimPrefix(p, filepath.ToSlash(rel)), "/"))
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := root.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.IsDir():
			return os.MkdirAll(to, 0o700)
		case d.Type().IsRegular():
			in, err := root.Open(p) // a link swapped in meanwhile stays inside the grant
			if err != nil {
				return err
			}
			defer in.Close()
			out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			n, err := io.Copy(out, io.LimitReader(in, maxQuarantineBytes-bytes+1))
			bytes += n
			if err == nil && bytes > maxQuarantineBytes {
				err = errQuarantineFull
			}
			if err != nil {
				out.Close()
				return err
			}
			return out.Close()
		}
		return nil // a socket or a device: not kept
	})
}
