package trust

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Canonical returns the canonical JSON of a JSON document: object keys
// sorted, no insignificant white space, strings and numbers as the
// document wrote them (numbers keep their literal text). Two documents
// that a JSON reader cannot tell apart have the same canonical form.
func Canonical(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trust: data after the JSON value")
	}
	// encoding/json writes map keys sorted and no white space.
	return json.Marshal(v)
}

// Hash is the pin of a tool definition: the SHA-256, in hex, of the
// canonical JSON of every field a model sees (name, title, description,
// input and output schemas with everything nested in them, annotations).
func Hash(def ToolDef) (string, error) {
	c, err := canonicalDef(def)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// canonicalDef is the canonical JSON of the fields of def a model sees.
func canonicalDef(def ToolDef) ([]byte, error) {
	raw, err := json.Marshal(def)
	if err != nil {
		return nil, fmt.Errorf("trust: tool %q: %w", def.Name, err)
	}
	c, err := Canonical(raw)
	if err != nil {
		return nil, fmt.Errorf("trust: tool %q: %w", def.Name, err)
	}
	return c, nil
}

// Identity is what an upstream is, beside its tools: for a command
// (stdio) upstream its command line and the SHA-256 of the file that
// command starts, and of files its arguments name (the script an
// interpreter runs); for an HTTP upstream its URL.
type Identity struct {
	Command    []string          `json:"command,omitempty"`
	Executable string            `json:"executable,omitempty"` // resolved through PATH and symbolic links
	SHA256     string            `json:"sha256,omitempty"`     // of Executable
	Files      map[string]string `json:"files,omitempty"`      // argument → SHA-256 of the regular file it names
	URL        string            `json:"url,omitempty"`
	// Box is what the upstream's box grants it (nil: none known).
	Box *Box `json:"box,omitempty"`
	// Resolved is what a package launcher (npx) resolved the upstream's
	// package to (nil: no launcher, or not known).
	Resolved *Resolved `json:"resolved,omitempty"`
}

// Resolved is what a launcher installed to run an upstream: the packages
// its command line names, each with the version installed, and a SHA-256
// over the installed tree (every file's path and content, every link's
// target), so that a changed dependency or file counts too.
type Resolved struct {
	Packages map[string]string `json:"packages"`
	Tree     string            `json:"tree"`
}

// Unpinnable begins the Tree of an install that cannot be pinned (a link
// in it leads out of it): the rest differs at each look and says why.
const Unpinnable = "unpinnable "

func equalResolved(a, b *Resolved) bool {
	if a == nil || b == nil {
		return a == b
	}
	return maps.Equal(a.Packages, b.Packages) && a.Tree == b.Tree
}

// Equal reports whether a and b are the same identity.
func (a Identity) Equal(b Identity) bool {
	return slices.Equal(a.Command, b.Command) && a.Executable == b.Executable && a.SHA256 == b.SHA256 &&
		maps.Equal(a.Files, b.Files) && a.URL == b.URL && equalBox(a.Box, b.Box) && equalResolved(a.Resolved, b.Resolved)
}

// sameButNarrower reports whether b is a with a box that grants no more
// (and something less), or with a launcher's resolution where a, pinned
// before resolutions were, has none: the pin takes b without a
// quarantine.
func (a Identity) sameButNarrower(b Identity) bool {
	ab, bb := a, b
	ab.Box, bb.Box = nil, nil
	if a.Resolved == nil {
		bb.Resolved = nil
	}
	return ab.Equal(bb) && len(a.Box.Widening(b.Box)) == 0
}

// Change says how b differs from a, in a few words ("" when equal).
func (a Identity) Change(b Identity) string {
	var out []string
	switch {
	case a.URL != b.URL:
		out = append(out, fmt.Sprintf("its URL changed from %q to %q", a.URL, b.URL))
	case !slices.Equal(a.Command, b.Command):
		out = append(out, fmt.Sprintf("its command line changed from %q to %q", strings.Join(a.Command, " "), strings.Join(b.Command, " ")))
	}
	if a.Executable != b.Executable && slices.Equal(a.Command, b.Command) {
		out = append(out, fmt.Sprintf("its command now starts %s, not %s", b.Executable, a.Executable))
	}
	if a.SHA256 != b.SHA256 && a.Executable == b.Executable {
		out = append(out, fmt.Sprintf("the executable %s changed (SHA-256 %.12s… was %.12s…)", b.Executable, b.SHA256, a.SHA256))
	}
	for _, k := range slices.Sorted(maps.Keys(b.Files)) {
		if old, ok := a.Files[k]; ok && old != b.Files[k] {
			out = append(out, fmt.Sprintf("the file %s changed", k))
		} else if !ok {
			out = append(out, fmt.Sprintf("the argument %s now names a file", k))
		}
	}
	for k := range a.Files {
		if _, ok := b.Files[k]; !ok {
			out = append(out, fmt.Sprintf("the argument %s no longer names a file", k))
		}
	}
	if w := a.Box.Widening(b.Box); len(w) > 0 {
		out = append(out, "its box grants more: "+strings.Join(w, ", "))
	}
	if a.Resolved != nil && !equalResolved(a.Resolved, b.Resolved) {
		switch {
		case b.Resolved == nil:
			out = append(out, "its launcher's resolution is no longer known")
		case !maps.Equal(a.Resolved.Packages, b.Resolved.Packages):
			for _, k := range slices.Sorted(maps.Keys(b.Resolved.Packages)) {
				if v := b.Resolved.Packages[k]; a.Resolved.Packages[k] != v {
					out = append(out, fmt.Sprintf("its launcher resolved %s to %s (pinned: %q)", k, v, a.Resolved.Packages[k]))
				}
			}
		case strings.HasPrefix(b.Resolved.Tree, Unpinnable):
			_, why, _ := strings.Cut(b.Resolved.Tree, ": ")
			out = append(out, "its launcher's install cannot be pinned ("+why+"): remove the upstream's launcher cache folder to install it again")
		default:
			out = append(out, fmt.Sprintf("its launcher installed another dependency tree (SHA-256 %.12s… was %.12s…)", b.Resolved.Tree, a.Resolved.Tree))
		}
	}
	return strings.Join(out, "; ")
}

// maxHashed bounds the size of a file hashed for an identity.
const maxHashed = 1 << 30

// Identify returns the identity of an upstream: its URL, or for a command
// started in dir ("" : the current folder) the command line, the file the
// command resolves to as os/exec resolves it (through this process's PATH
// when it has no slash) after symbolic links, its SHA-256, and the SHA-256
// of each argument that names a regular file (relative to dir). It fails
// when the executable cannot be found or read: an upstream whose identity
// cannot be known is not trusted.
func Identify(command string, args []string, dir, url string) (Identity, error) {
	return (*Hashes)(nil).Identify(command, args, dir, url)
}

// Identify is Identify with the hashes h kept (Hashes).
func (h *Hashes) Identify(command string, args []string, dir, url string) (Identity, error) {
	if command == "" {
		return Identity{URL: url}, nil
	}
	id := Identity{Command: append([]string{command}, args...)}
	path := command
	if !strings.ContainsRune(command, filepath.Separator) {
		p, err := exec.LookPath(command)
		if err != nil {
			return id, fmt.Errorf("trust: the command %q: %w", command, err)
		}
		path = p
	}
	path = under(dir, path)
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return id, fmt.Errorf("trust: the command %q: %w", command, err)
	}
	if real, err = filepath.Abs(real); err != nil {
		return id, fmt.Errorf("trust: the command %q: %w", command, err)
	}
	id.Executable = real
	if id.SHA256, err = h.sum(real); err != nil {
		return id, fmt.Errorf("trust: the command %q: %w", command, err)
	}
	for _, a := range args {
		if a == "" || strings.HasPrefix(a, "-") {
			continue
		}
		p := under(dir, a)
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		sum, err := h.sum(p)
		if err != nil {
			return id, fmt.Errorf("trust: the argument %q: %w", a, err)
		}
		if id.Files == nil {
			id.Files = map[string]string{}
		}
		id.Files[a] = sum
	}
	return id, nil
}

// under returns p taken relative to dir ("" : as it is).
func under(dir, p string) string {
	if dir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// Pretty returns a JSON document indented two spaces with its keys
// sorted, for people to read and diff (the document itself when it is not
// JSON).
func Pretty(doc []byte) string {
	c, err := Canonical(doc)
	if err != nil {
		return string(doc)
	}
	var b bytes.Buffer
	if json.Indent(&b, c, "", "  ") != nil {
		return string(doc)
	}
	return b.String()
}

// maxDiffLines bounds each side of a diff; longer texts are shown whole,
// one removed and one added.
const maxDiffLines = 4000

// Diff returns a unified-style line diff of two texts: lines only in old
// start with "-", lines only in new with "+", common lines with " ". The
// header names the two sides.
func Diff(oldName, old, newName, new string) string {
	a, b := lines(old), lines(new)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		for _, l := range a {
			out.WriteString("-" + l + "\n")
		}
		for _, l := range b {
			out.WriteString("+" + l + "\n")
		}
		return out.String()
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out.WriteString(" " + a[i] + "\n")
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("-" + a[i] + "\n")
			i++
		default:
			out.WriteString("+" + b[j] + "\n")
			j++
		}
	}
	return out.String()
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
