package fs

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/toolsets/fs/internal/search"
)

// SearchFilesIn are search_files' parameters.
type SearchFilesIn struct {
	Pattern         string `json:"pattern" minLength:"1" jsonschema:"for target=content: a regular expression (RE2/Go syntax, e.g. func \\w+Handler\\(); for target=files: a glob over paths (e.g. **/*_test.go, or *.md to match names)"`
	Path            string `json:"path,omitempty" default:"." jsonschema:"the folder (or single file) to search, relative to the workspace root or absolute inside a root"`
	Target          string `json:"target,omitempty" default:"content" enum:"content,files" jsonschema:"content: search inside files; files: find files by path"`
	Glob            string `json:"glob,omitempty" jsonschema:"only search files whose path matches this glob, e.g. *.go or src/**/*.ts, relative to the searched folder (no ..); if omitted, every file"`
	CaseInsensitive bool   `json:"case_insensitive,omitempty" default:"false" jsonschema:"ignore upper and lower case"`
	Context         int    `json:"context,omitempty" default:"0" minimum:"0" maximum:"10" jsonschema:"lines to show before and after each match (output=content)"`
	Output          string `json:"output,omitempty" default:"content" enum:"content,files,count" jsonschema:"content: matching lines; files: only the paths of files with a match; count: matches per file"`
	Limit           int    `json:"limit,omitempty" default:"50" minimum:"1" maximum:"1000" jsonschema:"results to return at most"`
	Offset          int    `json:"offset,omitempty" default:"0" minimum:"0" jsonschema:"results to skip first (to page through many results)"`
}

// SearchMatch is one matching line.
type SearchMatch struct {
	Path   string   `json:"path"`
	Line   int      `json:"line"`
	Text   string   `json:"text"`
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
}

// SearchFile is a file found, with its number of matching lines (content searches).
type SearchFile struct {
	Path    string `json:"path"`
	Matches int    `json:"matches,omitempty"`
}

// SearchFilesOut is search_files' structured result.
type SearchFilesOut struct {
	Matches []SearchMatch `json:"matches,omitempty"`
	Files   []SearchFile  `json:"files,omitempty"`
	Total   int           `json:"total" jsonschema:"results in all, before offset and limit"`
	More    bool          `json:"more" jsonschema:"more results remain: call again with offset increased"`
}

const searchFilesDesc = `Search the workspace: a regular expression over the lines of files (target=content, like grep/rg), or a glob over file paths (target=files, like find). Results come in a fixed order (by path, then line) as "path:line:text"; output=files lists only the files with a match, output=count the number of matches per file. .gitignore'd, hidden, binary, hard-linked and very large files are skipped, and protected files (secrets) are never shown. At most limit results (default 50) are returned; when there are more, a note gives the offset to continue with.
Use it to find where something is defined or used, or which files exist, before reading them with read_file. Not for reading a whole file (read_file) or listing one folder (list_directory).
Examples: {"pattern": "func \\w+Context\\(", "glob": "*.go"}; {"pattern": "**/*_test.go", "target": "files"}; {"pattern": "todo", "case_insensitive": true, "output": "count"}`

func (s *Set) searchFilesTool() tool.Tool {
	return newTool("search_files", searchFilesDesc, SearchFilesOut{}, s.searchFiles,
		tool.WithTitle("Search files"), tool.ReadOnly())
}

func (s *Set) searchFiles(ctx context.Context, in SearchFilesIn) (tool.Result, error) {
	switch {
	case in.Pattern == "":
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "pattern is empty").
			WithSuggestion("give a regular expression to look for, or a glob with target=files")
	case in.Target != "content" && in.Target != "files":
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "target must be content or files, got %q", in.Target).
			WithSuggestion("use target=content to search inside files, target=files to find files by name")
	case in.Output != "content" && in.Output != "files" && in.Output != "count":
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "output must be content, files or count, got %q", in.Output).
			WithSuggestion("use output=content for matching lines")
	case in.Context < 0 || in.Context > 10:
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "context must be between 0 and 10, got %d", in.Context).
			WithSuggestion("use a few lines of context, or read_file for more")
	case in.Limit < 1 || in.Limit > 1000:
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "limit must be between 1 and 1000, got %d", in.Limit).
			WithSuggestion("use limit=50 and page with offset")
	case in.Offset < 0:
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "offset must be 0 or more, got %d", in.Offset).
			WithSuggestion("use offset=0 for the first page")
	}
	l, err := s.resolve(in.Path, true, Read)
	if err != nil {
		return tool.Result{}, err
	}
	glob, err := s.confineGlob("glob", in.Glob, l)
	if err != nil {
		return tool.Result{}, err
	}
	pattern := in.Pattern
	if in.Target == "files" {
		if pattern, err = s.confineGlob("pattern", in.Pattern, l); err != nil {
			return tool.Result{}, err
		}
	}
	if s.opts.Parallel != nil {
		defer s.opts.Parallel()()
	}
	res, err := search.Run(ctx, l.root.r, l.Rel, search.Options{
		Pattern: pattern, Target: search.Target(in.Target), Glob: glob,
		CaseInsensitive: in.CaseInsensitive, Context: in.Context, Output: search.Output(in.Output),
		Limit: in.Limit, Offset: in.Offset, HardLinks: s.opts.AllowHardLinks,
	})
	switch {
	case errors.Is(err, search.ErrInvalidPattern), errors.Is(err, search.ErrInvalidGlob):
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "%v", err).
			WithSuggestion("fix the pattern: target=content takes a Go (RE2) regular expression (escape ( ) [ ] . * + ? with \\), target=files and glob take a glob like **/*.go")
	case err != nil:
		return tool.Result{}, osError(l.display(), err)
	}
	out := SearchFilesOut{Total: res.Total, More: res.More}
	hidden := 0
	show := func(rel string) (string, bool) {
		loc := Location{Root: l.Root, Rel: rel, root: l.root}
		if in.Target == "content" && !s.readable(loc) {
			hidden++
			return "", false
		}
		return loc.display(), true
	}
	var b strings.Builder
	for _, m := range res.Matches {
		p, ok := show(m.Path)
		if !ok {
			continue
		}
		sm := SearchMatch{Path: p, Line: m.Line, Text: m.Text}
		for _, c := range m.Before {
			sm.Before = append(sm.Before, c.Text)
			fmt.Fprintf(&b, "%s-%d-%s\n", p, c.Number, c.Text)
		}
		fmt.Fprintf(&b, "%s:%d:%s\n", p, m.Line, m.Text)
		for _, c := range m.After {
			sm.After = append(sm.After, c.Text)
			fmt.Fprintf(&b, "%s-%d-%s\n", p, c.Number, c.Text)
		}
		if in.Context > 0 {
			b.WriteString("--\n")
		}
		out.Matches = append(out.Matches, sm)
	}
	for _, f := range res.Files {
		p, ok := show(f.Path)
		if !ok {
			continue
		}
		out.Files = append(out.Files, SearchFile{Path: p, Matches: f.Matches})
		if in.Output == "count" && in.Target == "content" {
			fmt.Fprintf(&b, "%s:%d\n", p, f.Matches)
		} else {
			fmt.Fprintf(&b, "%s\n", p)
		}
	}
	shown := len(out.Matches) + len(out.Files)
	text := strings.TrimRight(b.String(), "-\n")
	if shown == 0 && !res.More {
		text = fmt.Sprintf("No matches for %q in %s.", in.Pattern, l.display())
	}
	if res.More {
		text += fmt.Sprintf("\n(showing results %d-%d of %d; continue with offset=%d)", in.Offset+1, in.Offset+shown+hidden, res.Total, in.Offset+in.Limit)
	}
	if hidden > 0 {
		text += fmt.Sprintf("\n(%d result(s) in protected files not shown)", hidden)
	}
	if n := res.Skipped.HardLinked; n > 0 {
		text += fmt.Sprintf("\n(%d file(s) with other hard links not searched: they may be second names of files outside the workspace; the policy setting files.allow_hard_links lets the tools read them)", n)
	}
	meta := map[string]any{
		"total": res.Total, "more": res.More, "scanned": res.Scanned, "protected_hidden": hidden,
		"skipped_binary": res.Skipped.Binary, "skipped_too_large": res.Skipped.TooLarge, "skipped_unreadable": res.Skipped.Unreadable,
		"skipped_hard_linked": res.Skipped.HardLinked,
	}
	return result(text, out, meta), nil
}

// readable reports whether the tools may read the file at l: its path, and
// where it leads if it is a symbolic link, are not protected for reading.
func (s *Set) readable(l Location) bool {
	if s.guard.match(l.Rel, Read) != nil {
		return false
	}
	r, err := s.roots.resolve(path.Join(l.root.dir, l.Rel), true)
	return err == nil && s.guard.match(r.Rel, Read) == nil
}
