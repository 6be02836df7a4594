package fs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"unicode"

	"github.com/toolgate/toolgate/tool"
)

// Edit is one replacement of edit_file.
type Edit struct {
	OldString  string `json:"old_string" jsonschema:"the exact text to replace, including whitespace and indentation; it must occur exactly once unless replace_all is true"`
	NewString  string `json:"new_string" jsonschema:"the text to put in its place (empty to delete old_string)"`
	ReplaceAll bool   `json:"replace_all,omitempty" default:"false" jsonschema:"replace every occurrence instead of requiring exactly one"`
}

// EditFileIn are edit_file's parameters.
type EditFileIn struct {
	Path   string `json:"path" jsonschema:"the file to change, relative to the workspace root or absolute inside a root"`
	Edits  []Edit `json:"edits" minItems:"1" jsonschema:"the replacements, applied in order; either all apply or none"`
	DryRun bool   `json:"dry_run,omitempty" default:"false" jsonschema:"return the diff without changing the file"`
}

// EditFileOut is edit_file's structured result.
type EditFileOut struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements" jsonschema:"occurrences replaced, over all edits"`
	Diff         string `json:"diff" jsonschema:"unified diff of the change"`
	DryRun       bool   `json:"dry_run"`
}

const editFileDesc = `Change part of an existing text file by exact string replacement, and return a unified diff of the change.
Each edit replaces old_string with new_string; old_string must match the file exactly (whitespace and indentation included) and occur exactly once, unless replace_all is true. Edits apply in order, all or none: if any fails, the file is left unchanged and the error shows the closest lines and what to do. dry_run shows the diff without writing. The write is atomic and keeps the file's permissions.
Use it for targeted changes to a file you have read: read the file first (read_file) so that old_string is copied exactly, and include a few surrounding lines to make it unique. Do not use it to create files or rewrite them whole: use write_file to replace a whole file or create one, apply_patch for changes across several files.
Example: {"path": "main.go", "edits": [{"old_string": "timeout := 5", "new_string": "timeout := 30"}]}`

func (s *Set) editFileTool() tool.Tool {
	return newTool("edit_file", editFileDesc, EditFileOut{}, s.editFile,
		tool.WithTitle("Edit file"), tool.WithLevel(tool.LevelWrite),
		tool.WithAnnotations(tool.Annotations{Destructive: true}))
}

func (s *Set) editFile(ctx context.Context, in EditFileIn) (tool.Result, error) {
	if len(in.Edits) == 0 {
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "edits is empty").
			WithSuggestion(`give at least one edit: {"old_string": "...", "new_string": "..."}`)
	}
	l, err := s.resolve(in.Path, true, Write)
	if err != nil {
		return tool.Result{}, err
	}
	if err := s.guard.check(l, Read); err != nil {
		return tool.Result{}, err
	}
	old, fi, err := s.readForEdit(l)
	if err != nil {
		return tool.Result{}, err
	}
	content, n, err := applyEdits(l, old, in.Edits)
	if err != nil {
		return tool.Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	out := EditFileOut{Path: l.display(), Replacements: n, Diff: unifiedDiff(l.display(), old, content), DryRun: in.DryRun}
	meta := map[string]any{"path": out.Path, "replacements": n, "dry_run": in.DryRun}
	if in.DryRun {
		return result("Dry run: "+out.Path+" not changed. The edit would make this change:\n"+out.Diff, out, meta), nil
	}
	if s.afterRead != nil {
		s.afterRead(l)
	}
	if err := s.writeFile(l, []byte(content), fi); err != nil {
		return tool.Result{}, err
	}
	meta["bytes_written"] = len(content)
	return result(fmt.Sprintf("Edited %s (%d replacement(s)):\n%s", out.Path, n, out.Diff), out, meta), nil
}

// readForEdit reads a whole text file that may then be replaced.
func (s *Set) readForEdit(l Location) (string, fs.FileInfo, error) {
	f, fi, err := s.openRead(l)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	if err := s.checkWritable(l, fi); err != nil {
		return "", nil, err
	}
	if fi.Size() > s.opts.MaxEditBytes {
		return "", nil, sizeError(l, fi.Size(), s.opts.MaxEditBytes, "editing")
	}
	b, err := io.ReadAll(io.LimitReader(f, s.opts.MaxEditBytes+1))
	if err != nil {
		return "", nil, osError(l.display(), err)
	}
	if int64(len(b)) > s.opts.MaxEditBytes {
		return "", nil, sizeError(l, int64(len(b)), s.opts.MaxEditBytes, "editing")
	}
	if bytes.IndexByte(b[:min(len(b), binarySniff)], 0) >= 0 {
		return "", nil, tool.Errorf(tool.InvalidArguments, "%q is a binary file; edit_file changes text files only", l.display()).
			WithSuggestion("use get_file_info to inspect it")
	}
	return string(b), fi, nil
}

// applyEdits applies edits in order to content and returns the result and
// the number of replacements; any failing edit fails them all.
func applyEdits(l Location, content string, edits []Edit) (string, int, error) {
	total := 0
	for i, e := range edits {
		which := ""
		if len(edits) > 1 {
			which = fmt.Sprintf("edit %d: ", i+1)
		}
		if e.OldString == "" {
			return "", 0, tool.Errorf(tool.InvalidArguments, "%sold_string is empty", which).
				WithSuggestion("put the exact text to replace in old_string; to create or rewrite a whole file use write_file")
		}
		if e.OldString == e.NewString {
			return "", 0, tool.Errorf(tool.InvalidArguments, "%sold_string and new_string are the same", which).
				WithSuggestion("put the changed text in new_string")
		}
		oldS, newS := e.OldString, e.NewString
		n := strings.Count(content, oldS)
		if n == 0 && strings.Contains(content, "\r\n") && !strings.Contains(oldS, "\r\n") && strings.Contains(oldS, "\n") {
			// The file has Windows line ends; the model wrote Unix ones.
			crlf := strings.ReplaceAll(oldS, "\n", "\r\n")
			if c := strings.Count(content, crlf); c > 0 {
				oldS, newS, n = crlf, strings.ReplaceAll(strings.ReplaceAll(newS, "\r\n", "\n"), "\n", "\r\n"), c
			}
		}
		switch {
		case n == 0:
			return "", 0, notFound(l, which, content, oldS)
		case n > 1 && !e.ReplaceAll:
			return "", 0, tool.Errorf(tool.InvalidArguments, "%sold_string occurs %d times in %q (at lines %s); it must occur exactly once", which, n, l.display(), occurrenceLines(content, oldS, 10)).
				WithSuggestion("add surrounding lines to old_string so that it matches one place only, or set replace_all to true to change every occurrence").
				WithDetail("occurrences", n)
		}
		if e.ReplaceAll {
			content = strings.ReplaceAll(content, oldS, newS)
		} else {
			content = strings.Replace(content, oldS, newS, 1)
		}
		total += n
	}
	return content, total, nil
}

// occurrenceLines lists the line numbers where sub starts (at most max).
func occurrenceLines(content, sub string, max int) string {
	var out []string
	line, from := 1, 0
	for len(out) < max {
		i := strings.Index(content[from:], sub)
		if i < 0 {
			break
		}
		line += strings.Count(content[from:from+i], "\n")
		out = append(out, strconv.Itoa(line))
		line += strings.Count(sub, "\n")
		from += i + len(sub)
	}
	return strings.Join(out, ", ")
}

// notFound explains a missing old_string: the closest lines of the file,
// and whether it matches but for whitespace.
func notFound(l Location, which, content, old string) error {
	lines := strings.Split(content, "\n")
	want := strings.Split(strings.TrimRight(old, "\n"), "\n")
	e := tool.Errorf(tool.InvalidArguments, "%sold_string was not found in %q", which, l.display())
	// 1. The same text with different whitespace?
	if at := findLoose(lines, want); at >= 0 {
		e.Message += fmt.Sprintf("; lines %d-%d match it except for whitespace or indentation:\n%s", at+1, at+len(want), numbered(lines, at, len(want)))
		return e.WithSuggestion("copy those lines exactly (with their indentation) into old_string and try again").
			WithDetail("closest_line", at+1)
	}
	// 2. The line most like old_string's first non-blank line.
	first := ""
	for _, w := range want {
		if strings.TrimSpace(w) != "" {
			first = strings.TrimSpace(w)
			break
		}
	}
	best, score := -1, 0.0
	for i, ln := range lines {
		if i >= 50000 {
			break
		}
		if sc := similarity(strings.ToLower(first), strings.ToLower(strings.TrimSpace(ln))); sc > score {
			best, score = i, sc
		}
	}
	if best >= 0 && score >= 0.3 {
		e.Message += fmt.Sprintf("; the closest lines are %d-%d:\n%s", best+1, best+min(len(want), 10), numbered(lines, best, min(len(want), 10)))
		return e.WithSuggestion("read the file around line %d with read_file, then copy the exact text into old_string", best+1).
			WithDetail("closest_line", best+1)
	}
	return e.WithSuggestion("read the file with read_file and copy the exact text to replace into old_string; it may have changed since you last read it")
}

// findLoose finds lines equal to want when runs of whitespace are ignored.
func findLoose(lines, want []string) int {
	norm := func(s string) string { return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ") }
	w := make([]string, len(want))
	for i, s := range want {
		w[i] = norm(s)
	}
	for i := 0; i+len(w) <= len(lines) && i < 200000; i++ {
		ok := true
		for j := range w {
			if norm(lines[i+j]) != w[j] {
				ok = false
				break
			}
		}
		if ok {
			return i
		}
	}
	return -1
}

// numbered shows n lines from index at as "N|text".
func numbered(lines []string, at, n int) string {
	var b strings.Builder
	for i := at; i < at+n && i < len(lines); i++ {
		ln := lines[i]
		if len(ln) > 300 {
			ln = ln[:300] + " …"
		}
		fmt.Fprintf(&b, "%d|%s\n", i+1, strings.ToValidUTF8(ln, "\uFFFD"))
	}
	return strings.TrimRight(b.String(), "\n")
}

// similarity is the Dice coefficient of the character bigrams of a and b
// (1 for equal strings, 0 for nothing in common); long strings are cut.
func similarity(a, b string) float64 {
	if a == "" || b == "" {
		return 0
	}
	if a == b {
		return 1
	}
	const cut = 300
	ra, rb := []rune(a), []rune(b)
	ra, rb = ra[:min(len(ra), cut)], rb[:min(len(rb), cut)]
	if len(ra) < 2 || len(rb) < 2 {
		return 0
	}
	grams := map[[2]rune]int{}
	for i := 0; i+1 < len(ra); i++ {
		grams[[2]rune{ra[i], ra[i+1]}]++
	}
	common := 0
	for i := 0; i+1 < len(rb); i++ {
		g := [2]rune{rb[i], rb[i+1]}
		if grams[g] > 0 {
			grams[g]--
			common++
		}
	}
	return 2 * float64(common) / float64(len(ra)-1+len(rb)-1)
}
