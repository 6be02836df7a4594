package fs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sync"

	"github.com/toolgate/toolgate/tool"
)

// Set is the file tool set over some roots.
type Set struct {
	roots *Roots
	opts  Options
	guard *guard

	// readers holds read_file's *lineReader buffers between calls.
	readers sync.Pool

	// afterRead, when set (by tests), runs between reading a file and
	// writing it back.
	afterRead func(Location)
	// beforeOpen, when set (by tests), runs between openBeneath's type
	// check and its open.
	beforeOpen func(Location)
}

// New returns the file tool set over roots. It checks opts (the protected
// path globs must be valid); the roots stay owned by the caller.
func New(roots *Roots, opts Options) (*Set, error) {
	if roots == nil || len(roots.list) == 0 {
		return nil, errors.New("fs: no roots")
	}
	opts = opts.withDefaults()
	g, err := newGuard(opts.Rules, opts.AllowSecrets)
	if err != nil {
		return nil, err
	}
	return &Set{roots: roots, opts: opts, guard: g}, nil
}

// Tools is New followed by Set.Tools: the usual way to register the file
// tools, e.g. for `toolgate call --root DIR`:
//
//	roots, err := fs.OpenRoots(rootFlags...)
//	...
//	defer roots.Close()
//	tools, err := fs.Tools(roots, fs.Options{})
func Tools(roots *Roots, opts Options) ([]tool.Tool, error) {
	s, err := New(roots, opts)
	if err != nil {
		return nil, err
	}
	return s.Tools(), nil
}

// Tools returns the file tools, all tagged "fs".
func (s *Set) Tools() []tool.Tool {
	return []tool.Tool{
		s.readFileTool(),
		s.writeFileTool(),
		s.editFileTool(),
		s.applyPatchTool(),
		s.listDirectoryTool(),
		s.searchFilesTool(),
		s.getFileInfoTool(),
		s.createDirectoryTool(),
		s.moveFileTool(),
		s.deleteFileTool(),
	}
}

// Roots returns the roots the set works in.
func (s *Set) Roots() *Roots { return s.roots }

// resolve resolves p (following a final symbolic link or not) and applies
// the protected-path rules for acc, both to the path as written and to
// where it leads.
func (s *Set) resolve(p string, follow bool, acc Access) (Location, error) {
	l, err := s.roots.resolve(p, follow)
	if err != nil {
		return Location{}, err
	}
	if err := s.guard.check(l, acc); err != nil {
		return Location{}, err
	}
	// A path the policy asks about must be named, not reached: through a
	// link, or a ".." after one, the policy saw another path; and a place
	// an asked path at the top leads to (.github -> gh) is that path.
	if acc&Write != 0 && s.guard.asked(s.roots.named(p)) == nil {
		r := s.guard.asked(l.Rel)
		if r == nil {
			r = aliased(l, s.aliases(l.Root))
		}
		if r != nil {
			return Location{}, unnamed(p, l, r)
		}
	}
	if !follow {
		return l, nil
	}
	// The name as written may itself be protected (a link named .env).
	if nl, err := s.roots.resolve(p, false); err == nil && nl.Rel != l.Rel {
		if err := s.guard.check(nl, acc); err != nil {
			return Location{}, err
		}
	}
	return l, nil
}

// strict wraps a typed tool so that Run refuses arguments the schema does
// not name (even without the engine's validation in front of it).
type strict struct {
	tool.Tool
	in reflect.Type
}

func (t strict) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	args := bytes.TrimSpace(call.Args)
	if len(args) > 0 && !bytes.Equal(args, []byte("null")) {
		if args[0] != '{' {
			return tool.Result{}, tool.Errorf(tool.InvalidArguments, "the arguments must be a JSON object").
				WithSuggestion("send an object with the parameters of %s", t.Definition().Name)
		}
		if f, ok := t.Tool.(fitter); !ok || !f.Fits(args) {
			if err := t.check(args); err != nil {
				return tool.Result{}, err
			}
		}
	}
	return t.Tool.Run(ctx, call)
}

// fitter is a typed tool (tool.New) that can tell cheaply that arguments
// fit its input (see its Fits): the common case, for which the check
// below would decode them once more for nothing.
type fitter interface{ Fits(args []byte) bool }

// check decodes args, a JSON object, into the tool's input refusing keys
// that are not its fields, and refuses anything after the object.
func (t strict) check(args []byte) *tool.Error {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(reflect.New(t.in).Interface()); err != nil {
		return tool.Errorf(tool.InvalidArguments, "arguments do not fit %s's parameters: %v", t.Definition().Name, err).
			WithSuggestion("use only the parameters in the tool's input schema, with their types")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return tool.Errorf(tool.InvalidArguments, "unexpected data after the arguments object").
			WithSuggestion("send exactly one JSON object")
	}
	return nil
}

// newTool builds a typed tool (tagged "fs") whose structured output has the
// type of out, and makes its Run strict. The tool is built on first use
// (tool.Lazy): a process that runs one call infers only that tool's
// schemas.
func newTool[In any](name, desc string, out any, fn func(context.Context, In) (tool.Result, error), opts ...tool.Option) tool.Tool {
	opts = append(opts, tool.WithTags("fs"))
	return tool.Lazy(tool.HeadOf(name, desc, opts...), func() tool.Tool {
		opts := opts
		if out != nil {
			schema, err := tool.InferSchema(reflect.TypeOf(out))
			if err != nil {
				panic(fmt.Sprintf("fs: output schema of %s: %v", name, err))
			}
			opts = append(slices.Clip(opts), tool.WithOutputSchema(schema))
		}
		return strict{Tool: tool.New(name, desc, fn, opts...), in: reflect.TypeFor[In]()}
	})
}

// result builds a result with text, a structured value and metadata.
func result(text string, structured any, meta map[string]any) tool.Result {
	r := tool.TextResult(text)
	r.Structured = structured
	r.Meta = meta
	return r
}
