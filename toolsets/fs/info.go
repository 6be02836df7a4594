package fs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/toolsets/fs/internal/search"
)

// GetFileInfoIn are get_file_info's parameters.
type GetFileInfoIn struct {
	Path string `json:"path" jsonschema:"the file or folder, relative to the workspace root or absolute inside a root"`
}

// FileInfo is get_file_info's structured result.
type FileInfo struct {
	Path       string     `json:"path"`
	Type       string     `json:"type" jsonschema:"file, directory, symlink, fifo, socket, device or other"`
	Size       int64      `json:"size"`
	Mode       string     `json:"mode" jsonschema:"permissions, e.g. -rw-r--r--"`
	Perm       string     `json:"perm" jsonschema:"permissions in octal, e.g. 0644"`
	Modified   time.Time  `json:"modified"`
	Accessed   *time.Time `json:"accessed,omitempty"`
	Changed    *time.Time `json:"changed,omitempty" jsonschema:"last status change"`
	Links      uint64     `json:"links" jsonschema:"number of hard links"`
	LinkTarget string     `json:"link_target,omitempty" jsonschema:"when the path is a symbolic link: what it points to (the other fields describe the target)"`
	Lines      *int       `json:"lines,omitempty" jsonschema:"number of lines, for a text file"`
	Binary     *bool      `json:"binary,omitempty" jsonschema:"for a file: whether it looks binary (a NUL byte in its first 8 KiB)"`
	MIME       string     `json:"mime,omitempty"`
	Entries    *int       `json:"entries,omitempty" jsonschema:"for a folder: how many entries it holds"`
}

const getFileInfoDesc = `Describe one file or folder without reading it out: type, size, permissions, modification/access/change times, hard links, and for a file whether it is text or binary, its line count and its MIME type (for a folder, its number of entries). Special files (FIFOs, sockets, devices) and files with other hard links are described but never opened.
Use it before reading a large or unknown file (then read_file with offset/limit), or to check that a path exists and what it is. To see a folder's contents use list_directory.
Example: {"path": "data/export.csv"}`

func (s *Set) getFileInfoTool() tool.Tool {
	return newTool("get_file_info", getFileInfoDesc, FileInfo{}, s.getFileInfo,
		tool.WithTitle("Get file info"), tool.ReadOnly())
}

func (s *Set) getFileInfo(ctx context.Context, in GetFileInfoIn) (tool.Result, error) {
	l, err := s.resolve(in.Path, true, Read)
	if err != nil {
		return tool.Result{}, err
	}
	out := FileInfo{Path: l.display()}
	if nl, err := s.roots.ResolveNoFollow(in.Path); err == nil && nl.Rel != l.Rel {
		if t, err := nl.root.r.Readlink(nl.Rel); err == nil {
			out.LinkTarget = t
		}
	}
	fi, err := l.root.r.Lstat(l.Rel)
	if err != nil {
		return tool.Result{}, osError(l.display(), err)
	}
	unread := false
	out.Type, out.Size = kind(fi.Mode()), fi.Size()
	out.Mode, out.Perm = fi.Mode().String(), fmt.Sprintf("%04o", fi.Mode().Perm())
	out.Modified = fi.ModTime().UTC()
	out.Links = search.LinkCount(fi)
	if a, c, ok := fileTimes(fi); ok {
		a, c = a.UTC(), c.UTC()
		out.Accessed, out.Changed = &a, &c
	}
	switch {
	case fi.IsDir():
		dir, dirf, err := s.openDir(l)
		if err != nil {
			return tool.Result{}, err
		}
		names, err := dirf.Readdirnames(-1)
		dirf.Close()
		dir.Close()
		if err != nil {
			return tool.Result{}, osError(l.display(), err)
		}
		n := len(names)
		out.Entries = &n
	case fi.Mode().IsRegular() && s.hardLinked(fi):
		// Described from its name's metadata, not opened: it may be a
		// second name of a file outside the roots.
		unread = true
	case fi.Mode().IsRegular():
		f, _, err := s.openRead(l)
		if err != nil {
			return tool.Result{}, err
		}
		defer f.Close()
		br := bufio.NewReaderSize(f, readBufBytes)
		head, _ := br.Peek(binarySniff)
		bin := bytes.IndexByte(head, 0) >= 0
		out.Binary = &bin
		out.MIME = mimeType(l.Rel, head)
		if !bin && fi.Size() <= s.opts.MaxFileBytes {
			n, err := countLines(ctx, br)
			if err != nil && err != io.EOF {
				return tool.Result{}, tool.Errorf(tool.Internal, "counting lines of %q: %w", l.display(), err)
			}
			out.Lines = &n
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s, %d bytes, %s (%s), modified %s", out.Path, out.Type, out.Size, out.Mode, out.Perm, out.Modified.Format(time.RFC3339))
	if out.LinkTarget != "" {
		fmt.Fprintf(&b, ", reached through a symbolic link to %q", out.LinkTarget)
	}
	if out.Links > 1 {
		fmt.Fprintf(&b, ", %d hard links", out.Links)
	}
	if unread {
		b.WriteString(" (contents not read: a file with other hard links may be a second name of a file outside the workspace; the policy setting files.allow_hard_links lets the tools read it)")
	}
	if out.Binary != nil {
		if *out.Binary {
			b.WriteString(", binary")
		} else {
			b.WriteString(", text")
		}
	}
	if out.Lines != nil {
		fmt.Fprintf(&b, ", %d lines", *out.Lines)
	}
	if out.MIME != "" {
		b.WriteString(", " + out.MIME)
	}
	if out.Entries != nil {
		fmt.Fprintf(&b, ", %d entries", *out.Entries)
	}
	return result(b.String(), out, map[string]any{"path": out.Path, "type": out.Type, "size": out.Size}), nil
}

// mimeType guesses a MIME type from the extension, else from the content.
func mimeType(name string, head []byte) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return http.DetectContentType(head)
}
