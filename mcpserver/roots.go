package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/tool"
)

// callInfo is what the server tells the engine's stages about a call, in
// its context.
type callInfo struct {
	session  *mcp.ServerSession
	narrowed bool     // client roots narrow the server roots
	allowed  []string // the folders the call may touch when narrowed
	base     string   // folder of relative paths (the first server root)
	input    inputCall
}

type callInfoKey struct{}

// callCtx is a call's context with its callInfo (newCallCtx): one
// allocation for the two, where context.WithValue and a new callInfo make
// two. It answers Value for callInfoKey and asks its parent for every
// other key, as context.WithValue's would; Done, Err and Deadline are its
// parent's.
type callCtx struct {
	context.Context
	ci callInfo
}

// newCallCtx returns ctx with an empty callInfo, and that callInfo, for
// the caller to fill in before the context is used.
func newCallCtx(ctx context.Context) (context.Context, *callInfo) {
	c := &callCtx{Context: ctx}
	return c, &c.ci
}

func (c *callCtx) Value(key any) any {
	if key == (callInfoKey{}) {
		return &c.ci
	}
	return c.Context.Value(key)
}

// toolCallCtx is a tools/call's context: its parent with the call's
// encoded values and logger (tool.CallContext) and its callInfo, in one
// allocation where tool.WithEncodedLogger and newCallCtx make two. It
// answers Value for callInfoKey, and for every other key as
// tool.CallContext does.
type toolCallCtx struct {
	tool.CallContext
	ci callInfo
}

// newToolCallCtx returns tool.WithEncodedLogger(ctx, l) with an empty
// callInfo (newCallCtx), and that callInfo.
func newToolCallCtx(ctx context.Context, l *slog.Logger) (context.Context, *callInfo) {
	c := &toolCallCtx{}
	c.Init(ctx, l)
	return c, &c.ci
}

func (c *toolCallCtx) Value(key any) any {
	if key == (callInfoKey{}) {
		return &c.ci
	}
	return c.CallContext.Value(key)
}

func callInfoFrom(ctx context.Context) *callInfo {
	ci, _ := ctx.Value(callInfoKey{}).(*callInfo)
	return ci
}

// SessionFromContext returns the MCP session of the call running in ctx,
// or nil outside a call served by a Server. Tools that talk back to the
// client (sampling, elicitation, roots) use it.
func SessionFromContext(ctx context.Context) *mcp.ServerSession {
	if ci := callInfoFrom(ctx); ci != nil {
		return ci.session
	}
	return nil
}

// PathFunc returns the file-system paths a call would touch. known is false
// when the call's paths cannot be told from its arguments (e.g. they hide
// inside a patch); such a call is refused while client roots narrow the
// session.
type PathFunc func(def tool.Definition, args json.RawMessage) (paths []string, known bool)

// PathArgs returns a PathFunc that reads the top-level string arguments of
// the given names (and arrays of strings under those names).
func PathArgs(names ...string) PathFunc {
	return func(_ tool.Definition, args json.RawMessage) ([]string, bool) {
		var m map[string]json.RawMessage
		if len(args) == 0 || string(args) == "null" {
			return nil, true
		}
		if err := json.Unmarshal(args, &m); err != nil {
			return nil, false
		}
		var out []string
		for _, n := range names {
			raw, ok := m[n]
			if !ok {
				continue
			}
			var one string
			var many []string
			switch {
			case json.Unmarshal(raw, &one) == nil:
				out = append(out, one)
			case json.Unmarshal(raw, &many) == nil:
				out = append(out, many...)
			default:
				return nil, false
			}
		}
		return out, true
	}
}

// Opaque returns paths, except that calls of the named tools count as
// unknown (refused while client roots narrow the session): tools whose
// paths hide in their arguments, such as a patch.
func Opaque(paths PathFunc, tools ...string) PathFunc {
	return func(def tool.Definition, args json.RawMessage) ([]string, bool) {
		for _, t := range tools {
			if def.Name == t {
				return nil, false
			}
		}
		return paths(def, args)
	}
}

// DefaultPaths reads the arguments "path", "source" and "destination".
var DefaultPaths = PathArgs("path", "source", "destination")

// ClientRoots returns an engine.Limiter that enforces the client-roots rule
// (see the package doc) on calls served by a Server, then defers to next
// (nil: none). paths finds a call's paths (nil: DefaultPaths). Install it as
// engine.Options.Limiter of the engine a Server executes with.
func ClientRoots(next engine.Limiter, paths PathFunc) engine.Limiter {
	if paths == nil {
		paths = DefaultPaths
	}
	return &rootsLimiter{next: next, paths: paths}
}

type rootsLimiter struct {
	next  engine.Limiter
	paths PathFunc
}

func (l *rootsLimiter) Acquire(ctx context.Context, call tool.Call, def tool.Definition) (func(tool.Result), *tool.Error) {
	if ci := callInfoFrom(ctx); ci != nil && ci.narrowed {
		if err := ci.check(def, call, l.paths); err != nil {
			return nil, err
		}
	}
	if l.next == nil {
		return func(tool.Result) {}, nil
	}
	return l.next.Acquire(ctx, call, def)
}

// check refuses a call with a path outside the allowed folders.
func (ci *callInfo) check(def tool.Definition, call tool.Call, paths PathFunc) *tool.Error {
	ps, known := paths(def, call.Args)
	if !known {
		return tool.Errorf(tool.PermissionDenied, "%s cannot run in this session: the client limited it to some folders (its roots) and the paths %s would touch cannot be checked", def.Name, def.Name).
			WithSuggestion("use a tool that names its paths in its arguments (e.g. write_file or edit_file), inside %s", list(ci.allowed)).
			WithDetail("allowed_roots", ci.allowed)
	}
	for _, p := range ps {
		if !ci.inside(p) {
			return tool.Errorf(tool.PermissionDenied, "%q is outside the folders the client allows in this session (its roots)", p).
				WithSuggestion("use a path inside %s, or ask the user to add the folder to the client's roots", list(ci.allowed)).
				WithDetail("allowed_roots", ci.allowed).WithDetail("path", p)
		}
	}
	return nil
}

func list(dirs []string) string {
	if len(dirs) == 0 {
		return "(none: the client offers no folder that the server serves)"
	}
	return strings.Join(dirs, ", ")
}

// inside reports whether p, resolved as the file tools would resolve it
// (relative to the base, symbolic links followed), lies in an allowed folder.
func (ci *callInfo) inside(p string) bool {
	if p == "" || strings.ContainsRune(p, 0) {
		return false
	}
	if !filepath.IsAbs(p) {
		if ci.base == "" {
			return false
		}
		// Not filepath.Join: it would resolve ".." lexically, where the
		// file tools follow links first, as the kernel does.
		p = ci.base + string(filepath.Separator) + p
	}
	real, ok := realPath(p)
	if !ok {
		return false
	}
	for _, a := range ci.allowed {
		if within(real, a) {
			return true
		}
	}
	return false
}

// realPath resolves the symbolic links of p's longest existing prefix (as
// the kernel would: a ".." after a link climbs from the link's target) and
// appends the rest, which must be plain names (no "..").
func realPath(p string) (string, bool) {
	var rest []string
	cur := p
	for i := 0; i < 4096; i++ {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			for j := len(rest) - 1; j >= 0; j-- {
				real = filepath.Join(real, rest[j])
			}
			return real, true
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", false
		}
		if _, lerr := os.Lstat(cur); lerr == nil {
			return "", false // exists but cannot be resolved: a dangling link
		}
		dir, name := filepath.Split(cur)
		// dir keeps its ".." and links: EvalSymlinks resolves them as the
		// kernel does; a lexical Clean could hide a link that leads out.
		if dir = strings.TrimRight(dir, string(filepath.Separator)); dir == "" {
			dir = string(filepath.Separator)
		}
		if name == "" || name == ".." || dir == cur {
			return "", false
		}
		if name != "." {
			rest = append(rest, name)
		}
		cur = dir
	}
	return "", false
}
