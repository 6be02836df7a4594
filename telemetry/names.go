package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// Attribute keys of the MCP and GenAI semantic conventions (the MCP
// conventions as of semantic-conventions' docs/gen-ai/mcp.md; the keys come
// from the SDK's semconv package where it has them).
const (
	MCPMethodName         = semconv.McpMethodNameKey      // "mcp.method.name": tools/call, tools/list, initialize, …
	MCPSessionID          = semconv.McpSessionIDKey       // "mcp.session.id", when there is a session
	MCPProtocolVersion    = semconv.McpProtocolVersionKey // "mcp.protocol.version": 2025-06-18, …
	NetworkTransport      = semconv.NetworkTransportKey   // "network.transport": pipe (stdio) or tcp (HTTP)
	JSONRPCRequestID      = attribute.Key("jsonrpc.request.id")
	RPCResponseStatusCode = attribute.Key("rpc.response.status_code") // the JSON-RPC error code, as a string
	ErrorType             = semconv.ErrorTypeKey                      // "error.type": a JSON-RPC error code, ToolError, or a toolgate error type
	GenAIOperationName    = semconv.GenAIOperationNameKey             // "gen_ai.operation.name": OperationExecuteTool for tool calls
	GenAIToolName         = semconv.GenAIToolNameKey                  // "gen_ai.tool.name"
	GenAIToolCallID       = semconv.GenAIToolCallIDKey                // "gen_ai.tool.call.id"
	GenAIToolType         = semconv.GenAIToolTypeKey                  // "gen_ai.tool.type": ToolTypeFunction, ToolTypeExtension, ToolTypeDatastore
)

// toolgate's own attribute keys: the governance of a call.
const (
	Decision       = attribute.Key("toolgate.decision")        // DecisionAllow, DecisionDeny, DecisionAsk
	Rule           = attribute.Key("toolgate.rule")            // the policy rule that decided ("mode:…", "deny:Bash(rm *)", "tool:…")
	Approval       = attribute.Key("toolgate.approval")        // ApprovalApproved, ApprovalDenied, ApprovalNone
	Principal      = attribute.Key("toolgate.principal")       // who called (the authenticated subject), when known
	ToolgateError  = attribute.Key("toolgate.error.type")      // the structured error's type (tool.ErrorType): permission_denied, rate_limited, …
	SandboxBackend = attribute.Key("toolgate.sandbox.backend") // native, bwrap, dry-run
	ArgumentNames  = attribute.Key("toolgate.argument.names")  // opt-in only: the names (never the values) of a call's arguments
)

// Values of the attributes above.
const (
	OperationExecuteTool = "execute_tool"

	TransportPipe = "pipe" // MCP over stdio
	TransportTCP  = "tcp"  // MCP over HTTP

	ToolTypeFunction  = "function"  // a tool the program defines and runs (built-in tool sets, library tools)
	ToolTypeExtension = "extension" // a tool of an upstream MCP server, called through the gateway
	ToolTypeDatastore = "datastore" // a tool that retrieves from a store (search, RAG)

	ToolError = "tool_error" // error.type of a tools/call whose result has isError

	DecisionAllow = "allow"
	DecisionDeny  = "deny"
	DecisionAsk   = "ask"

	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalNone     = "none"
)

// Span names. A governed call is SpanExecuteTool + " " + the tool's name;
// an MCP request is its method, then a space and the tool's name for a tool
// call ("tools/call read_file").
const (
	SpanExecuteTool = "execute_tool"
	SpanApproval    = "toolgate.approval" // the wait for a person's (or an approver's) answer
	SpanRun         = "toolgate.run"      // the tool itself, within its timeout
	SpanSandbox     = "toolgate.sandbox"  // one sandboxed command
)

// Metric names (OpenTelemetry names; a Prometheus scrape shows them with
// dots as underscores and the unit appended: mcp_server_operation_duration_seconds_bucket,
// toolgate_calls_total, toolgate_sandbox_duration_seconds_bucket, …).
const (
	MetricServerOperationDuration = "mcp.server.operation.duration" // histogram, s: one MCP request as the server saw it
	MetricClientOperationDuration = "mcp.client.operation.duration" // histogram, s: one upstream MCP request as the gateway saw it
	MetricCalls                   = "toolgate.calls"                // counter: governed calls by gen_ai.tool.name, toolgate.decision, toolgate.error.type
	MetricApprovals               = "toolgate.approvals"            // counter: approvals asked, by toolgate.approval
	MetricRateLimited             = "toolgate.rate_limited"         // counter: calls refused by a rate limit, by gen_ai.tool.name
	MetricLoopDetected            = "toolgate.loop_detected"        // counter: calls refused by the loop guard, by gen_ai.tool.name
	MetricSandboxDuration         = "toolgate.sandbox.duration"     // histogram, s: one sandboxed command, by toolgate.sandbox.backend
)

// Scope is the instrumentation scope (tracer and meter name) of toolgate's
// own instrumentation outside the engine; the engine uses its import path.
const Scope = "github.com/toolgate/toolgate"

// DurationBuckets returns the explicit bucket boundaries, in seconds, that
// the MCP conventions give for mcp.server.operation.duration and
// mcp.client.operation.duration; toolgate's duration histograms use them too.
func DurationBuckets() []float64 {
	return []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
}
