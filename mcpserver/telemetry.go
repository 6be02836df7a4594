package mcpserver

import (
	"context"
	"net/http"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/telemetry"
	"github.com/toolgate/toolgate/tool"
)

// traced is a receiving middleware that records every MCP request the
// server handles: a SERVER span named "{method} {tool}" whose parent is the
// trace context of params._meta (else of the HTTP request's header), and
// its duration (mcp.server.operation.duration). The span is in the
// context the handlers get, so the engine's execute_tool span is its
// child. It is installed only when telemetry is on.
func (s *Server) traced(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r := telemetry.MCPRequest{Method: method, Transport: telemetry.TransportPipe}
		meta := describe(&r, req.GetParams())
		extra := req.GetExtra()
		var header http.Header
		if extra != nil && extra.Header != nil {
			r.Transport, header = telemetry.TransportTCP, extra.Header
		}
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
			r.SessionID = ss.ID()
		}
		if pv, ok := req.(interface{ ProtocolVersion() string }); ok {
			r.ProtocolVersion = pv.ProtocolVersion()
		}
		ctx, op := s.tel.Start(telemetry.Extract(ctx, meta, header), r)
		// The engine sets its decision (toolgate.decision, rule, approval) on this span.
		res, err := next(engine.AnnotateSpan(ctx), method, req)
		if ir, ok := res.(*mcp.InitializeResult); ok && ir != nil {
			op.SetProtocolVersion(ir.ProtocolVersion)
		}
		op.End(telemetry.Outcome(res, err))
		return res, err
	}
}

// annotate adds to the server span of a tools/call what toolgate knows of
// it: who called (toolgate.principal), the structured error's type
// (toolgate.error.type) and the sandbox a command ran in
// (toolgate.sandbox.backend, from the result's metadata).
func (s *Server) annotate(ctx context.Context, call tool.Call, res tool.Result) {
	if s.tel == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(telemetry.Principal.String(call.Principal))
	if res.Error != nil {
		span.SetAttributes(telemetry.ToolgateError.String(string(res.Error.Type)))
	}
	if b, ok := res.Meta["backend"].(string); ok && b != "" {
		span.SetAttributes(telemetry.SandboxBackend.String(b))
	}
}

// describe fills in what r targets (tool or prompt) from params and
// returns their _meta (nil when there are none).
func describe(r *telemetry.MCPRequest, params mcp.Params) map[string]any {
	if params == nil {
		return nil
	}
	if v := reflect.ValueOf(params); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	switch p := params.(type) {
	case *mcp.CallToolParamsRaw:
		r.Tool = p.Name
	case *mcp.GetPromptParams:
		r.Prompt = p.Name
	}
	return params.GetMeta()
}
