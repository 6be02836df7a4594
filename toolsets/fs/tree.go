package fs

import (
	"context"
	"path"
	"path/filepath"

	"github.com/toolgate/toolgate/tool"
)

// checkTree walks the folder at l (not following links) and refuses when
// a protected-path rule denies acc on anything inside it, or on where it
// would land when moved to dst (when dst.root != nil). It returns the
// number of entries below l. A change of a folder that holds a path the
// policy asks about (an Ask rule), or would once moved, is refused unless
// the folder itself is such a path: the question was about the folder.
func (s *Set) checkTree(ctx context.Context, l, dst Location, acc Access) (int, error) {
	n := 0
	asks := acc&Write != 0 && s.guard.asked(l.Rel) == nil && (dst.root == nil || s.guard.asked(dst.Rel) == nil)
	var links []alias
	if asks {
		links = s.aliases(l.Root)
	}
	var visit func(rel string) error
	visit = func(rel string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := l.root.r.Open(path.Join(l.Rel, rel))
		if err != nil {
			return osError(path.Join(l.display(), rel), err)
		}
		ents, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return osError(path.Join(l.display(), rel), err)
		}
		for _, d := range ents {
			child := path.Join(rel, d.Name())
			n++
			if err := s.guard.check(l.join(child), acc); err != nil {
				return err
			}
			if dst.root != nil {
				if err := s.guard.check(dst.join(child), acc); err != nil {
					return err
				}
			}
			if asks {
				for _, at := range []Location{l.join(child), dst.join(child)} {
					if at.root == nil {
						continue
					}
					if r := s.guard.asked(at.Rel); r != nil {
						return holds(l, at, r)
					}
					if r := aliased(at, links); r != nil {
						return holds(l, at, r)
					}
				}
			}
			if d.IsDir() {
				if err := visit(child); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return n, visit(".")
}

// holdsRoot reports whether removing or moving l would take a root with it
// (roots may be nested).
func (s *Set) holdsRoot(l Location) bool {
	if l.isRoot() {
		return true
	}
	abs := splitAbs(filepath.Join(l.root.real, filepath.FromSlash(l.Rel)))
	for _, r := range s.roots.list {
		if hasPrefixParts(r.rparts, abs) {
			return true
		}
	}
	return false
}

func rootError(l Location, verb string) error {
	return tool.Errorf(tool.PermissionDenied, "%q is (or holds) a workspace root; it cannot be %s", l.display(), verb).
		WithSuggestion("work on files and folders inside the root instead")
}
