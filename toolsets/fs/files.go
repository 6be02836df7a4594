package fs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/toolsets/fs/internal/search"
)

// TempPrefix starts the name of every temporary file the tools write (next
// to the file being replaced). A crash can leave one behind; the tools never
// list, search or read such files.
const TempPrefix = ".toolgate-tmp-"

// isTemp reports whether a file name is one of the tools' temporary files.
func isTemp(name string) bool { return strings.HasPrefix(name, TempPrefix) }

// osError turns an operating-system error about name into a *tool.Error.
func osError(name string, err error) error {
	var te *tool.Error
	if errors.As(err, &te) {
		return te
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return tool.Errorf(tool.NotFound, "%q does not exist", name).
			WithSuggestion("check the path with list_directory or search_files (target=files)")
	case errors.Is(err, syscall.ELOOP):
		return loopError(name, name)
	case errors.Is(err, syscall.ENOTDIR):
		return tool.Errorf(tool.NotFound, "a component of %q is not a folder", name).
			WithSuggestion("check the path with list_directory")
	case errors.Is(err, syscall.EISDIR):
		return tool.Errorf(tool.InvalidArguments, "%q is a folder", name).
			WithSuggestion("use list_directory for a folder")
	case errors.Is(err, fs.ErrExist):
		return tool.Errorf(tool.Conflict, "%q already exists", name).
			WithSuggestion("choose another name, or remove the existing one first")
	case errors.Is(err, fs.ErrPermission):
		return tool.Errorf(tool.PermissionDenied, "the operating system denied access to %q", name).
			WithSuggestion("this file is not accessible to the tools; use another path")
	case strings.Contains(err.Error(), "path escapes"):
		return escapeError(name)
	}
	return tool.Errorf(tool.Internal, "%s: %w", name, err)
}

// kind names a file's type for the model.
func kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "other"
}

// notRegular is the error for a path that is not a regular file.
func notRegular(l Location, m fs.FileMode) error {
	if m.IsDir() {
		return tool.Errorf(tool.InvalidArguments, "%q is a folder, not a file", l.display()).
			WithSuggestion("use list_directory to see what it holds")
	}
	return tool.Errorf(tool.PermissionDenied, "%q is a %s, not a regular file; the file tools only read and write regular files", l.display(), kind(m)).
		WithSuggestion("use get_file_info to inspect it; leave special files alone")
}

// openRead opens the regular file at l (a canonical location) for reading.
// It refuses FIFOs, sockets and devices without opening them, and checks
// after the open that it got the very file it looked at.
func (s *Set) openRead(l Location) (*os.File, fs.FileInfo, error) {
	r := l.root.r
	fi, err := r.Lstat(l.Rel)
	if err != nil {
		return nil, nil, osError(l.display(), err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, notRegular(l, fi.Mode())
	}
	f, err := r.OpenFile(l.Rel, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, nil, osError(l.display(), err)
	}
	got, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, osError(l.display(), err)
	}
	if !got.Mode().IsRegular() || !os.SameFile(fi, got) {
		f.Close()
		return nil, nil, changed(l)
	}
	if err := s.checkLinks(l, got, "read"); err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := s.roots.verifyFile(f, l); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, got, nil
}

func changed(l Location) *tool.Error {
	return tool.Errorf(tool.Conflict, "%q changed while the tool was working on it", l.display()).
		WithSuggestion("something else is modifying it; read it again and retry")
}

// checkWritable refuses to replace an existing file that is not a regular
// file, or that has other hard links (unless allowed).
func (s *Set) checkWritable(l Location, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return notRegular(l, fi.Mode())
	}
	return s.checkLinks(l, fi, "change")
}

// hardLinked reports whether the tools keep away from the content of the
// file fi describes: it has other hard links, and they are not allowed.
func (s *Set) hardLinked(fi fs.FileInfo) bool {
	return search.LinkCount(fi) > 1 && !s.opts.AllowHardLinks
}

// checkLinks refuses a regular file with other hard links, unless
// Options.AllowHardLinks: it may be a second name of a file outside the
// roots. fi must describe the very file used (for a read, the open file's
// own stat). verb says what was refused ("read", "change").
func (s *Set) checkLinks(l Location, fi fs.FileInfo, verb string) error {
	if !s.hardLinked(fi) {
		return nil
	}
	n := search.LinkCount(fi)
	return tool.Errorf(tool.PermissionDenied, "%q has %d hard links, so it may be a second name of a file outside the workspace; the file tools do not %s it", l.display(), n, verb).
		WithSuggestion("work on another file (write_file creates a new one); if this project really uses hard links (pnpm's node_modules does), ask the user to set files.allow_hard_links: true in the policy").
		WithDetail("links", n)
}

// lstat returns the file at l, or nil when it does not exist.
func lstat(l Location) (fs.FileInfo, error) {
	fi, err := l.root.r.Lstat(l.Rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, osError(l.display(), err)
	}
	return fi, nil
}

// openDir opens the folder at l as a root of its own and checks it is the
// folder the walk resolved. Operations on single names inside it cannot be
// redirected by a component swapped after the walk.
func (s *Set) openDir(l Location) (*os.Root, *os.File, error) {
	d, err := l.root.r.OpenRoot(l.Rel)
	if err != nil {
		return nil, nil, osError(l.display(), err)
	}
	f, err := d.Open(".")
	if err != nil {
		d.Close()
		return nil, nil, osError(l.display(), err)
	}
	if err := s.roots.verifyFile(f, l); err != nil {
		f.Close()
		d.Close()
		return nil, nil, err
	}
	return d, f, nil
}

// staged is new content written to a temporary file beside its target,
// synced, and not yet renamed into place.
type staged struct {
	dir  *os.Root
	dirf *os.File
	tmp  string
	name string
	loc  Location
	prev fs.FileInfo // the file being replaced (nil: none)
	// created lists the folders stage made (shallowest first); they are
	// removed again unless the content was committed.
	created []string
	done    bool
}

// stage writes data to a temporary file in the folder of l (creating
// missing folders). prev is the file l held when the tool looked at it (nil
// when there was none); commit refuses if that has changed since.
func (s *Set) stage(l Location, data []byte, prev fs.FileInfo) (*staged, error) {
	parent, name := l.parent()
	if name == "" || l.isRoot() {
		return nil, tool.Errorf(tool.InvalidArguments, "cannot write to a root folder itself").
			WithSuggestion("give a file path inside the root")
	}
	created, err := mkdirs(parent)
	if err != nil {
		return nil, err
	}
	dir, dirf, err := s.openDir(parent)
	if err != nil {
		rmdirs(parent, created)
		return nil, err
	}
	mode := fs.FileMode(0o644)
	if prev != nil {
		mode = prev.Mode().Perm()
	}
	tmp := TempPrefix + randomHex()
	st := &staged{dir: dir, dirf: dirf, tmp: tmp, name: name, loc: l, prev: prev, created: created}
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		st.abort()
		return nil, osError(l.display(), err)
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Chmod(mode)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		st.abort()
		return nil, tool.Errorf(tool.Internal, "writing %q: %w", l.display(), werr)
	}
	return st, nil
}

// check verifies that the target is still what the tool saw.
func (st *staged) check() error {
	cur, err := st.dir.Lstat(st.name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if st.prev != nil {
			return changed(st.loc)
		}
		return nil
	case err != nil:
		return osError(st.loc.display(), err)
	case st.prev == nil:
		return tool.Errorf(tool.Conflict, "%q was created by something else while the tool was writing it", st.loc.display()).
			WithSuggestion("read it and decide again")
	case !cur.Mode().IsRegular() || !os.SameFile(cur, st.prev) ||
		cur.Size() != st.prev.Size() || !cur.ModTime().Equal(st.prev.ModTime()):
		return changed(st.loc)
	}
	return nil
}

// commit renames the temporary file over the target and syncs the folder.
func (st *staged) commit() error {
	if err := st.check(); err != nil {
		st.abort()
		return err
	}
	if err := st.dir.Rename(st.tmp, st.name); err != nil {
		st.abort()
		return osError(st.loc.display(), err)
	}
	st.dirf.Sync()
	st.done = true
	st.close()
	return nil
}

// abort removes the temporary file, and the folders made for it unless the
// content was committed.
func (st *staged) abort() {
	st.dir.Remove(st.tmp)
	st.close()
	if !st.done {
		parent, _ := st.loc.parent()
		rmdirs(parent, st.created)
	}
}

// mkdirs makes the folder at l and its missing parents, and returns the
// ones it made, shallowest first.
func mkdirs(l Location) ([]string, error) {
	if l.isRoot() {
		return nil, nil
	}
	var missing []string
	for p := l; !p.isRoot(); p, _ = p.parent() {
		if _, err := l.root.r.Lstat(p.Rel); err == nil {
			break
		}
		missing = append([]string{p.Rel}, missing...)
	}
	if err := l.root.r.MkdirAll(l.Rel, 0o755); err != nil {
		rmdirs(l, missing)
		return nil, osError(l.display(), err)
	}
	return missing, nil
}

// rmdirs removes the folders mkdirs made, deepest first, if still empty.
func rmdirs(l Location, created []string) {
	for i := len(created) - 1; i >= 0; i-- {
		l.root.r.Remove(created[i])
	}
}

func (st *staged) close() {
	st.dirf.Close()
	st.dir.Close()
}

// writeFile replaces (or creates) the file at l with data, atomically.
func (s *Set) writeFile(l Location, data []byte, prev fs.FileInfo) error {
	st, err := s.stage(l, data, prev)
	if err != nil {
		return err
	}
	return st.commit()
}

// sizeError is the too_large error for a file over a cap.
func sizeError(l Location, size, max int64, what string) error {
	return tool.Errorf(tool.TooLarge, "%q is %d bytes; %s handles at most %d", l.display(), size, what, max).
		WithSuggestion("use get_file_info to inspect it, or read_file with offset and limit to read a part")
}

// randomHex returns 16 random hex digits, for temporary names.
func randomHex() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
