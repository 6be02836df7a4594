package patch

import (
	"fmt"
	"strings"
)

// Markers of the format.
const (
	BeginPatch = "*** Begin Patch"
	EndPatch   = "*** End Patch"
	AddFile    = "*** Add File: "
	DeleteFile = "*** Delete File: "
	UpdateFile = "*** Update File: "
	MoveTo     = "*** Move to: "
	EndOfFile  = "*** End of File"
)

// Kind is what a FileOp does.
type Kind string

// Kinds of FileOp.
const (
	Add    Kind = "add"
	Delete Kind = "delete"
	Update Kind = "update"
)

// Patch is a parsed patch: its file operations, in order.
type Patch struct {
	Files []FileOp
}

// FileOp is one file operation of a patch.
type FileOp struct {
	Kind Kind
	Path string // as written in the patch; the caller resolves and confines it
	// MoveTo is the new path of an updated file ("" when it stays).
	MoveTo string
	// Content is the whole content of an added file: its "+" lines, each
	// ending with "\n".
	Content string
	Hunks   []Hunk // Update: the changes, in file order
	Line    int    // line of the operation's header in the patch, from 1
}

// Hunk is one change of an updated file: the Old lines (context and removed
// lines, in order) are replaced by the New lines (context and added lines).
type Hunk struct {
	// Context is the text after "@@ ", a line (e.g. "func main() {") that
	// comes before the hunk in the file; "" for none.
	Context string
	Old     []string
	New     []string
	// Ops holds the kind of each line of the hunk in order: ' ' (context:
	// the next line of both Old and New), '-' (the next of Old), '+' (the
	// next of New). ApplyHunks uses it to keep the file's own text of the
	// context lines it matched loosely; without it, New is written as is.
	Ops string
	// EOF says the hunk ends at the end of the file ("*** End of File").
	EOF  bool
	Line int // line of the hunk in the patch, from 1
}

// ParseError is a patch that does not follow the format: where (Line, from
// 1; 0 for the patch as a whole), what is wrong, and what was expected.
type ParseError struct {
	Line     int
	Problem  string
	Expected string
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString("invalid patch")
	if e.Line > 0 {
		fmt.Fprintf(&b, " at line %d", e.Line)
	}
	b.WriteString(": ")
	b.WriteString(e.Problem)
	if e.Expected != "" {
		b.WriteString("; expected ")
		b.WriteString(e.Expected)
	}
	return b.String()
}

const headers = "'*** Add File: PATH', '*** Delete File: PATH', '*** Update File: PATH' or '*** End Patch'"

// Parse parses a patch. Its errors are *ParseError.
func Parse(text string) (*Patch, error) {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	// first is the index of lines[0] in the text, to report line numbers.
	first := 0
	for first < len(lines) && strings.TrimSpace(lines[first]) == "" {
		first++
	}
	last := len(lines) - 1
	for last >= first && strings.TrimSpace(lines[last]) == "" {
		last--
	}
	if first > last {
		return nil, &ParseError{Problem: "the patch is empty", Expected: "'" + BeginPatch + "' on the first line"}
	}
	// A heredoc wrapper (<<'EOF' … EOF), as models sometimes send.
	if h := strings.TrimSpace(lines[first]); (h == "<<EOF" || h == "<<'EOF'" || h == `<<"EOF"`) &&
		last-first >= 3 && strings.HasSuffix(strings.TrimSpace(lines[last]), "EOF") {
		first++
		last--
	}
	if strings.TrimSpace(lines[first]) != BeginPatch {
		return nil, &ParseError{Line: first + 1, Problem: fmt.Sprintf("the patch starts with %q", clip(lines[first])), Expected: "'" + BeginPatch + "'"}
	}
	if first == last || strings.TrimSpace(lines[last]) != EndPatch {
		return nil, &ParseError{Line: last + 1, Problem: fmt.Sprintf("the patch ends with %q", clip(lines[last])), Expected: "'" + EndPatch + "' on the last line"}
	}
	p := &parser{lines: lines, i: first + 1, end: last}
	patch := &Patch{}
	for p.i < p.end {
		if strings.TrimSpace(p.lines[p.i]) == "" {
			p.i++
			continue
		}
		op, err := p.op()
		if err != nil {
			return nil, err
		}
		patch.Files = append(patch.Files, op)
	}
	if len(patch.Files) == 0 {
		return nil, &ParseError{Line: last + 1, Problem: "the patch changes no file", Expected: headers}
	}
	return patch, nil
}

type parser struct {
	lines []string
	i     int // next line
	end   int // index of the End Patch line
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// op parses one file operation at p.i.
func (p *parser) op() (FileOp, error) {
	header := strings.TrimSpace(p.lines[p.i])
	line := p.i + 1
	path := func(marker string) (string, error) {
		path := strings.TrimSpace(strings.TrimPrefix(header, strings.TrimSpace(marker)))
		if path == "" {
			return "", &ParseError{Line: line, Problem: "the path is missing", Expected: "'" + marker + "PATH'"}
		}
		return path, nil
	}
	switch {
	case strings.HasPrefix(header, AddFile) || header == strings.TrimSpace(AddFile):
		path, err := path(AddFile)
		if err != nil {
			return FileOp{}, err
		}
		p.i++
		var b strings.Builder
		for p.i < p.end && strings.HasPrefix(p.lines[p.i], "+") {
			b.WriteString(p.lines[p.i][1:])
			b.WriteString("\n")
			p.i++
		}
		if p.i < p.end && !strings.HasPrefix(strings.TrimSpace(p.lines[p.i]), "*** ") && strings.TrimSpace(p.lines[p.i]) != "" {
			return FileOp{}, &ParseError{Line: p.i + 1, Problem: fmt.Sprintf("%q in the added file %s does not start with '+'", clip(p.lines[p.i]), path),
				Expected: "every line of an added file to start with '+', or the next header: " + headers}
		}
		return FileOp{Kind: Add, Path: path, Content: b.String(), Line: line}, nil
	case strings.HasPrefix(header, DeleteFile) || header == strings.TrimSpace(DeleteFile):
		path, err := path(DeleteFile)
		if err != nil {
			return FileOp{}, err
		}
		p.i++
		return FileOp{Kind: Delete, Path: path, Line: line}, nil
	case strings.HasPrefix(header, UpdateFile) || header == strings.TrimSpace(UpdateFile):
		path, err := path(UpdateFile)
		if err != nil {
			return FileOp{}, err
		}
		p.i++
		op := FileOp{Kind: Update, Path: path, Line: line}
		if p.i < p.end {
			if m := strings.TrimSpace(p.lines[p.i]); strings.HasPrefix(m, MoveTo) || m == strings.TrimSpace(MoveTo) {
				op.MoveTo = strings.TrimSpace(strings.TrimPrefix(m, strings.TrimSpace(MoveTo)))
				if op.MoveTo == "" {
					return FileOp{}, &ParseError{Line: p.i + 1, Problem: "the path to move to is missing", Expected: "'" + MoveTo + "PATH'"}
				}
				p.i++
			}
		}
		for p.i < p.end {
			l := p.lines[p.i]
			if strings.TrimSpace(l) == "" {
				p.i++
				continue
			}
			if strings.HasPrefix(l, "*") {
				break
			}
			h, err := p.hunk(len(op.Hunks) == 0)
			if err != nil {
				return FileOp{}, err
			}
			op.Hunks = append(op.Hunks, h)
		}
		if len(op.Hunks) == 0 {
			return FileOp{}, &ParseError{Line: line, Problem: fmt.Sprintf("the update of %s has no hunk", path),
				Expected: "a hunk after the header: '@@' (or '@@ CONTEXT LINE') then lines starting with ' ', '-' or '+'"}
		}
		return op, nil
	}
	return FileOp{}, &ParseError{Line: line, Problem: fmt.Sprintf("%q is not a file operation", clip(p.lines[p.i])), Expected: headers}
}

// hunk parses one hunk at p.i; the first hunk of a file may omit "@@".
func (p *parser) hunk(first bool) (Hunk, error) {
	l := p.lines[p.i]
	h := Hunk{Line: p.i + 1}
	switch {
	case strings.TrimSpace(l) == "@@":
		p.i++
	case strings.HasPrefix(l, "@@ "):
		h.Context = l[len("@@ "):]
		p.i++
	case !first:
		return Hunk{}, &ParseError{Line: p.i + 1, Problem: fmt.Sprintf("%q does not start a hunk", clip(l)),
			Expected: "'@@' or '@@ CONTEXT LINE' to start the next hunk, or the next header: " + headers}
	}
	n := 0
	for ; p.i < p.end; p.i++ {
		l := p.lines[p.i]
		if strings.TrimSpace(l) == EndOfFile {
			if n == 0 {
				return Hunk{}, &ParseError{Line: p.i + 1, Problem: "the hunk has no line before '" + EndOfFile + "'", Expected: "lines starting with ' ', '-' or '+'"}
			}
			h.EOF = true
			p.i++
			break
		}
		if l == "" {
			h.Old, h.New = append(h.Old, ""), append(h.New, "")
			h.Ops += " "
		} else {
			switch l[0] {
			case ' ':
				h.Old, h.New = append(h.Old, l[1:]), append(h.New, l[1:])
				h.Ops += " "
			case '-':
				h.Old = append(h.Old, l[1:])
				h.Ops += "-"
			case '+':
				h.New = append(h.New, l[1:])
				h.Ops += "+"
			default:
				if n == 0 {
					return Hunk{}, &ParseError{Line: p.i + 1, Problem: fmt.Sprintf("%q in a hunk does not start with ' ', '-' or '+'", clip(l)),
						Expected: "context lines starting with ' ', removed lines with '-', added lines with '+'"}
				}
				return h, nil
			}
		}
		n++
	}
	if n == 0 {
		return Hunk{}, &ParseError{Line: h.Line, Problem: "the hunk has no line", Expected: "lines starting with ' ', '-' or '+' after '@@'"}
	}
	return h, nil
}
