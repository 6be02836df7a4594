package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/goccy/go-yaml"
)

// MaxWorkspaceFolders bounds the folders WorkspaceConfigPaths looks at
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
	Why     string
}

func (e *WorkspaceError) Error() string {
	if e.Pattern != "" {
		return fmt.Sprintf("%s: workspace pattern %q: %s", e.File, e.Pattern, e.Why)
	}
	return e.File + ": " + e.Why
}

// WorkspaceConfigPaths returns the configuration files that programs
// read in the package folders the project at root declares as its
// workspace, at any depth (a monorepo's packages/app/.npmrc), found as
// NestedConfigPaths finds them in the folders directly below the top:
// by what each folder holds (nestedConfigs), present or not, relative to
// root. The declarations read are package.json's workspaces (a list of
// patterns, or an object whose packages is one), pnpm-workspace.yaml's
// packages and lerna.json's packages. A pattern is a slash-separated path
// below root whose parts are names, path.Match wildcards (*, ?, [...]) or
// ** (any number of folders); one led by ! excludes folders from the
// others in npm and pnpm, and is ignored here (guarding more is safe).
// Folders are read through os.OpenRoot(root): a link is never followed
// (a package folder that is a link is not looked in), nor are
// node_modules or names led by a dot unless the pattern's part is.
//
// A declaration that cannot be read or parsed, a pattern with braces,
// parentheses, a backslash, a .. part or a leading /, and patterns that
// reach more than MaxWorkspaceFolders folders are a *WorkspaceError: the
// caller cannot tell which folders npm or pnpm would treat as packages,
// and should fail closed. A project declaring nothing returns nil, nil.
func WorkspaceConfigPaths(root string) ([]ConfigPath, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	w := &workspace{root: r, seen: map[string]bool{}}
	for _, d := range []struct {
		file  string
		parse func([]byte) ([]string, error)
	}{
		{"package.json", npmWorkspaces},
		{"pnpm-workspace.yaml", pnpmWorkspaces},
		{"lerna.json", lernaWorkspaces},
	} {
		data, err := readDeclaration(r, d.file)
		if err != nil {
			return nil, &WorkspaceError{File: d.file, Why: err.Error()}
		}
		if data == nil {
			continue
		}
		patterns, err := d.parse(data)
		if err != nil {
			return nil, &WorkspaceError{File: d.file, Why: err.Error()}
		}
		for _, p := range patterns {
			if err := w.expand(p); err != nil {
				return nil, &WorkspaceError{File: d.file, Pattern: p, Why: err.Error()}
			}
		}
	}
	return w.out, nil
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

func pnpmWorkspaces(data []byte) ([]string, error) {
	var decl struct {
		Packages []string `yaml:"packages"`
	}
	if err := yaml.Unmarshal(data, &decl); err != nil {
		return nil, err
	}
	return decl.Packages, nil
}

func lernaWorkspaces(data []byte) ([]string, error) {
	var decl struct {
		Packages []string `json:"packages"`
	}
	if err := json.Unmarshal(data, &decl); err != nil {
		return nil, err
	}
	return decl.Packages, nil
}

// workspace expands patterns below root into the nested configuration of
// the folders they match.
type workspace struct {
	root    *os.Root
	visited int
	seen    map[string]bool // folders matched
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
	return w.walk(".", parts)
}

// walk matches parts below the folder dir (relative to root, no link on
// its way).
func (w *workspace) walk(dir string, parts []string) error {
	if len(parts) == 0 {
		w.match(dir)
		return nil
	}
	part := parts[0]
	if part == "**" {
		if err := w.walk(dir, parts[1:]); err != nil { // none
			return err
		}
		return w.each(dir, func(name string) bool { return name[0] != '.' }, func(sub string) error {
			return w.walk(sub, parts) // one more
		})
	}
	if !strings.ContainsAny(part, "*?[") {
		sub := path.Join(dir, part)
		if fi, err := w.root.Lstat(sub); err != nil || !fi.IsDir() {
			return nil // missing, a file or a link
		}
		if err := w.count(); err != nil {
			return err
		}
		return w.walk(sub, parts[1:])
	}
	return w.each(dir, func(name string) bool {
		ok, _ := path.Match(part, name)
		return ok && (name[0] != '.' || part[0] == '.')
	}, func(sub string) error { return w.walk(sub, parts[1:]) })
}

// each calls fn on the folders in dir (not links, not node_modules) whose
// name keep accepts.
func (w *workspace) each(dir string, keep func(string) bool, fn func(string) error) error {
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
		if !e.IsDir() || e.Name() == "node_modules" || !keep(e.Name()) {
			continue
		}
		if err := w.count(); err != nil {
			return err
		}
		if err := fn(path.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func (w *workspace) count() error {
	if w.visited++; w.visited > MaxWorkspaceFolders {
		return fmt.Errorf("reaches more than %d folders", MaxWorkspaceFolders)
	}
	return nil
}

// match adds the nested configuration of the folder dir, by the markers
// it holds.
func (w *workspace) match(dir string) {
	if dir == "." || w.seen[dir] {
		return
	}
	w.seen[dir] = true
	w.out = markedConfigs(w.out, w.root.Lstat, dir)
}
