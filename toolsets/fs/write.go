package fs

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/tool"
)

// WriteFileIn are write_file's parameters.
type WriteFileIn struct {
	Path    string `json:"path" jsonschema:"the file to write, relative to the workspace root or absolute inside a root; missing folders are created"`
	Content string `json:"content" jsonschema:"the complete new content of the file"`
}

// WriteFileOut is write_file's structured result.
type WriteFileOut struct {
	Path         string `json:"path"`
	BytesWritten int    `json:"bytes_written"`
	Created      bool   `json:"created" jsonschema:"true when the file did not exist before"`
}

const writeFileDesc = `Write a whole file: create it, or replace all of its content. Missing parent folders are created. The write is atomic (a temporary file beside it, synced, then renamed over it; the file's permissions are kept), so readers see the old or the new content, never a mix.
Use it to create a new file or to rewrite a file completely. For a targeted change in an existing file use edit_file (it changes only the text you name and returns a diff); for changes across several files use apply_patch.
Example: {"path": "docs/notes.md", "content": "# Notes\n\nFirst line.\n"}`

func (s *Set) writeFileTool() tool.Tool {
	return newTool("write_file", writeFileDesc, WriteFileOut{}, s.writeFileRun,
		tool.WithTitle("Write file"), tool.WithLevel(tool.LevelWrite),
		tool.WithAnnotations(tool.Annotations{Destructive: true, Idempotent: true}))
}

func (s *Set) writeFileRun(ctx context.Context, in WriteFileIn) (tool.Result, error) {
	l, err := s.resolve(in.Path, true, Write)
	if err != nil {
		return tool.Result{}, err
	}
	if l.isRoot() {
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "%q is a root folder, not a file", in.Path).
			WithSuggestion("give a file path inside the root")
	}
	if n := int64(len(in.Content)); n > s.opts.MaxEditBytes {
		return tool.Result{}, tool.Errorf(tool.TooLarge, "the content is %d bytes; write_file accepts at most %d", n, s.opts.MaxEditBytes).
			WithSuggestion("write a smaller file, or split the content across several files")
	}
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	prev, err := lstat(l)
	if err != nil {
		return tool.Result{}, err
	}
	if prev != nil {
		if err := s.checkWritable(l, prev); err != nil {
			return tool.Result{}, err
		}
	}
	if err := s.writeFile(l, []byte(in.Content), prev); err != nil {
		return tool.Result{}, err
	}
	out := WriteFileOut{Path: l.display(), BytesWritten: len(in.Content), Created: prev == nil}
	verb := "Replaced"
	if out.Created {
		verb = "Created"
	}
	text := fmt.Sprintf("%s %s (%d bytes written).", verb, out.Path, out.BytesWritten)
	return result(text, out, map[string]any{"path": out.Path, "bytes_written": out.BytesWritten, "created": out.Created}), nil
}
