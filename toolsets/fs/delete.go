package fs

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/toolgate/toolgate/tool"
)

// DeleteFileIn are delete_file's parameters.
type DeleteFileIn struct {
	Path      string `json:"path" jsonschema:"the file, symbolic link or folder to delete"`
	Recursive bool   `json:"recursive,omitempty" default:"false" jsonschema:"delete a folder with everything in it (otherwise only an empty folder can be deleted)"`
}

// DeleteFileOut is delete_file's structured result.
type DeleteFileOut struct {
	Path    string `json:"path"`
	Type    string `json:"type" jsonschema:"what was deleted: file, directory, symlink, …"`
	Removed int    `json:"removed" jsonschema:"entries removed, the path itself included"`
}

const deleteFileDesc = `Delete a file, a symbolic link (the link itself, never what it points to), or a folder. A folder that is not empty is only deleted with recursive=true, which removes everything inside it and first asks the user. A workspace root is never deleted. This cannot be undone.
Use it to remove generated or obsolete files. To rename, use move_file; to empty a file, write_file with empty content.
Example: {"path": "build/out.o"}`

func (s *Set) deleteFileTool() tool.Tool {
	return newTool("delete_file", deleteFileDesc, DeleteFileOut{}, s.deleteFile,
		tool.WithTitle("Delete file"), tool.WithLevel(tool.LevelHigh),
		tool.WithAnnotations(tool.Annotations{Destructive: true, Idempotent: true}))
}

func (s *Set) deleteFile(ctx context.Context, in DeleteFileIn) (tool.Result, error) {
	l, err := s.resolve(in.Path, false, Write)
	if err != nil {
		return tool.Result{}, err
	}
	if s.holdsRoot(l) {
		return tool.Result{}, rootError(l, "deleted")
	}
	fi, err := lstat(l)
	if err != nil {
		return tool.Result{}, err
	}
	if fi == nil {
		return tool.Result{}, tool.Errorf(tool.NotFound, "%q does not exist", l.display()).
			WithSuggestion("check the path with list_directory")
	}
	out := DeleteFileOut{Path: l.display(), Type: kind(fi.Mode()), Removed: 1}
	parent, name := l.parent()
	if fi.IsDir() && in.Recursive {
		n, err := s.checkTree(ctx, l, Location{}, Write)
		if err != nil {
			return tool.Result{}, err
		}
		if n > 0 && !tool.Approved(ctx) {
			// Mass deletion, as rm -r of a folder is for commands: a
			// person approves it (an approval ahead of time, --yes, does not).
			return tool.Result{}, tool.NeedsApproval(fmt.Sprintf("removes many files: the folder %s and the %d entries inside it", l.display(), n))
		}
		dir, dirf, err := s.openDir(parent)
		if err != nil {
			return tool.Result{}, err
		}
		defer dir.Close()
		defer dirf.Close()
		if err := dir.RemoveAll(name); err != nil {
			return tool.Result{}, osError(l.display(), err)
		}
		dirf.Sync()
		out.Removed += n
	} else {
		dir, dirf, err := s.openDir(parent)
		if err != nil {
			return tool.Result{}, err
		}
		defer dir.Close()
		defer dirf.Close()
		if err := dir.Remove(name); err != nil {
			if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
				return tool.Result{}, tool.Errorf(tool.Conflict, "the folder %q is not empty", l.display()).
					WithSuggestion("set recursive to true to delete it with everything inside, after checking its contents with list_directory")
			}
			return tool.Result{}, osError(l.display(), err)
		}
		dirf.Sync()
	}
	text := fmt.Sprintf("Deleted %s %s.", out.Type, out.Path)
	if out.Removed > 1 {
		text = fmt.Sprintf("Deleted %s %s and the %d entries inside it.", out.Type, out.Path, out.Removed-1)
	}
	return result(text, out, map[string]any{"path": out.Path, "type": out.Type, "removed": out.Removed}), nil
}
