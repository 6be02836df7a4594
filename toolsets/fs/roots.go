package fs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate/tool"
)

// MaxLinks bounds how many symbolic links the resolution of one path may
// go through: os.Root's own limit, lower than the kernel's 40. A longer
// chain, or a loop, ends in an ELOOP-like invalid_arguments error naming
// the path, even when every link stays inside the root.
const MaxLinks = 8

// Roots is the set of folders the file tools may touch. Relative paths
// resolve against the first root; an absolute path is accepted only when,
// compared component by component, it lies inside one of them. Every file
// operation then goes through that root's *os.Root, so even a path that
// changes under our feet (a symbolic link swapped mid-call) cannot leave it.
//
// A Roots is safe for concurrent use. Close it when done.
type Roots struct {
	list []*root
	// noOpenat2 is set once openat2 turned out to be missing (Linux < 5.6)
	// or refused (a seccomp filter): later reads take the walk.
	noOpenat2 atomic.Bool
}

// root is one folder of a Roots.
type root struct {
	dir    string   // absolute and clean, as given
	real   string   // dir with its symbolic links resolved
	parts  []string // components of dir
	rparts []string // components of real
	r      *os.Root
	dirf   *os.File // the folder open, for openat2 beneath it (see handle)
	fd     int      // dirf's descriptor, -1 once closed
	mu     sync.RWMutex
	proc   bool // /proc/self/fd names this root's files by real path: opened files are re-checked
}

// OpenRoots opens each folder in dirs as a root (at least one is needed).
// Relative folder names are made absolute against the current directory.
func OpenRoots(dirs ...string) (*Roots, error) {
	if len(dirs) == 0 {
		return nil, errors.New("fs: at least one root folder is needed")
	}
	rs := &Roots{}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			rs.Close()
			return nil, fmt.Errorf("fs: root %q: %w", d, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			rs.Close()
			return nil, fmt.Errorf("fs: root %q: %w", d, err)
		}
		fi, err := os.Stat(real)
		if err != nil {
			rs.Close()
			return nil, fmt.Errorf("fs: root %q: %w", d, err)
		}
		if !fi.IsDir() {
			rs.Close()
			return nil, fmt.Errorf("fs: root %q is not a folder", d)
		}
		r, err := os.OpenRoot(real)
		if err != nil {
			rs.Close()
			return nil, fmt.Errorf("fs: root %q: %w", d, err)
		}
		rt := &root{dir: abs, real: real, parts: splitAbs(abs), rparts: splitAbs(real), r: r}
		rs.list = append(rs.list, rt)
		if rt.dirf, err = r.Open("."); err != nil {
			rs.Close()
			return nil, fmt.Errorf("fs: root %q: %w", d, err)
		}
		rt.fd = int(rt.dirf.Fd())
		rt.proc = procNames(rt)
	}
	return rs, nil
}

// Close releases the roots' directory handles.
func (rs *Roots) Close() error {
	var errs []error
	for _, r := range rs.list {
		errs = append(errs, r.r.Close())
		r.mu.Lock()
		if r.dirf != nil {
			errs = append(errs, r.dirf.Close())
			r.dirf, r.fd = nil, -1
		}
		r.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Dirs returns the roots' folders (absolute), first root first.
func (rs *Roots) Dirs() []string {
	out := make([]string, len(rs.list))
	for i, r := range rs.list {
		out[i] = r.dir
	}
	return out
}

// Location is a path resolved inside a root.
type Location struct {
	Root int    // index of the root in Roots.Dirs
	Rel  string // slash-separated path relative to the root, "." for the root itself; no symbolic links except possibly the last component (see Resolve)
	root *root
}

// Abs returns the location as an absolute path of this machine.
func (l Location) Abs() string {
	if l.root == nil {
		return ""
	}
	return filepath.Join(l.root.dir, filepath.FromSlash(l.Rel))
}

// isRoot reports whether l is a root itself.
func (l Location) isRoot() bool { return l.Rel == "." }

// join returns the location of name inside l.
func (l Location) join(name string) Location {
	return Location{Root: l.Root, Rel: path.Join(l.Rel, name), root: l.root}
}

// parent returns the folder that holds l, and l's last component.
func (l Location) parent() (Location, string) {
	dir, base := path.Split(l.Rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	return Location{Root: l.Root, Rel: dir, root: l.root}, base
}

// Resolve checks path (exactly the bytes given) and resolves it inside a
// root, following symbolic links the way the kernel would but refusing any
// that leaves the root (or is absolute). The returned Rel has no symbolic
// links and no "." or ".." components. Components that do not exist yet are
// kept as given (a later write creates them).
//
// Errors are *tool.Error values: invalid_arguments for a malformed path,
// permission_denied for one outside every root.
func (rs *Roots) Resolve(p string) (Location, error) {
	return rs.resolve(p, true)
}

// ResolveNoFollow is Resolve except that a symbolic link as the last
// component is not followed: the location names the link itself (for
// deleting or moving it).
func (rs *Roots) ResolveNoFollow(p string) (Location, error) {
	return rs.resolve(p, false)
}

func (rs *Roots) resolve(p string, followLast bool) (Location, error) {
	if err := checkPath(p); err != nil {
		return Location{}, err
	}
	r, idx, rest, err := rs.pick(p)
	if err != nil {
		return Location{}, err
	}
	rel, err := walk(r, rest, followLast, p)
	if err != nil {
		return Location{}, err
	}
	return Location{Root: idx, Rel: rel, root: r}, nil
}

// pick chooses the root p belongs to and returns p's components relative to it.
func (rs *Roots) pick(p string) (*root, int, []string, error) {
	if !filepath.IsAbs(p) {
		return rs.list[0], 0, strings.Split(filepath.ToSlash(p), "/"), nil
	}
	parts := splitAbs(p)
	for i, r := range rs.list {
		for _, rp := range [][]string{r.parts, r.rparts} {
			if hasPrefixParts(parts, rp) {
				return r, i, parts[len(rp):], nil
			}
		}
	}
	return nil, 0, nil, escapeError(p)
}

// handle returns the root folder's descriptor, held open until release,
// or -1 once the roots are closed (a number Close freed may since name
// another folder).
func (r *root) handle() int {
	r.mu.RLock()
	if r.dirf == nil {
		r.mu.RUnlock()
		return -1
	}
	return r.fd
}

func (r *root) release() { r.mu.RUnlock() }

// lexical is the location p names when it is already canonical: a
// relative path of names only (no "", "." or ".." component), or an
// absolute one inside a root with no ".." after the root. It is where p
// leads only if p goes through no symbolic link, which the caller must
// make sure of (openBeneath: openat2 with RESOLVE_NO_SYMLINKS).
func (rs *Roots) lexical(p string) (Location, bool) {
	if !filepath.IsAbs(p) {
		for rest := p; ; {
			c, more, found := strings.Cut(rest, "/")
			if c == "" || c == "." || c == ".." {
				return Location{}, false
			}
			if !found {
				return Location{Root: 0, Rel: p, root: rs.list[0]}, true
			}
			rest = more
		}
	}
	r, idx, rest, err := rs.pick(p)
	if err != nil || len(rest) == 0 || slices.Contains(rest, "..") {
		return Location{}, false
	}
	return Location{Root: idx, Rel: strings.Join(rest, "/"), root: r}, true
}

// named returns p as the policy reads it (policy's locate): cleaned
// lexically, so that ".." removes the name before it whatever that name
// is, and relative to the root it lies in; "" when it leaves every root.
func (rs *Roots) named(p string) string {
	if !filepath.IsAbs(p) {
		c := path.Clean(filepath.ToSlash(p))
		if c == ".." || strings.HasPrefix(c, "../") {
			return ""
		}
		return c
	}
	parts := splitAbs(filepath.Clean(p))
	for _, r := range rs.list {
		for _, rp := range [][]string{r.parts, r.rparts} {
			if hasPrefixParts(parts, rp) {
				if len(parts) == len(rp) {
					return "."
				}
				return strings.Join(parts[len(rp):], "/")
			}
		}
	}
	return ""
}

// splitAbs splits an absolute path into its components, dropping empty and
// "." components (which name nothing) but keeping "..", which the walk
// resolves against real folders.
func splitAbs(p string) []string {
	var out []string
	for _, c := range strings.Split(filepath.ToSlash(p), "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// hasPrefixParts reports whether the components prefix lead parts, compared
// component by component (never as strings).
func hasPrefixParts(parts, prefix []string) bool {
	if len(parts) < len(prefix) {
		return false
	}
	for i, c := range prefix {
		if parts[i] != c || c == ".." {
			return false
		}
	}
	return true
}

// walk resolves the components of a path inside r, one at a time, with
// Lstat and Readlink through the root. It returns the canonical
// slash-separated relative path; orig is the path as given, for errors.
func walk(r *root, pending []string, followLast bool, orig string) (string, error) {
	var stack []string
	links := 0
	missing := false
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if missing {
				return "", tool.Errorf(tool.InvalidArguments, "the path goes into a folder that does not exist and back out with \"..\"").
					WithSuggestion("write the path without \"..\" components")
			}
			if len(stack) == 0 {
				return "", escapeError(orig)
			}
			stack = stack[:len(stack)-1]
			continue
		}
		cand := strings.Join(append(stack[:len(stack):len(stack)], c), "/")
		last := !hasMore(pending)
		if missing || (last && !followLast) {
			stack = append(stack, c)
			continue
		}
		fi, err := r.r.Lstat(cand)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				missing = true
				stack = append(stack, c)
				continue
			}
			return "", osError(cand, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.IsDir() && hasMore(pending) {
				return "", tool.Errorf(tool.NotFound, "%q is not a folder", cand).
					WithSuggestion("check the path with list_directory")
			}
			stack = append(stack, c)
			continue
		}
		links++
		if links > MaxLinks {
			return "", loopError(orig, cand)
		}
		target, err := r.r.Readlink(cand)
		if err != nil {
			return "", osError(cand, err)
		}
		if target == "" || strings.IndexByte(target, 0) >= 0 {
			return "", tool.Errorf(tool.InvalidArguments, "the symbolic link %q has an unusable target", cand).
				WithSuggestion("use the real path instead of the link")
		}
		if filepath.IsAbs(target) {
			return "", tool.Errorf(tool.PermissionDenied, "%q is a symbolic link to an absolute path; only links that stay inside the root are followed", cand).
				WithSuggestion("use a path inside the workspace that does not go through this link").
				WithDetail("link", cand)
		}
		pending = append(strings.Split(filepath.ToSlash(target), "/"), pending...)
	}
	if len(stack) == 0 {
		return ".", nil
	}
	return strings.Join(stack, "/"), nil
}

// hasMore reports whether pending still names a component.
func hasMore(pending []string) bool {
	for _, c := range pending {
		if c != "" && c != "." {
			return true
		}
	}
	return false
}

// loopError is the ELOOP error for the path p given by the caller: at the
// link at, it went through more than MaxLinks symbolic links. It is
// invalid_arguments (the path cannot be used as it is, and retrying does
// not help), with "errno": "ELOOP" in its details.
func loopError(p, at string) *tool.Error {
	return tool.Errorf(tool.InvalidArguments, "too many levels of symbolic links (ELOOP) in %q: more than %d links were followed, the last at %q (a link loop, or a chain too long)", p, MaxLinks, at).
		WithSuggestion("use the path the links lead to (the real path of the file), or ask the user to shorten the chain of links").
		WithDetail("path", p).WithDetail("link", at).WithDetail("errno", "ELOOP").WithDetail("max_links", MaxLinks)
}

func escapeError(p string) *tool.Error {
	return tool.Errorf(tool.PermissionDenied, "the path %q leads outside the workspace roots", p).
		WithSuggestion("use a path inside the workspace: relative to the first root, or absolute inside a root")
}

// display returns how a location is shown to the model: relative for the
// first root, absolute for the others.
func (l Location) display() string {
	if l.Root == 0 {
		return l.Rel
	}
	return l.Abs()
}

// verifyFile checks, through /proc/self/fd where available, that an opened
// file really is the canonical location l (no component was swapped between
// the walk and the open). It is a no-op where /proc is unavailable.
func (rs *Roots) verifyFile(f *os.File, l Location) error {
	if !l.root.proc {
		return nil
	}
	got, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		return tool.Errorf(tool.Internal, "cannot check where %q was opened: %w", l.display(), err)
	}
	want := filepath.Join(l.root.real, filepath.FromSlash(l.Rel))
	if got != want {
		return tool.Errorf(tool.Conflict, "the path %q changed while it was being opened", l.display()).
			WithSuggestion("something is modifying the folder concurrently; try again").
			WithDetail("opened", got)
	}
	return nil
}

// procNames reports whether /proc/self/fd shows the root's real path for an
// open handle of it (Linux with /proc mounted, no bind-mount surprises).
func procNames(r *root) bool {
	if runtime.GOOS != "linux" {
		return false
	}
	f, err := r.r.Open(".")
	if err != nil {
		return false
	}
	defer f.Close()
	got, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	return err == nil && got == r.real
}
