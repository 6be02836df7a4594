package fs

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/toolgate/toolgate/tool"
)

// MoveFileIn are move_file's parameters.
type MoveFileIn struct {
	Source      string `json:"source" jsonschema:"the file or folder to move or rename"`
	Destination string `json:"destination" jsonschema:"its new path (the full new name, not a folder to move into); missing parent folders are created"`
	Overwrite   bool   `json:"overwrite,omitempty" default:"false" jsonschema:"replace an existing file at destination"`
}

// MoveFileOut is move_file's structured result.
type MoveFileOut struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	Replaced    bool   `json:"replaced" jsonschema:"true when an existing file was overwritten"`
}

const moveFileDesc = `Move or rename a file or folder within the workspace, atomically (a rename). A symbolic link is moved as a link. Refuses to replace an existing destination unless overwrite is true, and never replaces a folder. Both paths must be in the same root.
Use it to rename or reorganise files instead of copying content with read_file and write_file. To delete use delete_file.
Example: {"source": "src/util.go", "destination": "src/internal/util/util.go"}`

func (s *Set) moveFileTool() tool.Tool {
	return newTool("move_file", moveFileDesc, MoveFileOut{}, s.moveFile,
		tool.WithTitle("Move file"), tool.WithLevel(tool.LevelWrite),
		tool.WithAnnotations(tool.Annotations{Destructive: true}))
}

func (s *Set) moveFile(ctx context.Context, in MoveFileIn) (tool.Result, error) {
	src, err := s.resolve(in.Source, false, Write)
	if err != nil {
		return tool.Result{}, err
	}
	dst, err := s.resolve(in.Destination, false, Write)
	if err != nil {
		return tool.Result{}, err
	}
	if s.holdsRoot(src) {
		return tool.Result{}, rootError(src, "moved")
	}
	if dst.isRoot() {
		return tool.Result{}, rootError(dst, "replaced")
	}
	if src.Root != dst.Root {
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "%q and %q are in different roots; move_file works within one root", src.display(), dst.display()).
			WithSuggestion("copy the content with read_file and write_file, then delete the source with delete_file")
	}
	if src.Rel == dst.Rel {
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "source and destination are the same path %q", src.display()).
			WithSuggestion("give a different destination")
	}
	sfi, err := lstat(src)
	if err != nil {
		return tool.Result{}, err
	}
	if sfi == nil {
		return tool.Result{}, osError(src.display(), fs.ErrNotExist)
	}
	if sfi.IsDir() {
		if strings.HasPrefix(dst.Rel+"/", src.Rel+"/") {
			return tool.Result{}, tool.Errorf(tool.InvalidArguments, "cannot move the folder %q into itself (%q)", src.display(), dst.display()).
				WithSuggestion("choose a destination outside the folder")
		}
		if _, err := s.checkTree(ctx, src, dst, Write); err != nil {
			return tool.Result{}, err
		}
	}
	dfi, err := lstat(dst)
	if err != nil {
		return tool.Result{}, err
	}
	if dfi != nil {
		if !in.Overwrite {
			return tool.Result{}, tool.Errorf(tool.Conflict, "%q already exists", dst.display()).
				WithSuggestion("choose another destination, or set overwrite to true to replace it")
		}
		if dfi.IsDir() {
			return tool.Result{}, tool.Errorf(tool.Conflict, "%q is an existing folder; move_file does not replace folders", dst.display()).
				WithSuggestion("give the full new path (e.g. %q), or delete the folder first", dst.display()+"/"+lastName(src.Rel))
		}
	}
	dparent, dname := dst.parent()
	created, err := mkdirs(dparent)
	if err != nil {
		return tool.Result{}, err
	}
	moved := false
	defer func() {
		if !moved {
			rmdirs(dparent, created)
		}
	}()
	sparent, sname := src.parent()
	sdir, sdirf, err := s.openDir(sparent)
	if err != nil {
		return tool.Result{}, err
	}
	defer sdir.Close()
	defer sdirf.Close()
	ddir, ddirf, err := s.openDir(dparent)
	if err != nil {
		return tool.Result{}, err
	}
	defer ddir.Close()
	defer ddirf.Close()
	if err := renameAt(sdirf, sname, ddirf, dname, !in.Overwrite, func() error {
		return dst.root.r.Rename(src.Rel, dst.Rel)
	}); err != nil {
		return tool.Result{}, osError(dst.display(), err)
	}
	moved = true
	ddirf.Sync()
	if sparent.Rel != dparent.Rel {
		sdirf.Sync()
	}
	out := MoveFileOut{Source: src.display(), Destination: dst.display(), Replaced: dfi != nil}
	text := fmt.Sprintf("Moved %s to %s.", out.Source, out.Destination)
	if out.Replaced {
		text = fmt.Sprintf("Moved %s to %s, replacing the file that was there.", out.Source, out.Destination)
	}
	return result(text, out, map[string]any{"source": out.Source, "destination": out.Destination, "replaced": out.Replaced}), nil
}

func lastName(rel string) string {
	return rel[strings.LastIndexByte(rel, '/')+1:]
}
