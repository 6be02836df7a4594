package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// syncTools makes the served tool list match the registry's enabled tools.
// The go-sdk sends notifications/tools/list_changed for the changes.
func (s *Server) syncTools() {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	want := map[string]bool{}
	for _, def := range s.engine.Registry().List(registry.Filter{}) {
		t, err := mcpTool(def)
		if err != nil {
			s.log.Warn("tool not served over MCP", "tool", def.Name, "err", err)
			continue
		}
		fp, _ := json.Marshal(t)
		want[def.Name] = true
		if s.served[def.Name] == string(fp) {
			continue
		}
		if err := s.addTool(t); err != nil {
			s.log.Warn("tool not served over MCP", "tool", def.Name, "err", err)
			delete(want, def.Name)
			continue
		}
		s.served[def.Name] = string(fp)
	}
	var gone []string
	for name := range s.served {
		if !want[name] {
			gone = append(gone, name)
			delete(s.served, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
}

// addTool adds t, turning the go-sdk's panics on a bad tool into an error.
func (s *Server) addTool(t *mcp.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	s.mcp.AddTool(t, s.callTool)
	return nil
}

// mcpTool describes def as an MCP tool.
func mcpTool(def tool.Definition) (*mcp.Tool, error) {
	var in map[string]any
	if err := json.Unmarshal(def.InputSchema, &in); err != nil {
		return nil, fmt.Errorf("input schema is not a JSON object: %w", err)
	}
	if in["type"] != "object" {
		return nil, fmt.Errorf(`input schema must have "type": "object"`)
	}
	t := &mcp.Tool{
		Name:        def.Name,
		Title:       def.Title,
		Description: def.Description,
		InputSchema: def.InputSchema,
		Annotations: &mcp.ToolAnnotations{
			Title:           def.Title,
			ReadOnlyHint:    def.Annotations.ReadOnly,
			DestructiveHint: ptr(def.Annotations.Destructive),
			IdempotentHint:  def.Annotations.Idempotent,
			OpenWorldHint:   ptr(def.Annotations.OpenWorld),
		},
	}
	if len(def.OutputSchema) > 0 {
		if !json.Valid(def.OutputSchema) {
			return nil, fmt.Errorf("output schema is not valid JSON")
		}
		t.OutputSchema = def.OutputSchema
	}
	return t, nil
}

func ptr[T any](v T) *T { return &v }

// callTool runs one tools/call through the engine.
func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ss := req.Session
	st := s.state(ss)
	if st.calls.Add(1) <= freshCalls {
		growStack(len(req.Params.Name))
	}
	call := s.callerIn(ss, st, req.Extra, req.Params.GetMeta())
	call.Name, call.Args = req.Params.Name, req.Params.Arguments
	if token := req.Params.GetProgressToken(); token != nil {
		ctx = tool.WithProgress(ctx, progressTo(ctx, ss, token))
	}
	// The result check, the redaction and the answer read the structured
	// value's encoding: one, the bytes the client gets. The context that
	// carries it (tool.WithEncodedLogger) carries the call's callInfo too.
	ctx, ci := newToolCallCtx(ctx, st.logger(call.Name))
	res := s.executeIn(ctx, ctx, ci, st, call, inputOf(ss, req.Params))
	if ir := inputRequired(res.Error); ir != nil {
		return ir, nil // the client asks its user and calls again
	}
	s.annotate(ctx, call, res)
	if !s.opts.NoCallLog {
		s.logCall(ctx, ss, call, res)
	}
	if err := urlElicitation(ss, res.Error); err != nil {
		return nil, err // the client offers its user the sign-in page, then calls again
	}
	if res.Error != nil && res.Error.Type == tool.UnknownTool {
		if _, ok := s.engine.Registry().Lookup(call.Name); ok {
			// Hidden from this caller: answered as the go-sdk answers a
			// tool it does not serve.
			return nil, unknownTool(call.Name)
		}
		// The tool left the registry after the client listed it.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: res.Error.Text()}
	}
	return callResult(ctx, res), nil
}

// growStack grows the calling goroutine's stack in one step, while it is
// still shallow. The go-sdk handles a request on a goroutine that may be
// new, or parked since a collection shrank its stack (go-sdk patch 14), whose
// stack otherwise grows, copying itself, several times
// through a governed call and the encoding of its answer (9% of the CPU
// time of BenchmarkServeStdio; 5% with this). n only keeps the compiler
// from dropping the frame.
//
// It is called for a session's first freshCalls calls only: those are
// the ones its new goroutines take (a stateless POST's session has but
// one); later calls run on the goroutines parked after them, whose stacks
// have grown already, and for those the 16 KiB frame was cleared for
// nothing (~2,100 instructions and 256 cache lines written per call; a
// stack a collection shrank grows back once, not once per call).
//
//go:noinline
func growStack(n int) byte {
	var frame [16 << 10]byte
	frame[n%len(frame)] = 1
	return frame[(n+1)%len(frame)]
}

// freshCalls is how many of a session's calls grow their goroutine's
// stack first: the go-sdk keeps up to 8 handler goroutines of a
// connection parked (patch 14's maxParked), and one more. Nothing checks
// it across the module: when the SDK's maxParked (internal/jsonrpc2's
// conn.go) changes, change this too.
const freshCalls = 9

// execute runs call through the engine with the session's roots and what
// the call's client takes and answered (input) in ctx.
func (s *Server) execute(ctx context.Context, st *session, call tool.Call, input inputCall) tool.Result {
	cctx, ci := newCallCtx(ctx)
	return s.executeIn(ctx, cctx, ci, st, call, input)
}

// executeIn is execute in cctx, ctx's context with the callInfo ci
// (empty), which it fills in.
func (s *Server) executeIn(ctx, cctx context.Context, ci *callInfo, st *session, call tool.Call, input inputCall) tool.Result {
	ci.session, ci.input = st.ss, input
	if len(s.roots) > 0 {
		ci.base = s.roots[0].dir
	}
	ci.allowed, ci.narrowed = s.narrowing(ctx, st)
	return s.engine.Execute(cctx, call)
}

// progressTo returns a ProgressFunc that notifies the client, dropping
// values that do not increase.
func progressTo(ctx context.Context, ss *mcp.ServerSession, token any) tool.ProgressFunc {
	var mu sync.Mutex
	last, started := 0.0, false
	return func(done, total float64, message string) {
		mu.Lock()
		if started && done <= last {
			mu.Unlock()
			return
		}
		last, started = done, true
		mu.Unlock()
		p := &mcp.ProgressNotificationParams{ProgressToken: token, Progress: done, Total: total, Message: message}
		ss.NotifyProgress(context.WithoutCancel(ctx), p)
	}
}

// logCall tells the session how a call ended (filtered by its log level:
// nothing is built when the session would send nothing, as when the client
// never set a level).
func (s *Server) logCall(ctx context.Context, ss *mcp.ServerSession, call tool.Call, res tool.Result) {
	level := mcp.LoggingLevel("info")
	if res.Error != nil {
		level = "warning"
	}
	// LogsAt is the patched go-sdk's (patch 24); upstream's Log filters by
	// level itself, after data is built (the same messages, slower).
	if l, ok := any(ss).(interface {
		LogsAt(context.Context, mcp.LoggingLevel) bool
	}); ok && !l.LogsAt(ctx, level) {
		return
	}
	data := map[string]any{"tool": call.Name, "outcome": "ok"}
	if res.Error != nil {
		data["outcome"], data["error"] = "error", res.Error
	}
	ss.Log(context.WithoutCancel(ctx), &mcp.LoggingMessageParams{Logger: "toolgate", Level: level, Data: data})
}

// callResult renders a result in MCP's shape: a failure is isError with the
// model-facing text as content and the structured error as
// structuredContent. A result that says exactly what an upstream's bytes
// said (tool.Relay) is answered with those bytes; any other, with encode's
// or, where encode leaves it to the SDK, the SDK's (sdkEncoded).
func callResult(ctx context.Context, res tool.Result) *mcp.CallToolResult {
	out := newResult(res.Content)
	if res.Error != nil {
		out.IsError = true
		out.StructuredContent = res.Error
		if len(out.Content) == 0 {
			out.Content = []mcp.Content{&mcp.TextContent{Text: res.Error.Text()}}
		}
	} else if res.Structured != nil {
		out.StructuredContent = res.Structured
	}
	if len(res.Meta) > 0 {
		out.Meta = mcp.Meta{"toolgate/meta": res.Meta}
	}
	// RelayJSON, RelayJSONRoom and RelayCompactJSON are the patched
	// go-sdk's (patches 6, 27, 41); upstream's encodes out itself
	// (sdkEncoded: the same JSON, slower).
	if r, ok := any(out).(relayer); ok {
		if data, ok := res.Relay.For(res); ok {
			// An upstream's result that nothing changed goes on as it came
			// (without the SDK's look for white space to compact, when
			// the gateway's scan of it read none).
			if res.Relay.Compact() {
				r.RelayCompactJSON(data)
			} else {
				r.RelayJSON(data)
			}
			return out
		}
		if data, ok := encode(ctx, out); ok {
			r.RelayJSONRoom(data, encodeRoom)
			return out
		}
	}
	return sdkEncoded(ctx, res, out)
}

// sdkEncoded leaves out, res in MCP's shape, to the SDK to encode (what
// encode leaves to it, a block other than text; all of it on upstream's
// SDK), the structured value as ctx has it (tool.MarshalJSON): the bytes
// the check and the redaction read, not an encoding again.
func sdkEncoded(ctx context.Context, res tool.Result, out *mcp.CallToolResult) *mcp.CallToolResult {
	if res.Error == nil && res.Structured != nil {
		if b, err := tool.MarshalJSON(ctx, res.Structured); err == nil {
			out.StructuredContent = json.RawMessage(b)
		}
	}
	return out
}

// relayer is the result of the patched go-sdk (third_party/go-sdk): it
// answers with the bytes it is given instead of its encoding.
type relayer interface {
	RelayJSON(data []byte)
	RelayJSONRoom(buf []byte, room int)
	RelayCompactJSON(data []byte) // patch 41: data known compact
}

// encodeRoom is the room encode leaves before the result: enough for the
// JSON-RPC response's head (jsonrpc2's FrameRoom, 52 bytes) and what the
// session adds in front of a result (its _meta: the server's name and
// version; toolgate's meta; resultType).
const encodeRoom = 512

// encode returns out as its MarshalJSON writes it, after encodeRoom
// bytes, less the _meta member (the session writes out.Meta in front of
// what RelayJSONRoom gives it, in that room when it fits, as MarshalJSON
// does), each string encoded once (a text as json.Marshal encodes it, by
// tool.AppendEncodedString): MarshalJSON encodes each content block on its
// own and then scans the blocks' bytes again to compact them into the
// result, which for a result of a few KiB of text cost more than encoding
// it. It reports false for what callResult never makes (input requests,
// annotated blocks), for blocks other than text (rare: MarshalJSON encodes
// them) and when the structured value cannot be encoded; MarshalJSON then
// encodes out and reports its own error. The structured value is ctx's
// encoding of it (tool.MarshalJSON: json.Marshal's bytes).
func encode(ctx context.Context, out *mcp.CallToolResult) ([]byte, bool) {
	if out.InputRequests != nil || out.RequestState != "" {
		return nil, false
	}
	size := 64
	for _, c := range out.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			size += 32 + len(t.Text) + len(t.Text)/4 // escapes: a line's \n, quotes, <>&
		}
	}
	var structured []byte
	if out.StructuredContent != nil {
		// Encoded first: a text block that repeats one of its strings
		// copies that string's bytes (tool.AppendEncodedString).
		b, err := tool.MarshalJSON(ctx, out.StructuredContent)
		if err != nil {
			return nil, false
		}
		structured = b
		size += len(b)
	}
	// The room in front and the two bytes after are the session's: what
	// it adds in front (_meta, resultType) and the JSON-RPC response's
	// head and closing brace are written around the result, in place
	// (mcp.CallToolResult.RelayJSONRoom), not copied into a new slice.
	size += encodeRoom + 2
	buf := bytes.NewBuffer(make([]byte, encodeRoom, size))
	buf.WriteString(`{"content":[`)
	for i, c := range out.Content {
		if i > 0 {
			buf.WriteByte(',')
		}
		t, ok := c.(*mcp.TextContent)
		if !ok || t == nil || t.Meta != nil || t.Annotations != nil {
			return nil, false
		}
		buf.WriteString(`{"type":"text","text":`)
		buf.Write(tool.AppendEncodedString(ctx, buf.AvailableBuffer(), t.Text))
		buf.WriteByte('}')
	}
	buf.WriteByte(']')
	if structured != nil {
		buf.WriteString(`,"structuredContent":`)
		buf.Write(structured)
	}
	if out.IsError {
		buf.WriteString(`,"isError":true`)
	}
	buf.WriteByte('}')
	return buf.Bytes(), true
}

// newResult returns a result of the content cs (mcpContent): one of a
// single text block, a tool's usual answer, made in one allocation.
func newResult(cs []tool.Content) *mcp.CallToolResult {
	if len(cs) == 1 && cs[0].Type == "text" {
		r := &textResult{text: mcp.TextContent{Text: cs[0].Text}}
		r.block[0] = &r.text
		r.out.Content = r.block[:]
		return &r.out
	}
	return &mcp.CallToolResult{Content: mcpContent(cs)}
}

// textResult is a result of one text block: the result, its content and
// the block in one allocation, where they are three apart.
type textResult struct {
	out   mcp.CallToolResult
	block [1]mcp.Content
	text  mcp.TextContent
}

// mcpContent converts content blocks; a block of an unknown type becomes
// tool.UnknownContent.
func mcpContent(cs []tool.Content) []mcp.Content {
	out := make([]mcp.Content, 0, len(cs))
	for _, c := range cs {
		switch c.Type {
		case "text":
			out = append(out, &mcp.TextContent{Text: c.Text})
		case "image":
			out = append(out, &mcp.ImageContent{Data: c.Data, MIMEType: c.MIMEType})
		case "audio":
			out = append(out, &mcp.AudioContent{Data: c.Data, MIMEType: c.MIMEType})
		case "resource":
			out = append(out, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: c.URI, MIMEType: c.MIMEType, Text: c.Text, Blob: c.Data}})
		default:
			// Its type is not said: a tool's upstream may have chosen it,
			// and no check reads a block of a type it does not know.
			out = append(out, &mcp.TextContent{Text: tool.UnknownContent})
		}
	}
	return out
}

// unknownTool is the go-sdk's answer to a call of a tool it does not serve.
func unknownTool(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
}

// visibility is a receiving middleware that shows each caller only the
// tools it may call (engine.Visible): tools/list leaves the others out.
func (s *Server) visibility(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		lt, ok := res.(*mcp.ListToolsResult)
		if method != "tools/list" || err != nil || !ok {
			return res, err
		}
		ss, _ := req.GetSession().(*mcp.ServerSession)
		call := s.caller(ss, req.GetExtra(), nil)
		if call.Auth == nil {
			return res, err
		}
		out := *lt
		out.Tools = make([]*mcp.Tool, 0, len(lt.Tools))
		for _, t := range lt.Tools {
			if tl, ok := s.engine.Registry().Lookup(t.Name); ok && s.engine.Visible(tl.Definition(), call) {
				out.Tools = append(out.Tools, t)
			}
		}
		return &out, nil
	}
}
