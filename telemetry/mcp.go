package telemetry

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Attribute keys of the MCP conventions that names.go leaves out: what
// an MCP request targets besides a tool, and where a client sends it.
const (
	GenAIPromptName = semconv.GenAIPromptNameKey // "gen_ai.prompt.name": prompts/get
	ServerAddress   = semconv.ServerAddressKey   // "server.address": the host of an HTTP upstream
	ServerPort      = semconv.ServerPortKey      // "server.port"
)

// ErrorOther is error.type of a failure that has no JSON-RPC error code
// (the conventions' fallback value).
const ErrorOther = "_OTHER"

// propagator reads and writes what MCP carries in params._meta: W3C trace
// context (traceparent, tracestate) and baggage.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// MetaCarrier lets a propagator read and write an MCP request's
// params._meta. Only string values are read; other keys are left alone.
type MetaCarrier map[string]any

// Get returns the string value of key, or "".
func (c MetaCarrier) Get(key string) string {
	s, _ := c[key].(string)
	return s
}

// Set sets key to value.
func (c MetaCarrier) Set(key, value string) { c[key] = value }

// Keys lists the keys of the string values.
func (c MetaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k, v := range c {
		if _, ok := v.(string); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// Extract returns ctx with the remote trace context and baggage of an
// incoming MCP request: those of its params._meta when it carries a valid
// traceparent (the conventions' choice: an MCP request may travel over
// many HTTP requests and one HTTP request may carry many MCP requests),
// else those of the HTTP request's header (streamable HTTP; nil for
// stdio). Malformed values are ignored.
func Extract(ctx context.Context, meta map[string]any, header http.Header) context.Context {
	if _, ok := meta["traceparent"].(string); ok {
		if c := propagator.Extract(ctx, MetaCarrier(meta)); trace.SpanContextFromContext(c).IsRemote() {
			return c
		}
	}
	if header != nil {
		return propagator.Extract(ctx, propagation.HeaderCarrier(header))
	}
	return ctx
}

// Inject writes the trace context and baggage of ctx into meta (an
// outgoing request's params._meta) and returns it: a new map when meta is
// nil, or a copy (the caller's map is not written to).
func Inject(ctx context.Context, meta map[string]any) map[string]any {
	out := make(map[string]any, len(meta)+3)
	for k, v := range meta {
		out[k] = v
	}
	// A traceparent passed through from elsewhere must not survive when
	// ctx has none to replace it.
	delete(out, "traceparent")
	delete(out, "tracestate")
	delete(out, "baggage")
	propagator.Inject(ctx, MetaCarrier(out))
	return out
}

// MCPRequest describes one MCP request or notification for its span and
// its duration metric.
//
// A resource's URI (mcp.resource.uri) is left out: it is what a read
// reads, an argument (a file's path), and arguments stay out of telemetry.
type MCPRequest struct {
	Method          string // mcp.method.name: tools/call, tools/list, initialize, …
	Tool            string // gen_ai.tool.name of tools/call
	Prompt          string // gen_ai.prompt.name of prompts/get
	SessionID       string // mcp.session.id, "" without a session
	ProtocolVersion string // mcp.protocol.version, "" before it is known
	Transport       string // network.transport: TransportPipe or TransportTCP
	ServerAddress   string // server.address of an HTTP server (client side)
	ServerPort      int    // server.port, with ServerAddress
}

// name is the span name: the method, then the tool or prompt ("tools/call
// read_file").
func (r MCPRequest) name() string {
	switch {
	case r.Tool != "":
		return r.Method + " " + r.Tool
	case r.Prompt != "":
		return r.Method + " " + r.Prompt
	}
	return r.Method
}

// attributes are those of the span's start and of the metric (bounded
// cardinality: no session id), without the target.
func (r MCPRequest) attributes() []attribute.KeyValue {
	kv := make([]attribute.KeyValue, 0, 8)
	kv = append(kv, MCPMethodName.String(r.Method))
	if r.Method == "tools/call" {
		kv = append(kv, GenAIOperationName.String(OperationExecuteTool))
	}
	if r.ProtocolVersion != "" {
		kv = append(kv, MCPProtocolVersion.String(r.ProtocolVersion))
	}
	if r.Transport != "" {
		kv = append(kv, NetworkTransport.String(r.Transport))
	}
	if r.ServerAddress != "" {
		kv = append(kv, ServerAddress.String(r.ServerAddress))
		if r.ServerPort > 0 {
			kv = append(kv, ServerPort.Int(r.ServerPort))
		}
	}
	return kv
}

// target is the attribute naming the tool or prompt, if any.
func (r MCPRequest) target() []attribute.KeyValue {
	switch {
	case r.Tool != "":
		return []attribute.KeyValue{GenAIToolName.String(r.Tool)}
	case r.Prompt != "":
		return []attribute.KeyValue{GenAIPromptName.String(r.Prompt)}
	}
	return nil
}

// MCP records the MCP requests of one side of a connection: a span per
// request (SERVER where requests are received, CLIENT where they are sent)
// and its duration (mcp.server.operation.duration or
// mcp.client.operation.duration). A nil *MCP records nothing.
type MCP struct {
	tracer   trace.Tracer
	duration metric.Float64Histogram
	kind     trace.SpanKind
}

// NewMCPServer records received requests (SERVER spans,
// mcp.server.operation.duration). A provider that is nil or a no-op
// (trace/noop, metric/noop: what Setup gives for a signal that is off)
// records nothing; with neither, NewMCPServer returns nil: nothing to
// record, nothing to pay.
func NewMCPServer(tp trace.TracerProvider, mp metric.MeterProvider) (*MCP, error) {
	return newMCP(trace.SpanKindServer, MetricServerOperationDuration,
		"MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent.", tp, mp)
}

// NewMCPClient records sent requests (CLIENT spans,
// mcp.client.operation.duration). With neither provider it returns nil.
func NewMCPClient(tp trace.TracerProvider, mp metric.MeterProvider) (*MCP, error) {
	return newMCP(trace.SpanKindClient, MetricClientOperationDuration,
		"The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received.", tp, mp)
}

func newMCP(kind trace.SpanKind, metricName, desc string, tp trace.TracerProvider, mp metric.MeterProvider) (*MCP, error) {
	tracing, metering := tp != nil, mp != nil
	if _, noop := tp.(tracenoop.TracerProvider); noop {
		tracing = false
	}
	if _, noop := mp.(metricnoop.MeterProvider); noop {
		metering = false
	}
	if !tracing && !metering {
		return nil, nil
	}
	m := &MCP{kind: kind}
	if tracing {
		m.tracer = tp.Tracer(Scope)
	}
	if metering {
		h, err := mp.Meter(Scope).Float64Histogram(metricName, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(DurationBuckets()...))
		if err != nil {
			return nil, err
		}
		m.duration = h
	}
	return m, nil
}

// Start begins recording req, its span a child of ctx's (on the server,
// give it the context Extract returned). The returned context carries the
// span: pass it to whatever the request does, so its spans nest under it.
func (m *MCP) Start(ctx context.Context, req MCPRequest) (context.Context, *MCPOperation) {
	if m == nil {
		return ctx, nil
	}
	op := &MCPOperation{m: m, req: req, start: time.Now()}
	if m.tracer != nil {
		attrs := req.attributes()
		if req.SessionID != "" {
			attrs = append(attrs, MCPSessionID.String(req.SessionID))
		}
		name := req.Method // a server names the target at the end (see End)
		if m.kind == trace.SpanKindClient {
			name = req.name()
			attrs = append(attrs, req.target()...)
		}
		ctx, op.span = m.tracer.Start(ctx, name, trace.WithSpanKind(m.kind), trace.WithAttributes(attrs...))
	}
	op.ctx = ctx
	return ctx, op
}

// MCPOperation is one request being recorded. Its methods do nothing on a
// nil *MCPOperation.
type MCPOperation struct {
	m     *MCP
	ctx   context.Context // carries span, for the metric's exemplars
	req   MCPRequest
	start time.Time
	span  trace.Span
}

// SetProtocolVersion records the protocol version when it becomes known
// after the request started (initialize negotiates it).
func (o *MCPOperation) SetProtocolVersion(v string) {
	if o == nil || v == "" {
		return
	}
	o.req.ProtocolVersion = v
	if o.span != nil {
		o.span.SetAttributes(MCPProtocolVersion.String(v))
	}
}

// MCPOutcome is how a request ended; the zero value is success.
type MCPOutcome struct {
	// ErrorType is error.type: the JSON-RPC error code, ToolError, or
	// ErrorOther; "" on success.
	ErrorType string
	// StatusCode is rpc.response.status_code: the JSON-RPC error code,
	// when the answer was a JSON-RPC error.
	StatusCode string
}

// RPCError is the outcome of a JSON-RPC error answer.
func RPCError(code int64) MCPOutcome {
	c := strconv.FormatInt(code, 10)
	return MCPOutcome{ErrorType: c, StatusCode: c}
}

// Outcome is how an MCP request ended, sent or received: a JSON-RPC error
// by its code, another error (the connection failed, the call timed out)
// as the conventions' _OTHER, a tool result with isError as tool_error.
func Outcome(res mcp.Result, err error) MCPOutcome {
	var rpc *jsonrpc.Error
	switch {
	case errors.As(err, &rpc):
		return RPCError(rpc.Code)
	case err != nil:
		return MCPOutcome{ErrorType: ErrorOther}
	}
	if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
		return MCPOutcome{ErrorType: ToolError}
	}
	return MCPOutcome{}
}

// End records the outcome and ends the span. A failure sets the span's
// status to Error; its description is the error type, never the error's
// message (which may quote arguments).
//
// On the server the tool or prompt is named by the client: it is recorded
// (span name, gen_ai.tool.name, gen_ai.prompt.name) only when the request
// was not refused with a JSON-RPC error, so that made-up names cannot
// grow the metric's series or the span names without bound.
func (o *MCPOperation) End(out MCPOutcome) {
	if o == nil {
		return
	}
	target := o.req.target()
	if o.m.kind == trace.SpanKindServer && out.StatusCode != "" {
		target = nil
	}
	if o.m.duration != nil {
		attrs := append(o.req.attributes(), target...)
		if out.ErrorType != "" {
			attrs = append(attrs, ErrorType.String(out.ErrorType))
		}
		if out.StatusCode != "" {
			attrs = append(attrs, RPCResponseStatusCode.String(out.StatusCode))
		}
		o.m.duration.Record(context.WithoutCancel(o.ctx), time.Since(o.start).Seconds(), metric.WithAttributes(attrs...))
	}
	if o.span == nil {
		return
	}
	if o.m.kind == trace.SpanKindServer && target != nil {
		o.span.SetName(o.req.name())
		o.span.SetAttributes(target...)
	}
	if out.ErrorType != "" {
		o.span.SetAttributes(ErrorType.String(out.ErrorType))
		if out.StatusCode != "" {
			o.span.SetAttributes(RPCResponseStatusCode.String(out.StatusCode))
		}
		o.span.SetStatus(codes.Error, out.ErrorType)
	}
	o.span.End()
}
