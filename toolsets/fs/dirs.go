package fs

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/tool"
)

// CreateDirectoryIn are create_directory's parameters.
type CreateDirectoryIn struct {
	Path string `json:"path" jsonschema:"the folder to create (with any missing parents), relative to the workspace root or absolute inside a root"`
}

// CreateDirectoryOut is create_directory's structured result.
type CreateDirectoryOut struct {
	Path    string `json:"path"`
	Created bool   `json:"created" jsonschema:"false when the folder already existed"`
}

const createDirectoryDesc = `Create a folder, and any missing parent folders (like mkdir -p). Succeeds without change when the folder already exists.
Use it to prepare a layout before writing files; write_file already creates the parents of the file it writes, so this is only needed for empty folders.
Example: {"path": "src/internal/cache"}`

func (s *Set) createDirectoryTool() tool.Tool {
	return newTool("create_directory", createDirectoryDesc, CreateDirectoryOut{}, s.createDirectory,
		tool.WithTitle("Create directory"), tool.WithLevel(tool.LevelWrite),
		tool.WithAnnotations(tool.Annotations{Idempotent: true}))
}

func (s *Set) createDirectory(ctx context.Context, in CreateDirectoryIn) (tool.Result, error) {
	l, err := s.resolve(in.Path, true, Write)
	if err != nil {
		return tool.Result{}, err
	}
	fi, err := lstat(l)
	if err != nil {
		return tool.Result{}, err
	}
	out := CreateDirectoryOut{Path: l.display()}
	switch {
	case fi != nil && fi.IsDir():
	case fi != nil:
		return tool.Result{}, tool.Errorf(tool.Conflict, "%q exists and is a %s", l.display(), kind(fi.Mode())).
			WithSuggestion("choose another name for the folder")
	default:
		if err := l.root.r.MkdirAll(l.Rel, 0o755); err != nil {
			return tool.Result{}, osError(l.display(), err)
		}
		out.Created = true
	}
	text := fmt.Sprintf("Created folder %s.", out.Path)
	if !out.Created {
		text = fmt.Sprintf("Folder %s already exists.", out.Path)
	}
	return result(text, out, map[string]any{"path": out.Path, "created": out.Created}), nil
}
