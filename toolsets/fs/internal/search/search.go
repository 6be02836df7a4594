package search

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/toolgate/toolgate/toolsets/fs/internal/ignore"
)

// Target is what a search looks at.
type Target string

// Targets.
const (
	TargetContent Target = "content" // the lines of files: Pattern is a regular expression
	TargetFiles   Target = "files"   // the paths of files: Pattern is a glob
)

// Output is what a content search returns.
type Output string

// Outputs.
const (
	OutputContent Output = "content" // the matching lines (Result.Matches)
	OutputFiles   Output = "files"   // the files with a match (Result.Files)
	OutputCount   Output = "count"   // the files with a match and how many lines match in each (Result.Files)
)

// Defaults used when an Options field is zero.
const (
	DefaultMaxFileSize  = 10 << 20 // bytes; larger files are skipped
	DefaultMaxLineBytes = 500      // bytes of a line shown before it is cut
	binarySniff         = 8 << 10  // a NUL byte in this many first bytes makes a file binary
	maxDepth            = 256      // folders deeper than this are not entered
	keepBudget          = 32 << 20 // bytes of match text kept during a search; beyond it, pages are re-read
)

// Cut is appended to a line that was cut; a line cut at its start begins with CutStart.
const (
	Cut      = " …[line cut]"
	CutStart = "…"
)

// Errors a caller turns into invalid_arguments.
var (
	ErrInvalidPattern = errors.New("invalid pattern")
	ErrInvalidGlob    = errors.New("invalid glob")
)

// Options says what to search for and how. Only Pattern is required.
type Options struct {
	// Pattern is an RE2 regular expression (Go syntax) matched against each
	// line for TargetContent, or a doublestar glob matched against paths for
	// TargetFiles (against the name alone when it has no "/", else against
	// the path relative to the searched folder).
	Pattern string
	Target  Target // default TargetContent
	// Glob, if set, keeps only the files it matches (same rule as a
	// TargetFiles pattern), e.g. "*.go" or "cmd/**/*.go".
	Glob            string
	CaseInsensitive bool
	Context         int    // lines shown before and after each match (OutputContent)
	Output          Output // default OutputContent
	Limit           int    // items returned at most; 0 or less: all
	Offset          int    // items skipped first (pagination)

	IncludeHidden  bool  // also names starting with "."
	IncludeIgnored bool  // also what .gitignore files exclude (".git" stays skipped)
	MaxFileSize    int64 // default DefaultMaxFileSize
	MaxLineBytes   int   // default DefaultMaxLineBytes
	Workers        int   // default GOMAXPROCS
	// HardLinks also reads files that have other hard links; by default
	// they are skipped (one may be a second name of a file outside the
	// root, which os.Root does not prevent). Their paths are still found
	// by a TargetFiles search. Hard links are detected on Linux.
	HardLinks bool

	keepBudget int64 // tests: bytes of match text kept before pages are re-read (default keepBudget)
}

// Line is one line of a file, numbered from 1, without its line ending.
type Line struct {
	Number int
	Text   string
}

// Match is one matching line. Text is valid UTF-8 (invalid bytes become
// U+FFFD); a line longer than MaxLineBytes is cut around the match and Cut is
// set.
type Match struct {
	Path   string // slash path relative to the root
	Line   int
	Text   string
	Cut    bool
	Before []Line // up to Context lines before
	After  []Line // up to Context lines after
}

// File is a file found: a match of a TargetFiles search (Matches is 0), or a
// file with Matches matching lines.
type File struct {
	Path    string
	Matches int
}

// Skipped counts the files left out.
type Skipped struct {
	Binary     int // a NUL byte in the first 8 KiB
	TooLarge   int // over MaxFileSize
	Unreadable int // could not be opened or read (permissions, a symlink leading out of the root or through too many links, a race)
	HardLinked int // has other hard links (see Options.HardLinks)
}

// Result is one page of what a search found, in a deterministic order: by
// path (folder by folder, "/" sorting first), then by line.
type Result struct {
	Matches []Match // OutputContent
	Files   []File  // OutputFiles and OutputCount, or TargetFiles
	// Total is how many items (matches for OutputContent, else files) were
	// found in all, before Offset and Limit.
	Total int
	// TotalMatches is how many lines matched in all (TargetContent).
	TotalMatches int
	// More says items remain after this page: ask again with Offset+Limit.
	More    bool
	Scanned int // files read
	Skipped Skipped
}

// Run searches dir (a slash path relative to root, already validated by the
// caller; "" or "." is the root itself; a file is searched alone) and returns
// the page of results that opts asks for. Every file and folder is opened
// through root, so nothing outside it is read; a symlink is never followed to
// a folder and read as a file only if it resolves inside root; anything that
// is not a regular file (FIFO, socket, device) is skipped without being
// opened for reading; a file with other hard links is not read unless
// opts.HardLinks.
func Run(ctx context.Context, root *os.Root, dir string, opts Options) (Result, error) {
	s, err := newSearcher(root, opts)
	if err != nil {
		return Result{}, err
	}
	dir = strings.Trim(dir, "/")
	if dir == "." {
		dir = ""
	}
	name := dir
	if name == "" {
		name = "."
	}
	info, err := root.Stat(name)
	if err != nil {
		return Result{}, fmt.Errorf("search %s: %w", name, err)
	}
	var found []fileResult
	var stats Skipped
	var scanned int
	switch {
	case info.IsDir():
		found, stats, scanned, err = s.walk(ctx, dir)
	case info.Mode().IsRegular():
		found, stats, scanned, err = s.single(ctx, dir)
	default:
		return Result{}, fmt.Errorf("search %s: not a regular file or folder: %w", name, fs.ErrInvalid)
	}
	if err != nil {
		return Result{}, err
	}
	sort.Slice(found, func(i, j int) bool { return pathLess(found[i].path, found[j].path) })
	res, err := s.page(ctx, found)
	res.Scanned, res.Skipped = scanned, stats
	return res, err
}

// searcher holds what every worker of one Run shares.
type searcher struct {
	root     *os.Root
	opts     Options
	lm       *lineMatcher // TargetContent
	glob     string       // filter on files (TargetContent) or the pattern (TargetFiles)
	globFull bool         // glob has a "/": match the path relative to the searched folder
	start    string       // the searched folder
}

func newSearcher(root *os.Root, opts Options) (*searcher, error) {
	if opts.Target == "" {
		opts.Target = TargetContent
	}
	if opts.Output == "" {
		opts.Output = OutputContent
	}
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.keepBudget <= 0 {
		opts.keepBudget = keepBudget
	}
	opts.Context = max(opts.Context, 0)
	opts.Offset = max(opts.Offset, 0)
	s := &searcher{root: root, opts: opts}
	switch opts.Target {
	case TargetContent:
		lm, err := newLineMatcher(opts.Pattern, opts.CaseInsensitive)
		if err != nil {
			return nil, err
		}
		s.lm = lm
		s.glob = opts.Glob
	case TargetFiles:
		s.glob = opts.Pattern
		if s.glob == "" {
			return nil, fmt.Errorf("%w: empty", ErrInvalidGlob)
		}
	default:
		return nil, fmt.Errorf("unknown target %q (want %q or %q)", opts.Target, TargetContent, TargetFiles)
	}
	switch opts.Output {
	case OutputContent, OutputFiles, OutputCount:
	default:
		return nil, fmt.Errorf("unknown output %q (want %q, %q or %q)", opts.Output, OutputContent, OutputFiles, OutputCount)
	}
	if s.glob != "" {
		if opts.CaseInsensitive && opts.Target == TargetFiles {
			s.glob = strings.ToLower(s.glob)
		}
		if !doublestar.ValidatePattern(s.glob) {
			return nil, fmt.Errorf("%w: %q", ErrInvalidGlob, s.glob)
		}
		s.globFull = strings.Contains(s.glob, "/")
	}
	return s, nil
}

// keepFile applies the glob to a file at rel (relative to the root).
func (s *searcher) keepFile(rel, name string) bool {
	if s.glob == "" {
		return true
	}
	subject := name
	if s.globFull {
		subject = rel
		if s.start != "" {
			subject = strings.TrimPrefix(rel, s.start+"/")
		}
	}
	if s.opts.CaseInsensitive && s.opts.Target == TargetFiles {
		subject = strings.ToLower(subject)
	}
	ok, _ := doublestar.Match(s.glob, subject)
	return ok
}

// hidden reports whether a name is hidden.
func hidden(name string) bool { return strings.HasPrefix(name, ".") }

// ancestors returns the Matcher with the .gitignore rules of the folders
// from the root down to (not including) dir.
func (s *searcher) ancestors(dir string) *ignore.Matcher {
	m := ignore.New()
	if s.opts.IncludeIgnored || dir == "" {
		return m
	}
	parts := strings.Split(dir, "/")
	for i := range parts {
		folder := path.Join(parts[:i]...)
		data, err := s.root.ReadFile(path.Join(folder, ".gitignore"))
		if err == nil {
			m = m.Push(ignore.Parse(folder, data))
		}
	}
	return m
}

// pathLess orders slash paths folder by folder: "a/b" before "a.go".
func pathLess(a, b string) bool {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return true
		}
		if cb == '/' {
			return false
		}
		return ca < cb
	}
	return len(a) < len(b)
}
