package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/goccy/go-yaml"
)

// MaxWorkspaceFolders bounds the folders NestedConfigPaths looks at
// while it expands a project's workspace patterns (each folder a pattern
// reaches counts, matched or not): a declaration that reaches more is
// refused rather than looked at partly.
const MaxWorkspaceFolders = 256

// maxDeclaration is the largest declaration file read (package.json,
// pnpm-workspace.yaml, lerna.json).
const maxDeclaration = 1 << 20

// WorkspaceError says why a project's workspace declaration could not be
// expanded: its file could not be read or parsed, a pattern has a form
// that is not expanded (braces, .., an absolute path), or the patterns
// reach more than MaxWorkspaceFolders folders.
type WorkspaceError struct {
	File    string // the declaration, relative to the project: "package.json"
	Pattern string // the pattern refused, if one is
	Link    string // the link a pattern reached that cannot be followed, if one is: "packages/app"
	Why     string
}

func (e *WorkspaceError) Error() string {
	var msg string
	if e.File != "" {
		msg = e.File + ": "
	}
	if e.Pattern != "" {
		msg += fmt.Sprintf("workspace pattern %q: ", e.Pattern)
	}
	if e.Link != "" {
		msg += e.Link + ": "
	}
	return msg + e.Why
}

// NestedConfigPaths returns the configuration files that programs read in
// the folders below the top of the project at r, found by what those
// folders hold (a virtual environment's pip.conf, a package's .npmrc; see
// nestedConfigs), present or not, as ConfigPaths relative to r: in each
// folder directly below the top, then in each package folder the project
// declares, at any depth (declared, whose error it returns).
// A folder at the top that is a link is resolved inside r as a declared
// one is (its configuration named in the folder it leads to, the links
// crossed its ConfigPath.Links); one that leads out of r, or cannot be
// followed, is not looked in: what it leads to is not the project's (it
// is guarded, if at all, as its own place is; a box guards a folder in one
// of its write grants that such a link leads to with FolderConfigPaths),
// and a link out at the top is common (a shared virtual environment, a
// data folder), so it is not refused.
// Everything is read through r: a folder swapped for a link while it is
// looked at cannot lead it out of the project. The file tools refuse
// these names at any depth (ConfigPaths holds them); this is for what
// guards only a workspace's top and its declared packages.
func NestedConfigPaths(r *os.Root) ([]ConfigPath, error) {
	w := &workspace{root: r, seen: map[string]bool{}}
	if f, err := r.Open("."); err == nil {
		entries, _ := f.ReadDir(-1)
		f.Close()
		slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, e := range entries {
			switch {
			case e.IsDir():
				w.match(e.Name(), nil)
			case e.Type()&fs.ModeSymlink != 0:
				if f, ok, err := w.folder(".", e.Name(), nil); err == nil && ok {
					w.match(f.dir, f.links)
				}
			}
		}
	}
	if err := w.declared(); err != nil {
		return nil, err
	}
	return w.out, nil
}

// declared adds the configuration files that programs read in the
// package folders the project at w.root declares as its
// workspace, at any depth (a monorepo's packages/app/.npmrc), found as
// NestedConfigPaths finds them in the folders directly below the top:
// by what each folder holds (nestedConfigs), present or not, relative to
// the root. The declarations read are package.json's workspaces (a list of
// patterns, or an object whose packages is one), pnpm-workspace.yaml's
// packages and lerna.json's packages. A pattern is a slash-separated path
// below root whose parts are names, path.Match wildcards (*, ?, [...]) or
// ** (any number of folders); one led by ! excludes folders from the
// others in npm and pnpm, and is ignored here (guarding more is safe).
// Folders are read through root (the project), never node_modules nor
// names led by a dot unless the pattern's part is. A folder a pattern
// reaches that is a symbolic link is resolved inside root, one link at a
// time (a relative target, at most maxLinkHops links): the configuration
// is named in the folder it leads to, with no link on its way, and the
// links crossed are its ConfigPath.Links. ** does not go down a link (as
// globs do not), but matches the folder a link leads to.
//
// A declaration that cannot be read or parsed, a pattern with braces,
// parentheses, a backslash, a .. part or a leading /, a link a pattern
// reaches that leads out of root (an absolute target, .. above the top)
// or cannot be read, and patterns that reach more than
// MaxWorkspaceFolders folders are a *WorkspaceError: the caller cannot
// tell which folders npm or pnpm would treat as packages, and should fail
// closed. A project declaring nothing adds nothing.
func (w *workspace) declared() error {
	for _, d := range []struct {
		file  string
		parse func([]byte) ([]string, error)
	}{
		{"package.json", npmWorkspaces},
		{"pnpm-workspace.yaml", packagesList(yaml.Unmarshal)},
		{"lerna.json", packagesList(json.Unmarshal)},
	} {
		data, err := readDeclaration(w.root, d.file)
		if err != nil {
			return &WorkspaceError{File: d.file, Why: err.Error()}
		}
		if data == nil {
			continue
		}
		patterns, err := d.parse(data)
		if err != nil {
			return &WorkspaceError{File: d.file, Why: err.Error()}
		}
		for _, p := range patterns {
			if err := w.expand(p); err != nil {
				we, ok := err.(*WorkspaceError)
				if !ok {
					we = &WorkspaceError{Why: err.Error()}
				}
				we.File, we.Pattern = d.file, p
				return we
			}
		}
	}
	return nil
}

// readDeclaration returns the bytes of the declaration file name, nil
// when there is none (io.ReadAll never returns nil).
func readDeclaration(r *os.Root, name string) ([]byte, error) {
	f, err := r.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxDeclaration+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxDeclaration {
		return nil, fmt.Errorf("larger than %d bytes", maxDeclaration)
	}
	return data, nil
}

// npmWorkspaces returns package.json's workspaces: a list, or an object
// with a list named packages (yarn's form).
func npmWorkspaces(data []byte) ([]string, error) {
	var pkg struct {
		Workspaces json.RawMessage `json:"workspaces"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		return nil, err
	}
	ws := pkg.Workspaces
	if len(ws) == 0 || string(ws) == "null" {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(ws, &list); err == nil {
		return list, nil
	}
	var obj struct {
		Packages []string `json:"packages"`
	}
	if err := json.Unmarshal(ws, &obj); err != nil {
		return nil, errors.New("workspaces is neither a list of patterns nor an object with a list named packages")
	}
	return obj.Packages, nil
}

// packagesList reads a declaration's list named packages with unmarshal
// (pnpm-workspace.yaml's YAML, lerna.json's JSON).
func packagesList(unmarshal func([]byte, any) error) func([]byte) ([]string, error) {
	return func(data []byte) ([]string, error) {
		var decl struct {
			Packages []string `json:"packages" yaml:"packages"`
		}
		if err := unmarshal(data, &decl); err != nil {
			return nil, err
		}
		return decl.Packages, nil
	}
}

// maxLinkHops bounds the links followed to resolve one package folder
// (Linux's own bound on one path is 40).
const maxLinkHops = 40

// workspace expands patterns below root into the nested configuration of
// the folders they match.
type workspace struct {
	root    *os.Root
	visited int
	seen    map[string]bool // folders matched, with the links that led there
	out     []ConfigPath
}

// expand adds the nested configuration of the folders pattern matches.
func (w *workspace) expand(pattern string) error {
	p := strings.TrimSpace(pattern)
	if strings.HasPrefix(p, "!") {
		return nil
	}
	switch {
	case p == "":
		return errors.New("empty")
	case strings.HasPrefix(p, "/"):
		return errors.New("an absolute path: a pattern names folders below the project")
	case strings.ContainsAny(p, "{}()\\"):
		return errors.New("braces, parentheses and backslashes are not expanded: list each folder pattern on its own")
	}
	var parts []string
	for _, part := range strings.Split(p, "/") {
		switch part {
		case "", ".":
			continue
		case "..":
			return errors.New("a .. part leaves the project")
		}
		if _, err := path.Match(part, ""); err != nil {
			return err
		}
		parts = append(parts, part)
	}
	return w.walk(".", nil, parts)
}

// walk matches parts below the folder dir (relative to root, no link on
// its way), reached through links (nil: none).
func (w *workspace) walk(dir string, links []Link, parts []string) error {
	if len(parts) == 0 {
		w.match(dir, links)
		return nil
	}
	part := parts[0]
	if part == "**" {
		if err := w.walk(dir, links, parts[1:]); err != nil { // none
			return err
		}
		// One more: a folder, not a link (globs do not go down links for
		// **), but a link is matched as the folder it leads to.
		return w.each(dir, links, func(name string) bool { return name[0] != '.' }, func(f folder) error {
			if f.link {
				return w.walk(f.dir, f.links, parts[1:])
			}
			return w.walk(f.dir, f.links, parts)
		})
	}
	if !strings.ContainsAny(part, "*?[") {
		f, ok, err := w.folder(dir, part, links)
		if err != nil || !ok {
			return err
		}
		if err := w.count(); err != nil {
			return err
		}
		return w.walk(f.dir, f.links, parts[1:])
	}
	return w.each(dir, links, func(name string) bool {
		ok, _ := path.Match(part, name)
		return ok && (name[0] != '.' || part[0] == '.')
	}, func(f folder) error { return w.walk(f.dir, f.links, parts[1:]) })
}

// folder is a folder a pattern's part reached: dir relative to root with
// no link on its way, the links that led there, and whether the part named
// a link.
type folder struct {
	dir   string
	links []Link
	link  bool
}

// each calls fn on the folders in dir (not node_modules; a link resolved)
// whose name keep accepts.
func (w *workspace) each(dir string, links []Link, keep func(string) bool, fn func(folder) error) error {
	f, err := w.root.Open(dir)
	if err != nil {
		return nil // gone, or not a folder
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if !(e.IsDir() || e.Type()&fs.ModeSymlink != 0) || e.Name() == "node_modules" || !keep(e.Name()) {
			continue
		}
		sub, ok := folder{dir: path.Join(dir, e.Name()), links: links}, true
		if !e.IsDir() { // a link: resolved
			var err error
			if sub, ok, err = w.folder(dir, e.Name(), links); err != nil {
				return err
			}
		}
		if !ok {
			continue
		}
		if err := w.count(); err != nil {
			return err
		}
		if err := fn(sub); err != nil {
			return err
		}
	}
	return nil
}

// folder returns the folder name in dir (no link on its way), ok false
// when it is missing or not a folder; a link is resolved (resolve).
func (w *workspace) folder(dir, name string, links []Link) (folder, bool, error) {
	sub := path.Join(dir, name)
	fi, err := w.root.Lstat(sub)
	switch {
	case err != nil:
		return folder{}, false, nil // missing, or cannot be looked at: no folder (a package without a marker seen)
	case fi.IsDir():
		return folder{dir: sub, links: links}, true, nil
	case fi.Mode()&fs.ModeSymlink == 0:
		return folder{}, false, nil
	}
	real, crossed, err := w.resolve(sub)
	if err != nil || real == "" {
		return folder{}, false, err
	}
	return folder{dir: real, links: append(slices.Clone(links), crossed...), link: true}, true, nil
}

// resolve follows the link at rel (no link on the way to it) to the folder
// it leads to, inside root, one component at a time: it returns that
// folder relative to root with no link on its way, and each link crossed
// with the target it read (rel first), or "" when the link leads to nothing or to a file. A link
// that leads out of root (an absolute target, or .. above the top), one
// that cannot be read, or more than maxLinkHops links are an error: npm
// would read the package's .npmrc where it cannot be told, so the caller
// fails closed.
func (w *workspace) resolve(rel string) (string, []Link, error) {
	cur, rest := path.Dir(rel), []string{path.Base(rel)}
	var crossed []Link
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if cur == "." {
				return "", nil, linkError(rel, "leads out of the project")
			}
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		fi, err := w.root.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			return "", nil, nil
		case err != nil:
			return "", nil, linkError(rel, "cannot be followed: "+err.Error())
		case fi.Mode()&fs.ModeSymlink == 0:
			if !fi.IsDir() {
				return "", nil, nil
			}
			cur = next
			continue
		}
		if len(crossed) == maxLinkHops {
			return "", nil, linkError(rel, fmt.Sprintf("goes through more than %d links", maxLinkHops))
		}
		target, err := w.root.Readlink(next)
		if err != nil {
			return "", nil, linkError(rel, "cannot be read: "+err.Error())
		}
		if target == "" || strings.HasPrefix(target, "/") {
			return "", nil, linkError(rel, "leads to an absolute path ("+target+")")
		}
		crossed = append(crossed, Link{next, target})
		rest = append(strings.Split(target, "/"), rest...)
	}
	return cur, crossed, nil
}

// linkError is resolve's error for the link rel: the folder behind it
// cannot be told.
func linkError(rel, why string) *WorkspaceError {
	return &WorkspaceError{Link: rel, Why: "a package folder is a symbolic link that " + why + ": only a relative link to a folder inside the project is followed"}
}

// KeepLink returns the link l as it is now in root, to be kept so: an
// error (a *WorkspaceError naming the link) when it cannot be read or no
// longer reads l.Target, since the folder behind it is then not the one
// whose configuration was found.
func KeepLink(root *os.Root, l Link) (KeptLink, error) {
	fi, err := root.Lstat(l.Name)
	if err == nil && fi.Mode()&fs.ModeSymlink == 0 {
		err = errors.New("no longer a link")
	}
	if err == nil {
		var target string
		if target, err = root.Readlink(l.Name); err == nil && target != l.Target {
			err = fmt.Errorf("it led to %q, now to %q", l.Target, target)
		}
	}
	if err != nil {
		return KeptLink{}, &WorkspaceError{Link: l.Name, Why: "a link to a package folder changed while it was looked at: " + err.Error()}
	}
	return KeptLink{l, fi}, nil
}

// KeptLink is a link as it was when a guard took it: its name, its target
// and the file.
type KeptLink struct {
	Link
	Info fs.FileInfo
}

// Holds reports whether now (what Lstat gives at k.Name) is still the link
// kept: a link, the same file and reading the same target (a file system
// reuses a removed link's inode for the next one made, ext4 at once, so
// the file alone does not tell). err: it could not be read.
func (k KeptLink) Holds(root *os.Root, now fs.FileInfo) (bool, error) {
	if now.Mode()&fs.ModeSymlink == 0 || !os.SameFile(k.Info, now) {
		return false, nil
	}
	target, err := root.Readlink(k.Name)
	return err == nil && target == k.Target, err
}

func (w *workspace) count() error {
	if w.visited++; w.visited > MaxWorkspaceFolders {
		return fmt.Errorf("reaches more than %d folders", MaxWorkspaceFolders)
	}
	return nil
}

// match adds the nested configuration of the folder dir, by the markers
// it holds, each with the links that led there.
func (w *workspace) match(dir string, links []Link) {
	key := dir
	for _, l := range links {
		key += "\x00" + l.Name + "\x00" + l.Target
	}
	if dir == "." || w.seen[key] {
		return
	}
	w.seen[key] = true
	n := len(w.out)
	w.out = markedConfigs(w.out, w.root.Lstat, dir)
	for i := n; i < len(w.out); i++ {
		w.out[i].Links = links
	}
}
