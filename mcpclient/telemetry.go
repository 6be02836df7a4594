package mcpclient

import (
	"context"
	"net/url"
	"reflect"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/telemetry"
)

// traced is a sending middleware that records every request and
// notification sent to the upstream: a CLIENT span named "{method}
// {tool}", a child of the caller's span (the engine's run of the tool for a
// tools/call), with its trace context and baggage written into
// params._meta so that the upstream's SERVER span is its child, and its
// duration (mcp.client.operation.duration). It is installed only when
// telemetry is on.
func (u *Upstream) traced(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r := u.describe(method, req)
		ctx, op := u.tel.Start(ctx, r)
		if p := req.GetParams(); !isNil(p) {
			p.SetMeta(telemetry.Inject(ctx, p.GetMeta()))
		}
		res, err := next(ctx, method, req)
		if ir, ok := res.(*mcp.InitializeResult); ok && ir != nil {
			op.SetProtocolVersion(ir.ProtocolVersion)
		}
		op.End(telemetry.Outcome(res, err))
		return res, err
	}
}

// describe says what a request to u is, for its span and metric.
func (u *Upstream) describe(method string, req mcp.Request) telemetry.MCPRequest {
	r := telemetry.MCPRequest{Method: method, Transport: telemetry.TransportPipe}
	if u.cfg.URL != "" {
		r.Transport = telemetry.TransportTCP
		if pu, err := url.Parse(u.cfg.URL); err == nil {
			r.ServerAddress = pu.Hostname()
			port := pu.Port()
			if port == "" {
				port = map[string]string{"http": "80", "https": "443"}[pu.Scheme]
			}
			r.ServerPort, _ = strconv.Atoi(port)
		}
	}
	if cs, ok := req.GetSession().(*mcp.ClientSession); ok && cs != nil {
		r.SessionID = cs.ID()
		if ir := cs.InitializeResult(); ir != nil {
			r.ProtocolVersion = ir.ProtocolVersion
		}
	}
	params := req.GetParams()
	if isNil(params) {
		return r
	}
	switch p := params.(type) {
	case *mcp.CallToolParams:
		r.Tool = p.Name
	case *mcp.GetPromptParams:
		r.Prompt = p.Name
	}
	return r
}

// isNil reports whether params is nil or a nil pointer (requests whose
// params may be left out).
func isNil(p mcp.Params) bool {
	if p == nil {
		return true
	}
	v := reflect.ValueOf(p)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
