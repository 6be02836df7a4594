package fs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/tool"
)

// Limits of read_file.
const (
	MaxReadLines  = 2000 // the largest limit a read_file call may ask for
	MaxLineChars  = 2000 // longer lines are cut, with a marker
	binarySniff   = 8 << 10
	readBufBytes  = 64 << 10
	countBufBytes = 256 << 10
)

// ReadFileIn are read_file's parameters.
type ReadFileIn struct {
	Path   string `json:"path" jsonschema:"the file to read, relative to the workspace root (e.g. src/main.go) or absolute inside a root"`
	Offset int    `json:"offset,omitempty" default:"1" minimum:"1" jsonschema:"the first line to show, counting from 1"`
	Limit  int    `json:"limit,omitempty" default:"500" minimum:"1" maximum:"2000" jsonschema:"how many lines to show at most (up to 2000)"`
}

const readFileDesc = `Read a text file and return its lines numbered as "N|text" (line number, a bar, the line).
Use it to look at source code, configuration or logs before changing them. Large files are shown a window at a time: pass offset (first line, from 1) and limit (lines, default 500, at most 2000); the metadata gives total_lines and the shown range, and a last line tells how to continue. Lines longer than 2000 characters are cut with a marker; invalid UTF-8 is shown as U+FFFD.
Do not use it for folders (list_directory), to find text across files (search_files), or for binary files (get_file_info tells size and type).
Example: {"path": "src/server.go", "offset": 120, "limit": 80}`

func (s *Set) readFileTool() tool.Tool {
	return newTool("read_file", readFileDesc, nil, s.readFile,
		tool.WithTitle("Read file"), tool.ReadOnly())
}

func (s *Set) readFile(ctx context.Context, in ReadFileIn) (tool.Result, error) {
	if in.Offset < 1 {
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "offset must be 1 or more, got %d", in.Offset).
			WithSuggestion("lines count from 1; use offset=1 to start at the top")
	}
	if in.Limit < 1 || in.Limit > MaxReadLines {
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "limit must be between 1 and %d, got %d", MaxReadLines, in.Limit).
			WithSuggestion("read at most %d lines at a time and use offset to page", MaxReadLines)
	}
	l, f, size, err := s.openForRead(in.Path)
	if err != nil {
		return tool.Result{}, err
	}
	defer f.Close()
	if size > s.opts.MaxFileBytes {
		return tool.Result{}, sizeError(l, size, s.opts.MaxFileBytes, "read_file")
	}
	lr := s.lineReader(f)
	defer s.readers.Put(lr)
	defer lr.br.Reset(nil) // keep no file open through the pool
	br := lr.br
	head, err := br.Peek(binarySniff)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return tool.Result{}, osError(l.display(), err)
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "%q is a binary file (%d bytes)", l.display(), size).
			WithSuggestion("use get_file_info to see its type and size; read_file shows text only")
	}
	w, err := s.readLines(ctx, br, lr.keep, in.Offset, in.Limit, size)
	if err != nil {
		return tool.Result{}, tool.Errorf(tool.Internal, "reading %q: %w", l.display(), err)
	}
	meta := map[string]any{"path": l.display(), "total_lines": w.total, "size": size}
	if w.total == 0 {
		meta["start_line"], meta["end_line"] = 0, 0
		return result("(empty file)", nil, meta), nil
	}
	if in.Offset > w.total {
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "offset %d is past the end of %q, which has %d lines", in.Offset, l.display(), w.total).
			WithSuggestion("use an offset between 1 and %d", w.total).WithDetail("total_lines", w.total)
	}
	end := in.Offset + w.shown - 1
	meta["start_line"], meta["end_line"] = in.Offset, end
	meta["truncated"] = end < w.total
	if w.cut > 0 {
		meta["long_lines_cut"] = w.cut
	}
	text := w.text.String()
	if end < w.total {
		why := ""
		if w.capped {
			why = fmt.Sprintf(", output cap of %d bytes reached", s.opts.MaxOutputBytes)
		}
		text += fmt.Sprintf("\n(showing lines %d-%d of %d%s; continue with offset=%d)", in.Offset, end, w.total, why, end+1)
	}
	return result(text, nil, meta), nil
}

// openForRead opens the file p names for read_file: by openBeneath where it
// can, else by the walk (resolve, the protected paths, openRead).
func (s *Set) openForRead(p string) (Location, io.ReadCloser, int64, error) {
	if l, f, size, ok := s.openBeneath(p); ok {
		return l, f, size, nil
	}
	l, err := s.resolve(p, true, Read)
	if err != nil {
		return Location{}, nil, 0, err
	}
	f, fi, err := s.openRead(l)
	if err != nil {
		return Location{}, nil, 0, err
	}
	return l, f, fi.Size(), nil
}

// lineReader is read_file's buffers, reused from call to call (Set.readers):
// a 64 KiB reader and the room for one line.
type lineReader struct {
	br   *bufio.Reader
	keep []byte
}

// lineReader returns pooled buffers reading f.
func (s *Set) lineReader(f io.Reader) *lineReader {
	if lr, ok := s.readers.Get().(*lineReader); ok {
		lr.br.Reset(f)
		return lr
	}
	return &lineReader{br: bufio.NewReaderSize(f, readBufBytes), keep: make([]byte, 0, 4*MaxLineChars+4)}
}

// window is what readLines collected.
type window struct {
	text   strings.Builder
	shown  int // lines shown
	total  int // lines in the file
	cut    int // long lines cut
	capped bool
}

// readLines streams br: it skips to line offset, formats up to limit lines
// (bounded by the output cap), then only counts the remaining lines. Memory
// stays bounded by the buffer and the shown text, whatever the file's size.
// keep is room for one line (its capacity is what is kept of a line); the
// text is given room for a file of size bytes with its line numbers (up to
// 64 KiB) at once.
func (s *Set) readLines(ctx context.Context, br *bufio.Reader, keep []byte, offset, limit int, size int64) (*window, error) {
	w := &window{}
	w.text.Grow(int(min(max(size, 0)+size/4+64, 64<<10)))
	line := 0
	for {
		if line%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if line+1 >= offset && w.shown < limit && !w.capped {
			kept, total, err := readLine(br, keep, cap(keep))
			if total == 0 && err != nil {
				w.total = line
				return w, ignoreEOF(err)
			}
			line++
			s.formatLine(w, line, kept, total)
			if err != nil {
				w.total = line
				return w, ignoreEOF(err)
			}
			continue
		}
		if line+1 < offset {
			n, err := skipLine(br)
			if n == 0 && err != nil {
				w.total = line
				return w, ignoreEOF(err)
			}
			line++
			if err != nil {
				w.total = line
				return w, ignoreEOF(err)
			}
			continue
		}
		// Past the window: count the remaining lines in large chunks.
		n, err := countLines(ctx, br)
		w.total = line + n
		return w, err
	}
}

func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// readLine reads one line (through its newline) and keeps at most max of
// its bytes in keep. total is the line's full length.
func readLine(br *bufio.Reader, keep []byte, max int) ([]byte, int, error) {
	kept, total := keep[:0], 0
	for {
		frag, err := br.ReadSlice('\n')
		total += len(frag)
		if room := max - len(kept); room > 0 {
			kept = append(kept, frag[:min(room, len(frag))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return kept, total, err
	}
}

// skipLine discards one line and returns its length.
func skipLine(br *bufio.Reader) (int, error) {
	n := 0
	for {
		frag, err := br.ReadSlice('\n')
		n += len(frag)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return n, err
	}
}

// countLines counts the lines left in br (a last line without a newline
// counts too).
func countLines(ctx context.Context, br *bufio.Reader) (int, error) {
	buf := make([]byte, countBufBytes)
	n, last := 0, byte('\n')
	for i := 0; ; i++ {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
		}
		k, err := br.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if errors.Is(err, io.EOF) {
			if last != '\n' {
				n++
			}
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// formatLine appends "N|text" for one line, cutting it when long and
// showing invalid UTF-8 as U+FFFD. A short valid line, the common case, is
// appended as it is, with no copy of its own.
func (s *Set) formatLine(w *window, n int, b []byte, total int) {
	cut := len(b) < total // bytes beyond what was kept
	if !cut {
		b = bytes.TrimSuffix(b, []byte{'\n'})
		b = bytes.TrimSuffix(b, []byte{'\r'})
	}
	var text []byte
	if !cut && len(b) <= MaxLineChars && utf8.Valid(b) {
		text = b // at most MaxLineChars bytes: at most as many runes
	} else {
		text = []byte(s.fitLine(w, b, total, cut))
	}
	var num [20]byte
	prefix := strconv.AppendInt(num[:0], int64(n), 10)
	if w.text.Len()+len(prefix)+1+len(text)+1 > s.opts.MaxOutputBytes && w.shown > 0 {
		w.capped = true
		return
	}
	if w.shown > 0 {
		w.text.WriteByte('\n')
	}
	w.text.Write(prefix)
	w.text.WriteByte('|')
	w.text.Write(text)
	w.shown++
}

// fitLine is a line that is cut or not valid UTF-8 as shown: invalid bytes
// as U+FFFD, at most MaxLineChars characters, and a marker when cut.
func (s *Set) fitLine(w *window, b []byte, total int, cut bool) string {
	text := strings.ToValidUTF8(string(b), "\uFFFD")
	if utf8.RuneCountInString(text) > MaxLineChars {
		i, c := 0, 0
		for i = range text {
			if c == MaxLineChars {
				break
			}
			c++
		}
		text, cut = text[:i], true
	}
	if cut {
		w.cut++
		text += fmt.Sprintf(" … [line cut: %d bytes in all]", total)
	}
	return text
}
