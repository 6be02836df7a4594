package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/tool"
)

// remoteTool is one upstream tool as a tool.Tool.
type remoteTool struct {
	u      *Upstream
	def    tool.Definition
	remote string // the upstream's name of the tool
}

func (t *remoteTool) Definition() tool.Definition { return t.def }

func (t *remoteTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	return t.u.call(ctx, call.Principal, t.remote, call.Args), nil
}

type principalKey struct{}

// PrincipalFromContext returns the principal a tools/call is sent to an
// upstream for, from the context of its HTTP requests (an HTTP client's
// transport, given in Config.HTTPClient, picks that principal's
// credentials with it), and whether the request is such a call (not the
// gateway's own listing or a notification).
func PrincipalFromContext(ctx context.Context) (string, bool) {
	p, ok := ctx.Value(principalKey{}).(string)
	return p, ok
}

// listTools lists every page of the upstream's tools and wraps those kept.
func (u *Upstream) listTools(ctx context.Context, cs *mcp.ClientSession) ([]tool.Tool, error) {
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Tools == nil {
		return nil, nil // a server without tools
	}
	var out []tool.Tool
	seen := map[string]string{}
	listed := map[string]bool{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		listed[t.Name] = true
		if !u.cfg.enabled(t.Name) {
			continue
		}
		rt, err := u.wrap(t)
		if err != nil {
			return nil, err
		}
		if other, dup := seen[rt.def.Name]; dup {
			return nil, fmt.Errorf("tools %q and %q are both named %s here; rename one (tools.rename) or leave one out (tools.exclude)", other, t.Name, rt.def.Name)
		}
		seen[rt.def.Name] = t.Name
		var tl tool.Tool = rt
		if u.opts.Wrap != nil {
			tl = u.opts.Wrap(u.cfg.Name, t.Name, rt)
		}
		out = append(out, &sourced{Tool: tl, src: t})
	}
	for _, m := range []map[string]string{u.cfg.Rename, u.cfg.Describe} {
		for name := range m {
			if !listed[name] {
				u.log.Warn("tools.rename or tools.describe names a tool the upstream does not list", "tool", name)
			}
		}
	}
	return out, nil
}

// wrap describes an upstream tool as a tool.Definition.
func (u *Upstream) wrap(t *mcp.Tool) (*remoteTool, error) {
	in, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
	}
	def := tool.Definition{
		Name:        u.cfg.toolName(t.Name),
		Title:       t.Title,
		Description: t.Description,
		Tags:        []string{"mcp", "mcp:" + u.cfg.Name},
	}
	if d, ok := u.cfg.Describe[t.Name]; ok {
		def.Description = d
	}
	fixed, note := SanitizeSchema(in)
	def.InputSchema = fixed
	if note != "" {
		u.log.Warn("input schema sanitised", "tool", t.Name, "change", note)
		if def.Description != "" {
			def.Description += "\n\n"
		}
		def.Description += "(toolgate: " + note + "; the server still checks the arguments against its own schema.)"
	}
	if t.OutputSchema != nil {
		out, err := json.Marshal(t.OutputSchema)
		if err == nil && string(out) != "null" {
			def.OutputSchema = out
		}
	}
	a := mcp.ToolAnnotations{}
	if t.Annotations != nil {
		a = *t.Annotations
		if def.Title == "" {
			def.Title = a.Title
		}
	}
	// MCP's defaults for missing hints: destructive and open-world.
	def.Annotations = tool.Annotations{
		ReadOnly:    a.ReadOnlyHint,
		Destructive: !a.ReadOnlyHint && (a.DestructiveHint == nil || *a.DestructiveHint),
		Idempotent:  a.IdempotentHint,
		OpenWorld:   a.OpenWorldHint == nil || *a.OpenWorldHint,
	}
	switch {
	case def.Annotations.ReadOnly:
		def.Level = tool.LevelRead
	case def.Annotations.Destructive:
		def.Level = tool.LevelHigh
	default:
		def.Level = tool.LevelMedium
	}
	if l, ok := u.cfg.level(t.Name); ok {
		def.Level = l
	}
	return &remoteTool{u: u, def: def, remote: t.Name}, nil
}

// SanitizeSchema returns an input schema the engine can compile, and a
// note saying what was changed ("" when nothing was): a schema that is not
// a JSON object becomes {"type":"object"}; patterns (and patternProperties
// keys) that Go's RE2 refuses are dropped; a schema that still does not
// compile is replaced by {"type":"object"}.
func SanitizeSchema(raw json.RawMessage) (json.RawMessage, string) {
	if _, err := schema.Compile(raw); err == nil {
		var top map[string]any
		if json.Unmarshal(raw, &top) == nil && top["type"] == "object" {
			return raw, ""
		}
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
		return json.RawMessage(`{"type":"object"}`), "the upstream's input schema is not a JSON object, so any object is accepted here"
	}
	var notes []string
	if doc["type"] == nil {
		doc["type"] = "object"
		notes = append(notes, `"type": "object" added`)
	}
	var dropped []string
	dropPatterns(doc, "", &dropped)
	if len(dropped) > 0 {
		sort.Strings(dropped)
		notes = append(notes, fmt.Sprintf("patterns the validator cannot run (ECMAScript-only syntax) were dropped at %s", strings.Join(dropped, ", ")))
	}
	fixed, err := json.Marshal(doc)
	if err == nil {
		if _, err = schema.Compile(fixed); err == nil && doc["type"] == "object" {
			return fixed, strings.Join(notes, "; ")
		}
	}
	reason := "its type is not object"
	if err != nil {
		reason = err.Error()
	}
	return json.RawMessage(`{"type":"object"}`), "the upstream's input schema was replaced by {\"type\":\"object\"} (" + reason + ")"
}

// Keywords whose value is a schema, a map of schemas or a list of schemas.
var (
	schemaKeys     = []string{"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedProperties", "unevaluatedItems", "additionalItems", "contentSchema"}
	schemaMapKeys  = []string{"properties", "$defs", "definitions", "dependentSchemas", "patternProperties", "dependencies"}
	schemaListKeys = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
)

// dropPatterns removes, from a schema and the schemas inside it, the
// "pattern" keywords and patternProperties entries RE2 cannot compile.
func dropPatterns(s map[string]any, at string, dropped *[]string) {
	if p, ok := s["pattern"].(string); ok {
		if _, err := regexp.Compile(p); err != nil {
			delete(s, "pattern")
			*dropped = append(*dropped, orRoot(at)+"/pattern")
		}
	}
	if pp, ok := s["patternProperties"].(map[string]any); ok {
		for k := range pp {
			if _, err := regexp.Compile(k); err != nil {
				delete(pp, k)
				*dropped = append(*dropped, orRoot(at)+"/patternProperties")
				// Names the dropped pattern matched would now meet
				// additionalProperties; let the upstream judge them.
				if ap, ok := s["additionalProperties"]; ok && ap != true {
					delete(s, "additionalProperties")
				}
			}
		}
	}
	for _, k := range schemaKeys {
		if sub, ok := s[k].(map[string]any); ok {
			dropPatterns(sub, at+"/"+k, dropped)
		}
	}
	for _, k := range schemaMapKeys {
		if m, ok := s[k].(map[string]any); ok {
			for name, v := range m {
				if sub, ok := v.(map[string]any); ok {
					dropPatterns(sub, at+"/"+k+"/"+name, dropped)
				}
			}
		}
	}
	for _, k := range schemaListKeys {
		if list, ok := s[k].([]any); ok {
			for i, v := range list {
				if sub, ok := v.(map[string]any); ok {
					dropPatterns(sub, fmt.Sprintf("%s/%s/%d", at, k, i), dropped)
				}
			}
		}
	}
}

func orRoot(at string) string {
	if at == "" {
		return "#"
	}
	return "#" + at
}

// call runs an upstream tool for principal and maps its answer to a
// Result.
func (u *Upstream) call(ctx context.Context, principal, name string, args json.RawMessage) tool.Result {
	// The principal is made an interface value once, for the contexts
	// that carry it (once for the calls of one principal in a row).
	pv := u.principalValue(principal)
	cs, release, err := u.session(ctx, principal, pv)
	if err != nil {
		return tool.ErrorResult(tool.AsError(err))
	}
	defer release()
	// The timeout is made on the caller's context itself, with the
	// principal: on the engine's run context, it then needs no timer, and
	// the context carries the principal itself.
	ctx, cancel := tool.WithTimeoutValue(ctx, u.cfg.Timeout, principalKey{}, pv)
	defer cancel()
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	params := callParams.Get().(*mcp.CallToolParams)
	meta := params.Meta
	params.Name, params.Arguments = name, args
	token := progressToken(u.cfg.Name, u.seq.Add(1))
	params.SetProgressToken(token)
	u.flights.add(token, ctx, u.opts.peer(ctx))
	res, err := cs.CallTool(ctx, params)
	u.flights.remove(token)
	clear(meta)
	*params = mcp.CallToolParams{Meta: meta}
	callParams.Put(params)
	if err != nil {
		if u.ended(err) {
			u.down(cs, err) // a per-principal session is not u.cs: left to its own watch
		}
		return tool.ErrorResult(u.callError(ctx, name, err))
	}
	return u.result(name, res)
}

// session is u.sessionFor(ctx with the principal pv, principal as an
// interface value), without that context where nothing would read it: the
// upstream's one session (not per principal, or a call without one),
// already connected, is taken as Session takes it.
func (u *Upstream) session(ctx context.Context, principal string, pv any) (*mcp.ClientSession, func(), error) {
	if !u.cfg.PerPrincipal || principal == "" {
		u.mu.Lock()
		cs := u.cs
		u.mu.Unlock()
		if cs != nil {
			return cs, func() {}, nil
		}
	}
	return u.sessionFor(context.WithValue(ctx, principalKey{}, pv))
}

// principalValue is any(principal), the one made for the last call's
// principal when it is the same: a gateway's calls come from one principal
// in a row, mostly, and each would allocate the same interface value.
func (u *Upstream) principalValue(principal string) any {
	if p := u.lastPrincipal.Load(); p != nil && p.name == principal {
		return p.value
	}
	p := &principalAny{name: principal, value: principal}
	u.lastPrincipal.Store(p)
	return p.value
}

// principalAny is a principal and its interface value.
type principalAny struct {
	name  string
	value any
}

// progressToken is the progress token of an upstream's call number seq:
// "toolgate-" + upstream + "-" + seq, made in one allocation.
func progressToken(upstream string, seq uint64) string {
	var buf [64]byte
	b := append(buf[:0], "toolgate-"...)
	b = append(b, upstream...)
	b = append(b, '-')
	return string(strconv.AppendUint(b, seq, 10))
}

// callParams holds the params of upstream calls that have returned, each
// with its _meta map (emptied): the SDK encodes a call's params as it sends
// the call (jsonrpc2's NewCall, before CallTool waits for the answer) and
// keeps nothing of them once CallTool has returned, so the next call takes
// them instead of making new ones and a map for its progress token (three
// allocations, ~400 bytes). A middleware that gives the params another
// _meta (telemetry's) leaves the pooled map as it was, emptied after.
var callParams = sync.Pool{New: func() any { return &mcp.CallToolParams{Meta: mcp.Meta{}} }}

func (o Options) peer(ctx context.Context) Peer {
	if o.PeerFromContext == nil {
		return nil
	}
	return o.PeerFromContext(ctx)
}

// callError types a failed tools/call.
func (u *Upstream) callError(ctx context.Context, name string, err error) *tool.Error {
	var rpc *jsonrpc.Error
	var te *tool.Error
	switch {
	case errors.As(err, &te):
		// An error the HTTP client's transport typed (auth_required from
		// the gateway's OAuth, say) is passed on as it is.
		return te
	case ctx.Err() == context.DeadlineExceeded:
		return tool.Errorf(tool.Timeout, "upstream %s did not answer %s within %s", u.cfg.Name, name, u.cfg.Timeout).WithRetry(0).
			WithSuggestion("retry with a smaller request; the upstream's timeout is set in the gateway's configuration")
	case ctx.Err() != nil:
		return tool.AsError(ctx.Err())
	case errors.Is(err, mcp.ErrConnectionClosed):
		if e := u.exitError(); e != nil {
			return e
		}
		return u.unavailable(err, 0)
	case errors.As(err, &rpc):
		switch rpc.Code {
		case jsonrpc.CodeInvalidParams:
			return tool.Errorf(tool.InvalidArguments, "upstream %s refused the call of %s: %s", u.cfg.Name, name, rpc.Message).
				WithSuggestion("check the arguments against the tool's input schema and call it again")
		case jsonrpc.CodeMethodNotFound:
			return tool.Errorf(tool.Unavailable, "upstream %s does not offer %s: %s", u.cfg.Name, name, rpc.Message).
				WithSuggestion("the upstream's tools changed; list the tools again and use one that exists")
		}
		return tool.Errorf(tool.Internal, "upstream %s failed on %s: %s (JSON-RPC error %d)", u.cfg.Name, name, rpc.Message, rpc.Code)
	}
	// Anything else is a transport failure: the upstream may be gone.
	if e := u.exitError(); e != nil {
		return e
	}
	return u.unavailable(err, 0)
}

// ended says whether err, a call's failure, says that its session ended:
// the connection closed, or (a command's) its output ended.
func (u *Upstream) ended(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) ||
		u.cfg.URL == "" && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF))
}

// exitError is why the launched process of u ended, when it can say
// (Exiter); nil otherwise.
func (u *Upstream) exitError() *tool.Error {
	u.mu.Lock()
	p := u.proc
	u.mu.Unlock()
	if x, ok := p.(Exiter); ok {
		return x.Exit()
	}
	return nil
}

// result maps an upstream CallToolResult to a Result.
func (u *Upstream) result(name string, r *mcp.CallToolResult) tool.Result {
	if r.IsError {
		return tool.VetUpstream(name, tool.Result{Content: contents(r.Content), Error: upstreamError(r.StructuredContent)})
	}
	// The Relay and the one content block of a result that has one (a
	// tool's usual answer) are allocated together.
	x := new(relayedResult)
	var res tool.Result
	if len(r.Content) == 1 {
		x.block[0] = content(r.Content[0])
		res.Content = x.block[:]
	} else {
		res.Content = contents(r.Content)
	}
	if r.StructuredContent != nil {
		res.Structured = r.StructuredContent
	}
	if relayIn(&x.relay, r, res) {
		res.Relay = &x.relay
	}
	return res
}

// relayedResult is a result's Relay and its content block, when it has
// one, in one allocation.
type relayedResult struct {
	relay tool.Relay
	block [1]tool.Content
}

// contents maps content blocks (nil for none).
func contents(cs []mcp.Content) []tool.Content {
	var out []tool.Content
	for _, c := range cs {
		out = append(out, content(c))
	}
	return out
}

// content maps one content block.
func content(c mcp.Content) tool.Content {
	switch c := c.(type) {
	case *mcp.TextContent:
		return tool.TextContent(c.Text)
	case *mcp.ImageContent:
		return tool.Content{Type: "image", Data: c.Data, MIMEType: c.MIMEType}
	case *mcp.AudioContent:
		return tool.Content{Type: "audio", Data: c.Data, MIMEType: c.MIMEType}
	case *mcp.EmbeddedResource:
		if c.Resource == nil {
			return tool.TextContent("[embedded resource without contents]")
		}
		return tool.Content{Type: "resource", URI: c.Resource.URI, MIMEType: c.Resource.MIMEType, Text: c.Resource.Text, Data: c.Resource.Blob}
	case *mcp.ResourceLink:
		s := "Resource link: " + c.URI
		if c.Name != "" {
			s += " (" + c.Name + ")"
		}
		if c.Description != "" {
			s += ": " + c.Description
		}
		return tool.TextContent(s)
	}
	return tool.TextContent(fmt.Sprintf("[%T content left out]", c))
}

// upstreamError is the error of an isError result: the upstream's
// structured error when it is toolgate's shape, of a type an upstream may
// give, with a message; else one of no type nor message, which
// tool.VetUpstream types by the result's text.
func upstreamError(structured any) *tool.Error {
	if m, ok := structured.(map[string]any); ok {
		if ty, _ := m["type"].(string); tool.UpstreamErrorType(tool.ErrorType(ty)) {
			raw, _ := json.Marshal(m)
			var e tool.Error
			if json.Unmarshal(raw, &e) == nil && e.Message != "" {
				return &e
			}
		}
	}
	return &tool.Error{}
}
