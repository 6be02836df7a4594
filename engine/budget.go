package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/toolgate/toolgate/tool"
)

// Spill is where results over the budget are written in full.
//
// Root is a folder toolgate trusts (a workspace root, or a folder the policy
// names) and Dir a slash path inside it ("" or "." for Root itself), which
// the engine creates (0700) when needed. The tools, and the commands they
// run, may change what lies inside a workspace, so no part of Dir may be a
// symbolic link or anything but a folder: the spill is then refused rather
// than written (and old spills removed) wherever a link points. Only files
// named as the engine names spills are ever removed.
type Spill struct {
	Root   string
	Dir    string
	ShowAs string // how the model names Dir in read_file, e.g. ".toolgate/spill"
}

// budget redacts secrets from what goes back to the model and caps its size.
// A longer text is cut at a character boundary; with a Spill folder the full
// text is kept there and the model is told how to read the rest.
func (e *Engine) budget(next handler) handler {
	return func(ctx context.Context, p *pending) tool.Result {
		res := next(ctx, p)
		if e.opts.Redactor != nil {
			res = e.redact(ctx, res)
		}
		max := e.maxResultBytes(p.def.Name)
		if max < 0 {
			return res
		}
		total := 0
		for _, c := range res.Content {
			total += len(c.Text) + len(c.Data)
		}
		if total <= max {
			return res
		}
		return e.cut(res, p, max, total)
	}
}

// maxResultBytes is the output budget of the named tool: the entry of
// MaxResultBytesPerTool that decides for it (policy.GlobMap), else
// MaxResultBytes.
func (e *Engine) maxResultBytes(name string) int {
	if e.budgetsTie {
		return e.smallestBudget(name)
	}
	if m, _, ok := e.budgets.Lookup(name); ok {
		return m
	}
	return e.opts.MaxResultBytes
}

// smallestBudget is the budget of Options whose globs tie: the smallest
// of those that match (a negative one, unlimited, is the largest).
func (e *Engine) smallestBudget(name string) int {
	best, found := 0, false
	for g, m := range e.opts.MaxResultBytesPerTool {
		if ok, _ := path.Match(g, name); ok && (!found || best < 0 || m >= 0 && m < best) {
			best, found = m, true
		}
	}
	if !found {
		return e.opts.MaxResultBytes
	}
	return best
}

// redact replaces secrets in text content and in the structured value
// (each of its strings as a text, policy.Redactor.RedactJSON).
// The structured value's bytes are read first: where they are quiet (no
// secret's literal in them, as RedactJSON reports), a text block
// that is one of its strings (the output a process answer repeats,
// tool.EncodedIn) needs no reading of its own when it is ASCII
// (QuietInside): it cannot hold a secret either. A structured value still
// what an upstream's bytes were decoded into (tool.Relay) is encoded only
// when those bytes, or the text blocks its strings repeat (read first,
// policy.Redactor.Quiet, and not searched again), do not rule a secret
// out in its encoding (policy.Redactor.MayMatchJSON).
func (e *Engine) redact(ctx context.Context, res tool.Result) tool.Result {
	r := e.opts.Redactor
	n := 0
	var quiet []byte        // the structured value's bytes, when quiet
	var quietTexts []string // text blocks Quiet found quiet
	var quietBuf [4]bool
	quietAt := quietBuf[:0] // by index of res.Content: Quiet found it quiet
	if res.Structured != nil {
		raw, relayed := res.Relay.StructuredFor(res.Structured)
		if relayed {
			quietAt = append(quietAt, make([]bool, len(res.Content))...)
			for i, c := range res.Content {
				if redactable(c) && r.Quiet(c.Text) {
					quietTexts = append(quietTexts, c.Text)
					quietAt[i] = true
				}
			}
		}
		if !relayed || r.MayMatchJSON(raw, res.Structured, quietTexts) {
			if b, err := tool.MarshalJSON(ctx, res.Structured); err == nil {
				// MarshalJSON's bytes are never changed (they are kept
				// for the call's other readers): read as a string in
				// place, not copied.
				t, k, q := r.RedactJSON(unsafe.String(unsafe.SliceData(b), len(b)))
				if q {
					quiet = b
				}
				if k > 0 {
					var v any
					if json.Unmarshal([]byte(t), &v) == nil {
						res.Structured, n = v, n+k
					} else {
						res.Structured = nil // never leak what could not be redacted
					}
				}
			}
		}
	}
	var content []tool.Content
	for i, c := range res.Content {
		if !redactable(c) || i < len(quietAt) && quietAt[i] {
			continue
		}
		if quiet != nil && tool.EncodedIn(ctx, quiet, c.Text) && r.QuietInside(c.Text) {
			continue
		}
		t, k := r.Redact(c.Text)
		if k == 0 {
			continue
		}
		if content == nil {
			content = append([]tool.Content(nil), res.Content...)
		}
		content[i].Text = t
		n += k
	}
	if content != nil {
		res.Content = content
	}
	if n > 0 {
		res = withMeta(res, "redacted", n)
	}
	return res
}

// redactable reports whether c's text is searched for secrets.
func redactable(c tool.Content) bool {
	return c.Type == "text" || c.Type == "resource"
}

// cut keeps the first max bytes of content and, with a Spill folder, writes
// the whole text there.
func (e *Engine) cut(res tool.Result, p *pending, max, total int) tool.Result {
	var full strings.Builder
	left := max
	content := make([]tool.Content, 0, len(res.Content))
	for _, c := range res.Content {
		if c.Type == "text" {
			full.WriteString(c.Text)
		}
		size := len(c.Text) + len(c.Data)
		switch {
		case size <= left:
			left -= size
		case c.Type == "text":
			n := left
			for n > 0 && !utf8.RuneStart(c.Text[n]) {
				n-- // never cut a character in two
			}
			c.Text = c.Text[:n]
			left = 0
		default:
			c = tool.TextContent(fmt.Sprintf("[%s content of %d bytes left out: over the output budget]", c.Type, size))
			left = 0
		}
		content = append(content, c)
	}
	shown := 0
	for _, c := range content {
		shown += len(c.Text)
	}
	note := fmt.Sprintf("\n…[output truncated: showing %d of %d bytes. Ask for less: a narrower query, a smaller range or a limit]", shown, total)
	meta := map[string]any{"bytes": total, "limit": max}
	if name, err := e.spill(full.String()); err == nil && name != "" {
		line := strings.Count(textOf(content), "\n") + 1
		note = fmt.Sprintf("\n…[output truncated: showing %d of %d bytes. The whole output is in %s: read the rest with read_file {\"path\":%q,\"offset\":%d}]",
			shown, total, name, name, line)
		meta["spill"] = name
	} else if err != nil {
		e.log.Warn("spill failed", "tool", p.def.Name, "err", err)
	}
	content = append(content, tool.TextContent(note))
	res.Content = content
	return withMeta(res, "truncated", meta)
}

func textOf(content []tool.Content) string {
	var b strings.Builder
	for _, c := range content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// spill writes text to a new file in the spill folder, returning its name as
// the model should use it ("" when there is no spill folder). Spills older
// than a day are removed on the way once there are more than 64.
func (e *Engine) spill(text string) (string, error) {
	s := e.opts.Spill
	if s.Root == "" {
		return "", nil
	}
	dir, err := openSpillDir(s.Root, s.Dir)
	if err != nil {
		return "", err
	}
	defer dir.Close()
	if f, err := dir.Open("."); err == nil {
		entries, _ := f.ReadDir(-1)
		f.Close()
		for _, en := range entries {
			if len(entries) <= 64 {
				break
			}
			if !en.Type().IsRegular() || !spillName.MatchString(en.Name()) {
				continue
			}
			if info, err := en.Info(); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
				dir.Remove(en.Name())
			}
		}
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	name := time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(rnd[:]) + ".txt"
	tmp := ".spill-" + hex.EncodeToString(rnd[:])
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = dir.Rename(tmp, name)
	}
	if err != nil {
		dir.Remove(tmp)
		return "", err
	}
	show := s.ShowAs
	if show == "" {
		show = filepath.Join(s.Root, filepath.FromSlash(s.Dir))
	}
	return path.Join(filepath.ToSlash(show), name), nil
}

// spillName is the name spill gives its files.
var spillName = regexp.MustCompile(`^[0-9]{8}-[0-9]{6}-[0-9a-f]{12}\.txt$`)

// openSpillDir opens dir inside root, creating what is missing, and refuses
// a symbolic link (or anything but a folder) at any step of dir.
func openSpillDir(root, dir string) (*os.Root, error) {
	if err := os.MkdirAll(root, 0o700); err != nil { // trusted: links followed
		return nil, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	for _, step := range strings.Split(path.Clean("/" + dir)[1:], "/") {
		if step == "" {
			continue
		}
		fi, err := r.Lstat(step)
		if errors.Is(err, fs.ErrNotExist) {
			err = r.Mkdir(step, 0o700)
			if err == nil || errors.Is(err, fs.ErrExist) {
				fi, err = r.Lstat(step)
			}
		}
		if err == nil && !fi.IsDir() { // a link's mode is not a folder's
			err = fmt.Errorf("engine: the spill folder's %q is not a folder (%s): refusing to write through it", step, fi.Mode().Type())
		}
		var next *os.Root
		if err == nil {
			next, err = r.OpenRoot(step)
		}
		r.Close()
		if err != nil {
			return nil, err
		}
		r = next
	}
	return r, nil
}
