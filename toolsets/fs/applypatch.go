package fs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/toolsets/fs/internal/patch"
)

// ApplyPatchIn are apply_patch's parameters.
type ApplyPatchIn struct {
	Patch string `json:"patch" minLength:"1" jsonschema:"the patch text, from '*** Begin Patch' to '*** End Patch'"`
}

// PatchedFile is one file a patch changed.
type PatchedFile struct {
	Path    string `json:"path"`
	Action  string `json:"action" jsonschema:"added, deleted, updated or moved"`
	MovedTo string `json:"moved_to,omitempty"`
}

// ApplyPatchOut is apply_patch's structured result.
type ApplyPatchOut struct {
	Files []PatchedFile `json:"files"`
	Diff  string        `json:"diff" jsonschema:"unified diff of the updated files"`
}

const applyPatchDesc = `Apply a multi-file patch in the "*** Begin Patch" format: add, delete, update (with @@ context hunks) and move files in one call. All files change or none: every new content is prepared first, and if any step fails, nothing is changed.
Format:
*** Begin Patch
*** Add File: path/new.txt
+each line of the new file, prefixed with +
*** Update File: path/old.go
*** Move to: path/renamed.go   (optional)
@@ func main() {               (optional line that comes before the change)
 unchanged context line
-removed line
+added line
*** Delete File: path/obsolete.txt
*** End Patch
Use it for coordinated changes across several files, or when you already think in diffs. For one targeted change in one file edit_file is simpler; to write a whole file use write_file.
Example: {"patch": "*** Begin Patch\n*** Update File: src/app.py\n@@ def main():\n-    run(debug=True)\n+    run(debug=False)\n*** End Patch\n"}`

func (s *Set) applyPatchTool() tool.Tool {
	return newTool("apply_patch", applyPatchDesc, ApplyPatchOut{}, s.applyPatch,
		tool.WithTitle("Apply patch"), tool.WithLevel(tool.LevelWrite),
		tool.WithAnnotations(tool.Annotations{Destructive: true}))
}

// patchStep is one file operation, checked and staged.
type patchStep struct {
	op      patch.FileOp
	loc     Location    // the file the operation names
	dst     Location    // where its new content goes (loc, or the move target)
	prev    fs.FileInfo // loc's file before (update, delete)
	old     string      // update: content before
	content string      // add, update: content after
	st      *staged     // add, update: the new content, staged
}

func (s *Set) applyPatch(ctx context.Context, in ApplyPatchIn) (tool.Result, error) {
	if int64(len(in.Patch)) > s.opts.MaxEditBytes {
		return tool.Result{}, tool.Errorf(tool.TooLarge, "the patch is %d bytes; at most %d are accepted", len(in.Patch), s.opts.MaxEditBytes).
			WithSuggestion("split the change into several smaller patches")
	}
	p, err := patch.Parse(in.Patch)
	if err != nil {
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "%v", err).
			WithSuggestion("write the patch as '*** Begin Patch', then '*** Add File: PATH' / '*** Update File: PATH' / '*** Delete File: PATH' sections, then '*** End Patch'; see the tool's description")
	}
	steps, err := s.planPatch(p)
	if err != nil {
		return tool.Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	defer func() {
		for i := len(steps) - 1; i >= 0; i-- {
			if st := steps[i].st; st != nil {
				st.abort() // removes a temporary file not renamed into place, and new folders unless committed
			}
		}
	}()
	for _, st := range steps {
		if st.op.Kind == patch.Delete {
			continue
		}
		prev := st.prev
		if st.dst.Rel != st.loc.Rel {
			prev = nil
		}
		if st.st, err = s.stage(st.dst, []byte(st.content), prev); err != nil {
			return tool.Result{}, err
		}
	}
	if s.afterRead != nil && len(steps) > 0 {
		s.afterRead(steps[len(steps)-1].loc)
	}
	if err := s.commitPatch(steps); err != nil {
		return tool.Result{}, err
	}
	for _, st := range steps {
		if st.st != nil {
			st.st.done = true
		}
	}
	out := ApplyPatchOut{}
	var diffs []string
	var summary []string
	for _, st := range steps {
		f := PatchedFile{Path: st.loc.display()}
		switch {
		case st.op.Kind == patch.Add:
			f.Action = "added"
			summary = append(summary, "A "+f.Path)
		case st.op.Kind == patch.Delete:
			f.Action = "deleted"
			summary = append(summary, "D "+f.Path)
		case st.dst.Rel != st.loc.Rel:
			f.Action, f.MovedTo = "moved", st.dst.display()
			summary = append(summary, "R "+f.Path+" -> "+f.MovedTo)
		default:
			f.Action = "updated"
			summary = append(summary, "M "+f.Path)
		}
		if st.op.Kind == patch.Update {
			diffs = append(diffs, unifiedDiff(st.loc.display(), st.old, st.content))
		}
		out.Files = append(out.Files, f)
	}
	out.Diff = strings.Join(diffs, "")
	text := fmt.Sprintf("Applied the patch to %d file(s):\n%s", len(steps), strings.Join(summary, "\n"))
	if out.Diff != "" {
		text += "\n" + out.Diff
	}
	return result(strings.TrimRight(text, "\n"), out, map[string]any{"files": len(steps)}), nil
}

// planPatch resolves and checks every operation and computes new contents,
// touching nothing.
func (s *Set) planPatch(p *patch.Patch) ([]*patchStep, error) {
	seen := map[string]int{}
	claim := func(l Location, line int) error {
		key := fmt.Sprintf("%d:%s", l.Root, l.Rel)
		if prev, ok := seen[key]; ok {
			return tool.Errorf(tool.InvalidArguments, "the patch touches %q twice (lines %d and %d)", l.display(), prev, line).
				WithSuggestion("put all changes to one file in one section")
		}
		seen[key] = line
		return nil
	}
	var steps []*patchStep
	for _, op := range p.Files {
		where := fmt.Sprintf(" (patch line %d)", op.Line)
		st := &patchStep{op: op}
		var err error
		switch op.Kind {
		case patch.Add:
			if st.loc, err = s.resolve(op.Path, true, Write); err != nil {
				return nil, withWhere(err, where)
			}
			if fi, err := lstat(st.loc); err != nil {
				return nil, err
			} else if fi != nil {
				return nil, tool.Errorf(tool.Conflict, "cannot add %q: it already exists%s", st.loc.display(), where).
					WithSuggestion("use '*** Update File:' to change an existing file")
			}
			st.dst, st.content = st.loc, op.Content
		case patch.Delete:
			if st.loc, err = s.resolve(op.Path, false, Write); err != nil {
				return nil, withWhere(err, where)
			}
			if s.holdsRoot(st.loc) {
				return nil, rootError(st.loc, "deleted")
			}
			fi, err := lstat(st.loc)
			if err != nil {
				return nil, err
			}
			if fi == nil {
				return nil, tool.Errorf(tool.NotFound, "cannot delete %q: it does not exist%s", st.loc.display(), where).
					WithSuggestion("check the path with list_directory")
			}
			if fi.IsDir() {
				return nil, tool.Errorf(tool.InvalidArguments, "%q is a folder; a patch deletes files only%s", st.loc.display(), where).
					WithSuggestion("use delete_file for folders")
			}
			st.prev = fi
		case patch.Update:
			if st.loc, err = s.resolve(op.Path, true, Write); err != nil {
				return nil, withWhere(err, where)
			}
			if err := s.guard.check(st.loc, Read); err != nil {
				return nil, err
			}
			if st.old, st.prev, err = s.readForEdit(st.loc); err != nil {
				return nil, withWhere(err, where)
			}
			if st.content, err = patch.ApplyHunks(st.old, op.Hunks); err != nil {
				var ae *patch.ApplyError
				e := tool.Errorf(tool.InvalidArguments, "cannot apply the patch to %q: %v", st.loc.display(), err)
				if errors.As(err, &ae) {
					e = e.WithDetail("hunk", ae.Hunk)
				}
				return nil, e.WithSuggestion("read the file again with read_file and make the hunk's context and '-' lines match it exactly; nothing was changed")
			}
			st.dst = st.loc
			if op.MoveTo != "" {
				if st.dst, err = s.resolve(op.MoveTo, false, Write); err != nil {
					return nil, withWhere(err, where)
				}
				if st.dst.Root != st.loc.Root {
					return nil, tool.Errorf(tool.InvalidArguments, "cannot move %q to another root%s", st.loc.display(), where).
						WithSuggestion("move files within one root")
				}
				if st.dst.Rel != st.loc.Rel {
					if fi, err := lstat(st.dst); err != nil {
						return nil, err
					} else if fi != nil {
						return nil, tool.Errorf(tool.Conflict, "cannot move %q to %q: it already exists%s", st.loc.display(), st.dst.display(), where).
							WithSuggestion("choose another destination, or delete it in the same patch first with a separate call")
					}
					if err := claim(st.dst, op.Line); err != nil {
						return nil, err
					}
				}
			}
		}
		if err := claim(st.loc, op.Line); err != nil {
			return nil, err
		}
		if len(st.content) > int(s.opts.MaxEditBytes) {
			return nil, sizeError(st.dst, int64(len(st.content)), s.opts.MaxEditBytes, "apply_patch")
		}
		steps = append(steps, st)
	}
	return steps, nil
}

func withWhere(err error, where string) error {
	var te *tool.Error
	if errors.As(err, &te) {
		c := *te
		c.Message += where
		return &c
	}
	return err
}

// commitPatch puts every staged content in place and removes deleted or
// moved files. Replaced and removed files are first renamed to backups in
// their folder; on any failure every step done is undone, in reverse.
func (s *Set) commitPatch(steps []*patchStep) error {
	var undo, backups, closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	fail := func(err error) error {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		return err
	}
	// remove moves the file at l (checked to be prev) to a backup.
	remove := func(l Location, prev fs.FileInfo) error {
		parent, name := l.parent()
		dir, dirf, err := s.openDir(parent)
		if err != nil {
			return err
		}
		closers = append(closers, func() { dir.Close(); dirf.Close() })
		cur, err := dir.Lstat(name)
		if err != nil || !os.SameFile(cur, prev) {
			return changed(l)
		}
		bk := TempPrefix + "bak-" + randomHex()
		if err := dir.Rename(name, bk); err != nil {
			return osError(l.display(), err)
		}
		undo = append(undo, func() { dir.Rename(bk, name) })
		backups = append(backups, func() { dir.Remove(bk); dirf.Sync() })
		return nil
	}
	for _, st := range steps {
		switch {
		case st.op.Kind == patch.Delete:
			if err := remove(st.loc, st.prev); err != nil {
				return fail(err)
			}
		case st.st.prev != nil: // an update in place: back up, then rename
			if err := st.st.check(); err != nil {
				return fail(err)
			}
			bk := TempPrefix + "bak-" + randomHex()
			if err := st.st.dir.Rename(st.st.name, bk); err != nil {
				return fail(osError(st.dst.display(), err))
			}
			dir, name := st.st.dir, st.st.name
			undo = append(undo, func() { dir.Rename(bk, name) })
			if err := st.st.dir.Rename(st.st.tmp, st.st.name); err != nil {
				return fail(osError(st.dst.display(), err))
			}
			backups = append(backups, func() { dir.Remove(bk) })
		default: // a new file (added, or the target of a move)
			if err := renameAt(st.st.dirf, st.st.tmp, st.st.dirf, st.st.name, true, func() error {
				return st.st.dir.Rename(st.st.tmp, st.st.name)
			}); err != nil {
				return fail(osError(st.dst.display(), err))
			}
			dir, name := st.st.dir, st.st.name
			undo = append(undo, func() { dir.Remove(name) })
			if st.op.Kind == patch.Update { // moved: remove the source
				if err := remove(st.loc, st.prev); err != nil {
					return fail(err)
				}
			}
		}
	}
	for _, b := range backups {
		b()
	}
	for _, st := range steps {
		if st.st != nil {
			st.st.dirf.Sync()
		}
	}
	return nil
}
