package fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/toolsets/fs/internal/ignore"
)

// MaxListDepth is the deepest list_directory goes.
const MaxListDepth = 10

// maxIgnoreBytes caps a .gitignore file that is read.
const maxIgnoreBytes = 1 << 20

// ListDirectoryIn are list_directory's parameters.
type ListDirectoryIn struct {
	Path          string `json:"path,omitempty" default:"." jsonschema:"the folder to list, relative to the workspace root or absolute inside a root"`
	Depth         int    `json:"depth,omitempty" default:"1" minimum:"1" maximum:"10" jsonschema:"how many levels to list: 1 for the folder's own entries, 2 to include its subfolders' entries, …"`
	IncludeHidden bool   `json:"include_hidden,omitempty" default:"false" jsonschema:"also list names starting with a dot"`
}

// Entry is one listed file or folder.
type Entry struct {
	Path     string    `json:"path" jsonschema:"relative to the listed folder; folders end with /"`
	Type     string    `json:"type" jsonschema:"file, directory, symlink, fifo, socket, device or other"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	Target   string    `json:"target,omitempty" jsonschema:"where a symbolic link points"`
}

// ListDirectoryOut is list_directory's structured result.
type ListDirectoryOut struct {
	Path      string  `json:"path"`
	Entries   []Entry `json:"entries"`
	Truncated bool    `json:"truncated"`
	Ignored   int     `json:"ignored" jsonschema:"entries left out because .gitignore excludes them"`
}

const listDirectoryDesc = `List a folder: each entry's type, size and modification time, sorted by name, folders marked with a trailing "/". depth lists subfolders too (1 = this folder only). Hidden names (starting with ".") are left out unless include_hidden is true; entries excluded by .gitignore are always left out (their number is reported), and ".git" is never entered. Symbolic links are shown with their target and not followed. At most 1000 entries are returned; a note says when the list was cut.
Use it to explore the layout of a project. To find files by name pattern or text across many folders, use search_files; for details on one file, get_file_info.
Example: {"path": "src", "depth": 2}`

func (s *Set) listDirectoryTool() tool.Tool {
	return newTool("list_directory", listDirectoryDesc, ListDirectoryOut{}, s.listDirectory,
		tool.WithTitle("List directory"), tool.ReadOnly())
}

func (s *Set) listDirectory(ctx context.Context, in ListDirectoryIn) (tool.Result, error) {
	if in.Depth < 1 || in.Depth > MaxListDepth {
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "depth must be between 1 and %d, got %d", MaxListDepth, in.Depth).
			WithSuggestion("use depth=1 for the folder's own entries")
	}
	l, err := s.resolve(in.Path, true, Read)
	if err != nil {
		return tool.Result{}, err
	}
	fi, err := l.root.r.Lstat(l.Rel)
	if err != nil {
		return tool.Result{}, osError(l.display(), err)
	}
	if !fi.IsDir() {
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "%q is a %s, not a folder", l.display(), kind(fi.Mode())).
			WithSuggestion("use get_file_info or read_file for a file")
	}
	dir, dirf, err := s.openDir(l)
	if err != nil {
		return tool.Result{}, err
	}
	dirf.Close()
	defer dir.Close()
	ls := &lister{s: s, ctx: ctx, dir: dir, base: l, hidden: in.IncludeHidden, max: s.opts.MaxEntries}
	m := s.ignoreAbove(l)
	if err := ls.walk(".", m, in.Depth); err != nil && !errors.Is(err, errListFull) {
		return tool.Result{}, err
	}
	out := ListDirectoryOut{Path: l.display(), Entries: ls.entries, Truncated: ls.truncated, Ignored: ls.ignored}
	if out.Entries == nil {
		out.Entries = []Entry{}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%d entries", out.Path, len(out.Entries))
	if out.Ignored > 0 {
		fmt.Fprintf(&b, ", %d ignored by .gitignore", out.Ignored)
	}
	b.WriteString(")\n")
	for _, e := range out.Entries {
		size := "-"
		if e.Type == "file" {
			size = fmt.Sprint(e.Size)
		}
		fmt.Fprintf(&b, "%-9s %10s  %s  %s", e.Type, size, e.Modified.Format("2006-01-02 15:04"), e.Path)
		if e.Target != "" {
			b.WriteString(" -> " + e.Target)
		}
		b.WriteByte('\n')
	}
	if out.Truncated {
		fmt.Fprintf(&b, "(list cut at %d entries; list a subfolder, or use a smaller depth)\n", ls.max)
	}
	meta := map[string]any{"path": out.Path, "entries": len(out.Entries), "truncated": out.Truncated, "ignored": out.Ignored}
	return result(strings.TrimRight(b.String(), "\n"), out, meta), nil
}

var errListFull = errors.New("list full")

// lister walks a folder opened as its own root.
type lister struct {
	s         *Set
	ctx       context.Context
	dir       *os.Root
	base      Location
	hidden    bool
	max       int
	entries   []Entry
	truncated bool
	ignored   int
}

// walk lists rel (relative to the listed folder) with the ignore rules m
// that apply to it, down to depth more levels.
func (ls *lister) walk(rel string, m *ignore.Matcher, depth int) error {
	if err := ls.ctx.Err(); err != nil {
		return err
	}
	f, err := ls.dir.Open(rel)
	if err != nil {
		return osError(path.Join(ls.base.display(), rel), err)
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return osError(path.Join(ls.base.display(), rel), err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	if gi := ls.readIgnore(path.Join(rel, ".gitignore")); gi != nil {
		m = m.Push(ignore.Parse(ls.rootRel(rel), gi))
	}
	for _, d := range ents {
		name := d.Name()
		if isTemp(name) || (!ls.hidden && strings.HasPrefix(name, ".")) {
			continue
		}
		child := path.Join(rel, name)
		isDir := d.IsDir()
		if name == ".git" && isDir && ls.hidden {
			// shown, never entered
		} else if m.MatchEntry(ls.rootRel(child), isDir) {
			ls.ignored++
			continue
		}
		if len(ls.entries) >= ls.max {
			ls.truncated = true
			return errListFull
		}
		e := Entry{Path: child, Type: kind(d.Type())}
		if info, err := d.Info(); err == nil {
			e.Modified = info.ModTime().UTC().Truncate(time.Second)
			if info.Mode().IsRegular() {
				e.Size = info.Size()
			}
		}
		if d.Type()&fs.ModeSymlink != 0 {
			e.Target, _ = ls.dir.Readlink(child)
		}
		if isDir {
			e.Path += "/"
		}
		ls.entries = append(ls.entries, e)
		if isDir && depth > 1 && name != ".git" {
			if err := ls.walk(child, m, depth-1); err != nil {
				return err
			}
		}
	}
	return nil
}

// rootRel turns a path relative to the listed folder into one relative to
// the root (what the ignore rules are written against).
func (ls *lister) rootRel(rel string) string {
	return strings.TrimPrefix(path.Join(ls.base.Rel, rel), "./")
}

// readIgnore returns the contents of a regular .gitignore file at rel, or nil.
func (ls *lister) readIgnore(rel string) []byte {
	return readSmall(ls.dir, rel)
}

// readSmall reads a small regular file through r, or returns nil.
func readSmall(r *os.Root, rel string) []byte {
	fi, err := r.Lstat(rel)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxIgnoreBytes {
		return nil
	}
	f, err := r.OpenFile(rel, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIgnoreBytes))
	if err != nil {
		return nil
	}
	return b
}

// ignoreAbove returns the ignore rules that apply inside l from the folders
// above it (the root's .git/info/exclude and the .gitignore files from the
// root down to l's parent).
func (s *Set) ignoreAbove(l Location) *ignore.Matcher {
	r := l.root.r
	var m *ignore.Matcher
	if b := readSmall(r, ".git/info/exclude"); b != nil {
		m = m.Push(ignore.Parse("", b))
	}
	if l.isRoot() {
		return m
	}
	parts := strings.Split(l.Rel, "/")
	dir := "."
	for _, p := range parts {
		if b := readSmall(r, path.Join(dir, ".gitignore")); b != nil {
			m = m.Push(ignore.Parse(dir, b))
		}
		dir = path.Join(dir, p)
	}
	return m
}
