package exec

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// A guard keeps one command from changing the entries of the workspace
// that something outside the sandbox acts on later: the policy's config
// paths (policy.ConfigPaths) at the top of the workspace, the CI
// definitions there (policy.CIPaths) that the policy's allow rules do not
// name (Options.AllowCI: a command cannot be asked about one while it
// runs, as the file tools are), and toolgate's own files (Options.Protect:
// the policy file, the audit log, the state folder) when they lie inside
// it. Names at the top are compared in any letter case (a case-insensitive
// file system finds .GitHub by .github), and a CI pattern with a wildcard
// (*.Jenkinsfile) covers every name at the top that matches it, before
// and after the command. Git acts on .git (hooks, config with
// core.fsmonitor/core.hooksPath), a shell on its start-up files, an editor
// or a coding agent on its settings and instructions, toolgate on its own
// files; so a command cannot do what write_file is refused. Like Codex's
// workspace-write mode, .git is read-only as a whole: git status and log
// work, git commit inside the sandbox does not.
//
//   - An entry that exists (a folder or a regular file) is mounted
//     read-only over the writable workspace: it can be read, not changed,
//     renamed, removed or replaced.
//   - Each folder on the way to an entry (.github of
//     .github/copilot-instructions.md) is bound onto itself, writable: a
//     mount point cannot be renamed or removed (EBUSY), so the entry cannot
//     be swapped by renaming its parent, while the folder's other files stay
//     writable.
//   - An entry that does not exist cannot be covered by a mount; it is
//     recorded before the command, and if the command created it, the call
//     is a sandbox_violation naming it and what was created is removed:
//     the entry, or a link or file the command put on the way to it (the
//     link itself, never followed), then the folders it made for it if
//     they are left empty.
//   - An entry reached through a symbolic link is not mounted (the mount
//     would bring in what the link points to); its target is mounted
//     instead when it lies inside the workspace, and each component on the
//     way (Lstat, and a link's target) is compared before and after: any
//     change is a violation (it cannot be undone).
//
// The configuration files a program reads in a folder directly below the
// top, found by what that folder holds (policy.NestedConfigPaths: the
// pip.conf of a virtual environment, the .npmrc of a package), are
// guarded after the command instead, by content (nestedEntry): no mount
// covers them, since a mount is a pin (a virtual environment holding one
// could not be removed and made again, EBUSY, and the reduced sandbox
// would keep anything from being made in the package's folder), and a
// mount of the file alone would leave its folder to be renamed and made
// again around a file of the command's. Whatever the command left under
// such a name that is not the file as it was before (by device, inode,
// mode and bytes) is a violation and goes: a new entry is removed, a
// changed or removed one is put back as it was, a link made in place of
// its folder is removed. Those folders are found when the command starts,
// one level deep, and at any depth the package folders the workspace
// declares (policy.NestedConfigPaths: package.json's workspaces,
// pnpm-workspace.yaml, lerna.json, their patterns expanded through the
// workspace's os.Root, at most policy.MaxWorkspaceFolders folders); a
// declaration that cannot be expanded runs no command (workspaceError). A
// package folder reached through links inside the workspace is guarded in
// the folder they lead to, and each link crossed must stay as it was
// (policy.KeptLink, checkLink): another link, a folder or a file in its place is
// removed and the link made again; the link removed is no change. A
// folder the command makes a package or a virtual environment, or one
// deeper down that is not declared, is its own work, not guarded.
//
// Only the top of the workspace is guarded otherwise: a config name in a
// subfolder (pkg/.vscode, sub/.git, docs/AGENTS.md) is not. Finding them means
// walking the tree before and after every command: about 2 µs an entry
// with a warm cache, 22 to 35 ms for a tree of 12,800 entries (Go's
// source), twice per command, more than a short command costs; and a cap
// on entries would turn the check off in exactly the large trees. The
// policy's default deny rules still refuse the plain spellings of such
// writes (a redirection, cp, mv, …).
type guard struct {
	root     string              // the workspace, symbolic links resolved
	top      map[string][]string // the names at its top (nil: unknown) by their lower case, read at once rather than one Lstat each
	readOnly []string            // mounted read-only
	pinned   []string            // bound onto themselves, writable
	missing  []missingEntry
	watched  []watchedEntry
	nested   []nestedEntry
	links    []policy.KeptLink
	// ci maps the CI definitions guarded (relative paths) to the allow
	// rule that would let commands write them; globs are the CI patterns
	// of one name with a wildcard, matched against new names at the top.
	ci    map[string]string
	globs []string
	allow func(string) bool
}

// missingEntry is an entry that did not exist before the command: the
// components before first existed (as folders, pinned), first did not.
type missingEntry struct {
	rel   string
	first int
}

// watchedEntry is an entry reached through a link, with its state before.
type watchedEntry struct {
	rel, state string
}

// nestedEntry is a configuration file in a folder directly below the top
// or declared a package (policy.NestedConfigPaths), as it was before the command: before is nil
// when it was missing, else the file and data its bytes.
type nestedEntry struct {
	rel    string
	before fs.FileInfo
	data   []byte
}

// maxNested is the largest nested configuration file kept to be put back;
// a larger one, or one that is not a regular file, is watched (a change is
// a violation, not undone).
const maxNested = 1 << 20

// ownEntryError is an own file of toolgate that no mount can protect.
type ownEntryError struct {
	path, why string
}

func (e *ownEntryError) Error() string { return e.path + ": " + e.why }

// newGuard looks at the workspace before a command. An error means an own
// file of toolgate exists but cannot be protected: the command must not
// run.
func newGuard(root string, own []string, allowCI func(rel string) bool) (*guard, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	if allowCI == nil {
		allowCI = func(string) bool { return false }
	}
	g := &guard{root: real, top: names(real), ci: map[string]string{}, allow: allowCI}
	seen := map[string]bool{}
	for _, c := range policy.ConfigPaths() {
		if !seen[c.Name] {
			seen[c.Name] = true
			if err := g.add(c.Name, false); err != nil {
				return nil, err
			}
		}
	}
	for _, c := range policy.CIPaths() {
		list := []string{c.Pattern}
		if strings.Contains(c.Pattern, "*") { // one name: those at the top now, and later any new one
			g.globs = append(g.globs, strings.ToLower(c.Pattern))
			list = g.matching(c.Pattern)
		}
		for _, rel := range list {
			if seen[rel] || allowCI(rel) {
				continue
			}
			seen[rel] = true
			g.ci[rel] = "Edit(/" + rel + ")"
			if err := g.add(rel, false); err != nil {
				return nil, err
			}
		}
	}
	for _, p := range own {
		rel, ok := g.inside(p)
		if !ok || seen[rel] {
			continue
		}
		seen[rel] = true
		if err := g.add(rel, true); err != nil {
			return nil, err
		}
	}
	ws, err := os.OpenRoot(real)
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	nested, err := policy.NestedConfigPaths(ws)
	if err != nil {
		return nil, err
	}
	for _, c := range nested {
		for _, l := range c.Links {
			if seen[l.Name] {
				continue
			}
			seen[l.Name] = true
			k, err := policy.KeepLink(ws, l)
			if err != nil {
				return nil, err
			}
			g.links = append(g.links, k)
		}
		if seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		if n, ok := readNested(ws, c.Name); ok {
			g.nested = append(g.nested, n)
		} else {
			g.watched = append(g.watched, watchedEntry{c.Name, g.state(c.Name)})
		}
	}
	g.tidy()
	return g, nil
}

// readNested reads the nested configuration file rel ("pkg/.npmrc") as it
// is now, through root; ok false for one that cannot be kept (not a
// regular file, larger than maxNested, unreadable).
func readNested(root *os.Root, rel string) (nestedEntry, bool) {
	fi, err := root.Lstat(rel)
	if absent(err) {
		return nestedEntry{rel: rel}, true
	}
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxNested {
		return nestedEntry{}, false
	}
	f, err := root.Open(rel)
	if err != nil {
		return nestedEntry{}, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxNested+1))
	if st, serr := f.Stat(); err != nil || serr != nil || !os.SameFile(fi, st) || len(data) > maxNested {
		return nestedEntry{}, false
	}
	return nestedEntry{rel: rel, before: fi, data: data}, true
}

// absent reports whether err says a path is not there: it does not exist,
// or a folder on its way is a file.
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// inside returns p relative to the workspace, if it lies in it (as
// written, or with its links resolved as far as they exist).
func (g *guard) inside(p string) (string, bool) {
	if !filepath.IsAbs(p) {
		return "", false
	}
	cands := []string{filepath.Clean(p)}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		cands = append(cands, r)
	} else if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		cands = append(cands, filepath.Join(d, filepath.Base(p)))
	}
	for _, c := range cands {
		rel, err := filepath.Rel(g.root, c)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.ToSlash(rel), true
		}
	}
	return "", false
}

// add plans the protection of the entry rel ("a/b").
func (g *guard) add(rel string, own bool) error {
	if rel == "." {
		g.readOnly = append(g.readOnly, g.root) // toolgate's file is the workspace: nothing is writable
		return nil
	}
	comps := strings.Split(rel, "/")
	if g.top != nil && g.top[strings.ToLower(comps[0])] == nil {
		g.missing = append(g.missing, missingEntry{rel: rel, first: 0})
		return nil
	}
	p := g.root
	var ancestors []string
	for i, c := range comps {
		p = filepath.Join(p, c)
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			g.pinned = append(g.pinned, ancestors...)
			g.missing = append(g.missing, missingEntry{rel: rel, first: i})
			return nil
		case err != nil:
			if own {
				return &ownEntryError{p, err.Error()}
			}
			g.watched = append(g.watched, watchedEntry{rel, g.state(rel)})
			return nil
		case fi.Mode()&os.ModeSymlink != 0:
			g.pinned = append(g.pinned, ancestors...)
			return g.linked(rel, own)
		case i < len(comps)-1 && !fi.IsDir(): // a file where a folder would be: the entry cannot exist yet
			g.pinned = append(g.pinned, ancestors...)
			g.missing = append(g.missing, missingEntry{rel: rel, first: i + 1})
			return nil
		case i == len(comps)-1 && !fi.IsDir() && !fi.Mode().IsRegular():
			if own {
				return &ownEntryError{p, "neither a folder nor a regular file"}
			}
			g.pinned = append(g.pinned, ancestors...)
			g.watched = append(g.watched, watchedEntry{rel, g.state(rel)})
			return nil
		}
		ancestors = append(ancestors, p)
	}
	g.pinned = append(g.pinned, ancestors[:len(ancestors)-1]...)
	g.readOnly = append(g.readOnly, p)
	return nil
}

// linked plans an entry reached through a symbolic link: its target is
// protected when it lies in the workspace, and the chain is watched.
func (g *guard) linked(rel string, own bool) error {
	g.watched = append(g.watched, watchedEntry{rel, g.state(rel)})
	real, err := filepath.EvalSymlinks(filepath.Join(g.root, rel))
	if err != nil {
		return nil // a dangling link: watched
	}
	target, ok := g.inside(real)
	if !ok {
		return nil // outside the workspace, which the sandbox does not make writable
	}
	return g.add(target, own)
}

// state describes the entry rel and each component on its way, as Lstat
// sees them (through the links before them), with the links' targets.
func (g *guard) state(rel string) string {
	var b strings.Builder
	p := g.root
	for _, c := range strings.Split(rel, "/") {
		p = filepath.Join(p, c)
		b.WriteString(describe(os.Lstat(p)))
		if t, err := os.Readlink(p); err == nil {
			b.WriteString(" -> " + t)
		}
		b.WriteByte('|')
	}
	return b.String()
}

func describe(fi fs.FileInfo, err error) string {
	if err != nil {
		return "missing"
	}
	s := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
	return s + fileID(fi)
}

// tidy removes duplicates, and the pins at or below a read-only entry
// (binding them writable would open what the entry closes).
func (g *guard) tidy() {
	slices.Sort(g.readOnly)
	g.readOnly = slices.Compact(g.readOnly)
	slices.Sort(g.pinned)
	g.pinned = slices.Compact(g.pinned)
	g.pinned = slices.DeleteFunc(g.pinned, func(p string) bool {
		for _, r := range g.readOnly {
			if within(p, r) {
				return true
			}
		}
		return false
	})
}

// matching returns the names at the top that the one-name pattern
// matches, in any letter case.
func (g *guard) matching(pattern string) []string {
	var out []string
	for low, list := range g.top {
		if ok, _ := path.Match(strings.ToLower(pattern), low); ok {
			out = append(out, list...)
		}
	}
	slices.Sort(out)
	return out
}

// names returns the names in the folder dir by their lower case, or nil.
func names(dir string) map[string][]string {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer f.Close()
	list, err := f.Readdirnames(-1)
	if err != nil {
		return nil
	}
	m := make(map[string][]string, len(list))
	for _, n := range list {
		low := strings.ToLower(n)
		m[low] = append(m[low], n)
	}
	return m
}

// within reports whether p is base or lies below it.
func within(p, base string) bool {
	return p == base || strings.HasPrefix(p, base+"/")
}

// protects reports whether the host path p is a read-only entry or lies
// in one.
func (g *guard) protects(p string) bool {
	for _, r := range g.readOnly {
		if within(p, r) {
			return true
		}
	}
	return false
}

// breach is what a command did to the guarded entries it could reach.
type breach struct {
	paths    []string // the entries created or changed, relative to the workspace
	removed  []string // what was removed again, relative to the workspace
	restored []string // what was put back as it was, relative to the workspace
	kept     []string // what could not be removed
	rules    []string // the allow rules that would let commands write the CI definitions among paths
}

// check looks at the workspace after the command: an entry that is new,
// or a watched entry that changed, is a breach; what the command created
// is removed.
func (g *guard) check() breach {
	var b breach
	var root *os.Root
	top := names(g.root)
	missing := g.missing
	for low, list := range top { // new names at the top that a CI pattern with a wildcard matches
		for _, glob := range g.globs {
			if ok, _ := path.Match(glob, low); !ok {
				continue
			}
			for _, n := range list {
				if !slices.Contains(g.top[low], n) && !g.allow(n) {
					g.ci[n] = "Edit(/" + n + ")"
					missing = append(missing, missingEntry{rel: n})
				}
			}
		}
	}
	for _, m := range missing {
		if top != nil && top[strings.ToLower(strings.SplitN(m.rel, "/", 2)[0])] == nil {
			continue
		}
		planted, ok := g.created(m)
		if !ok {
			continue
		}
		b.paths = append(b.paths, m.rel)
		if root == nil {
			r, err := os.OpenRoot(g.root)
			if err != nil {
				b.kept = append(b.kept, planted)
				continue
			}
			defer r.Close()
			root = r
		}
		if err := remove(root, m, planted); err != nil {
			b.kept = append(b.kept, planted)
			continue
		}
		b.removed = append(b.removed, planted)
	}
	for _, w := range g.watched {
		if g.state(w.rel) != w.state {
			b.paths = append(b.paths, w.rel)
		}
	}
	if len(g.nested)+len(g.links) > 0 {
		if root == nil {
			if r, err := os.OpenRoot(g.root); err == nil {
				defer r.Close()
				root = r
			}
		}
		for _, n := range g.nested {
			checkNested(root, n, &b)
		}
		for _, l := range g.links {
			checkLink(root, l, &b)
		}
	}
	slices.Sort(b.paths)
	b.paths = slices.Compact(b.paths)
	for _, p := range b.paths {
		if r := g.ci[p]; r != "" {
			b.rules = append(b.rules, r)
		}
	}
	return b
}

// checkNested compares what the nested configuration file n's name
// holds now with n, through root (nil: the workspace could not be
// opened), and undoes a change into b: a link in place of its folder, or
// of a folder on the way to it, is removed; an entry where there was none
// is removed; another file, or none, where there was one is replaced by
// the file as it was. Its folder gone (removed or renamed whole, the file
// with it) is no change.
func checkNested(root *os.Root, n nestedEntry, b *breach) {
	if !way(root, n.rel, b) {
		return
	}
	now, err := root.Lstat(n.rel)
	switch {
	case absent(err) && n.before == nil:
		return
	case err != nil && !absent(err):
		b.keep(n.rel, n.rel)
		return
	case err == nil && n.before == nil:
		b.undone(n.rel, n.rel, root.RemoveAll(n.rel), &b.removed)
		return
	case err == nil && sameNested(root, n, now):
		return
	}
	b.undone(n.rel, n.rel, putBack(root, n), &b.restored)
}

// checkLink compares what stands at the name of the link l now with l,
// through root (nil: the workspace could not be opened), and undoes a
// change into b: the same link (file and target), or nothing, is no
// change; anything else (another link, a folder, a file) is removed and
// the link made again, and a link in place of a folder on its way is
// removed (way).
func checkLink(root *os.Root, l policy.KeptLink, b *breach) {
	if !way(root, l.Name, b) {
		return
	}
	now, err := root.Lstat(l.Name)
	switch {
	case absent(err):
		return
	case err != nil:
		b.keep(l.Name, l.Name)
		return
	}
	if held, _ := l.Holds(root, now); held { // unreadable: changed
		return
	}
	b.undone(l.Name, l.Name, replace(root, l.Name, func(tmp string) error { return root.Symlink(l.Target, tmp) }), &b.restored)
}

// way checks each folder on the way to rel from the top, through root
// (nil: it could not be opened), none of which was a link: one made in
// place of a folder is removed, into b. It reports whether rel is to be
// looked at: not when a folder on its way is gone (or a file: the entry
// went with it) or was changed.
func way(root *os.Root, rel string, b *breach) bool {
	if root == nil {
		b.keep(rel, rel)
		return false
	}
	dir := path.Dir(rel)
	for i := 1; i <= len(dir); i++ { // each folder on the way, from the top
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		fi, err := root.Lstat(dir[:i])
		switch {
		case absent(err):
			return false
		case err != nil:
			b.keep(rel, dir[:i])
			return false
		case fi.Mode()&fs.ModeSymlink != 0:
			b.undone(rel, dir[:i], root.Remove(dir[:i]), &b.removed)
			return false
		case !fi.IsDir():
			return false
		}
	}
	return true
}

// keep records that the guarded entry rel changed and that p could not be
// removed or put back.
func (b *breach) keep(rel, p string) {
	b.paths = append(b.paths, rel)
	b.kept = append(b.kept, p)
}

// undone records that the guarded entry rel changed and that p was undone
// into done (removed or restored), or kept when err says it could not be.
func (b *breach) undone(rel, p string, err error, done *[]string) {
	if err != nil {
		b.keep(rel, p)
		return
	}
	b.paths = append(b.paths, rel)
	*done = append(*done, p)
}

// sameNested reports whether now, the entry at n's name, is the file n
// was: the same file, mode and bytes.
func sameNested(root *os.Root, n nestedEntry, now fs.FileInfo) bool {
	if !os.SameFile(n.before, now) || now.Mode() != n.before.Mode() || now.Size() != int64(len(n.data)) {
		return false
	}
	f, err := root.Open(n.rel)
	if err != nil {
		return false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxNested+1))
	st, serr := f.Stat()
	return err == nil && serr == nil && os.SameFile(now, st) && bytes.Equal(data, n.data)
}

// putBack writes n's file as it was under its name, through root.
func putBack(root *os.Root, n nestedEntry) error {
	return replace(root, n.rel, func(tmp string) error {
		f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, n.before.Mode().Perm())
		if err != nil {
			return err
		}
		_, err = f.Write(n.data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = root.Chmod(tmp, n.before.Mode().Perm()) // the umask took its share
		}
		return err
	})
}

// replace puts what make makes at a new name beside rel, through root,
// then renames it over whatever holds rel (removed first when it is a
// folder).
func replace(root *os.Root, rel string, make func(tmp string) error) error {
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := path.Join(path.Dir(rel), ".toolgate-"+hex.EncodeToString(rnd[:]))
	err := make(tmp)
	if err == nil {
		if err = root.Rename(tmp, rel); err != nil && root.RemoveAll(rel) == nil {
			err = root.Rename(tmp, rel)
		}
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}

// created reports whether the missing entry m now exists, or something
// other than a folder now stands on its way, and returns what to remove:
// the first component the command made that is not a plain folder (a link
// or a file, removed itself, never followed), else the entry. Nothing
// before m.first can have changed: those folders were mount points.
func (g *guard) created(m missingEntry) (string, bool) {
	comps := strings.Split(m.rel, "/")
	p := g.root
	for i, c := range comps {
		p = filepath.Join(p, c)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return "", false
		}
		if i < m.first {
			if err != nil || !fi.IsDir() { // a file before the missing part, still there
				return "", false
			}
			continue
		}
		if err != nil || fi.Mode()&os.ModeSymlink != 0 || i < len(comps)-1 && !fi.IsDir() {
			return strings.Join(comps[:i+1], "/"), true
		}
	}
	return m.rel, true
}

// remove removes what the command planted for the missing entry m, then
// the folders it made on the way if they are left empty.
func remove(root *os.Root, m missingEntry, planted string) error {
	if err := root.RemoveAll(planted); err != nil {
		return err
	}
	comps := strings.Split(planted, "/")
	for i := len(comps) - 1; i > m.first; i-- {
		if root.Remove(strings.Join(comps[:i], "/")) != nil {
			break
		}
	}
	return nil
}

// breachError is the error for a command that created or changed guarded
// entries.
func breachError(b breach) *tool.Error {
	msg := "the sandbox stopped the command: it created or changed " + strings.Join(b.paths, ", ")
	if len(b.rules) < len(b.paths) {
		msg += ", which only the user may change (agent or editor settings and instructions, git's data, toolgate's own files act outside the sandbox)"
	}
	if len(b.removed) > 0 {
		msg += "; removed again: " + strings.Join(b.removed, ", ")
	}
	if len(b.restored) > 0 {
		msg += "; put back as it was: " + strings.Join(b.restored, ", ")
	}
	if len(b.kept) > 0 {
		msg += "; could not remove or put back: " + strings.Join(b.kept, ", ")
	}
	if len(b.removed)+len(b.restored) < len(b.paths) {
		msg += "; a change that could not be undone is left for the user to check"
	}
	suggest := "do not write these paths; if the task needs such a change, ask the user to make it"
	if len(b.rules) > 0 {
		msg += "; " + ciReadOnly(b.rules)
		suggest = ciSuggestion
	}
	e := tool.Errorf(tool.SandboxViolation, "%s", msg).
		WithSuggestion("%s", suggest).
		WithDetail("path", b.paths[0]).WithDetail("paths", b.paths)
	if len(b.rules) > 0 {
		e.WithDetail("allow_rules", b.rules)
	}
	if len(b.removed) > 0 {
		e.WithDetail("removed", b.removed)
	}
	if len(b.restored) > 0 {
		e.WithDetail("restored", b.restored)
	}
	if len(b.kept) > 0 {
		e.WithDetail("not_removed", b.kept)
	}
	return e
}

// workspaceError is the error for a command refused because the
// workspace's package folders could not be told from its declaration
// (policy.NestedConfigPaths): their .npmrc could not be guarded.
func workspaceError(we *policy.WorkspaceError) *tool.Error {
	e := tool.Errorf(tool.Conflict, "no command can run: the sandbox guards the .npmrc of each package folder the workspace declares, and cannot tell them: %v", we)
	if we.Link != "" {
		// No tool of the agent's makes or removes a link.
		return e.WithSuggestion("ask the user to make %s a folder, or a relative link to a folder inside the workspace, "+
			"or to leave it out of the workspace's package patterns", we.Link).
			WithDetail("path", we.Link)
	}
	e.WithSuggestion("fix %s with write_file or edit_file: a list of patterns of folders below the workspace (packages/*, apps/**), "+
		"no braces, no .. and no absolute path, matching at most %d folders", we.File, policy.MaxWorkspaceFolders).
		WithDetail("path", we.File)
	if we.Pattern != "" {
		e.WithDetail("pattern", we.Pattern)
	}
	return e
}

// ciSuggestion is what to do about a CI definition a command could not write.
const ciSuggestion = "change the CI definition with write_file or edit_file, which ask the user first; " +
	"or ask the user to add the allow rule named here to the policy, so that commands may write it"

// ciReadOnly says why a command could not write the CI definitions that
// the allow rules would open.
func ciReadOnly(rules []string) string {
	return "CI definitions run with the repository's secrets on the next push, and a command cannot ask the user while it runs, " +
		"so they are read-only for commands unless the policy allows them (allow: " + strings.Join(rules, ", ") + ")"
}

// ciRule returns the allow rule that would let commands write the path p
// (absolute, or relative to the folder dir), when it lies in a CI
// definition the guard keeps read-only; "" otherwise. Without a path, the
// words of the line that showed the refused write are tried (a shell says
// "Jenkinsfile: Read-only file system", which names no path for certain).
func (g *guard) ciRule(p, line, dir string) string {
	if p == "" {
		for _, w := range strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(" \t:'\"‘’", r) }) {
			if r := g.ciRule(w, "", dir); r != "" {
				return r
			}
		}
		return ""
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	rel, err := filepath.Rel(g.root, filepath.Clean(p))
	if err != nil {
		return ""
	}
	rel = filepath.ToSlash(rel)
	for entry, rule := range g.ci {
		if within(rel, entry) {
			return rule
		}
	}
	return ""
}

// busy finds, in a failed command's error output, a removal or rename the
// guard's mounts refused (EBUSY: "rm: cannot remove 'X': Device or
// resource busy", "mv: cannot move 'X' to 'Y': …"), of an entry it keeps
// read-only or a folder on the way to one; it returns the path as printed
// and the allow rule that would let commands change it ("" for one that
// only the user may change). The folder dir is the command's working one.
func (g *guard) busy(stderr []byte, dir string) (p, rule string, ok bool) {
	for _, line := range strings.Split(string(stderr), "\n") {
		if !strings.Contains(line, "Device or resource busy") {
			continue
		}
		m := busyRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		host := m[1]
		if !filepath.IsAbs(host) {
			host = filepath.Join(dir, host)
		}
		host = filepath.Clean(host)
		if g.protects(host) || slices.Contains(g.pinned, host) {
			return m[1], g.ciRule(m[1], "", dir), true
		}
	}
	return "", "", false
}

var busyRE = regexp.MustCompile(`cannot (?:remove|move|rename) '([^']+)'`)
