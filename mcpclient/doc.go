// Package mcpclient brings the tools of other MCP servers (upstreams) into a
// registry, so that toolgate's engine governs them like its own: the
// gateway (toolgate proxy) is mcpclient + mcpserver. It is built on the
// official go-sdk client.
//
// An Upstream is one server, reached over stdio (a command it starts),
// streamable HTTP, or the legacy HTTP+SSE transport. Its tools (all pages
// of tools/list) become tool.Tools named <prefix><separator><tool>
// (default <server>__<tool>), names sanitised to what the registry accepts
// (characters outside [A-Za-z0-9_.-] become '_'; two tools that end up
// with one name are an error). Title, description, input and output
// schemas and annotations are kept; a missing hint takes MCP's default
// (destructiveHint and openWorldHint true). The level comes from the
// annotations unless Config.Levels says otherwise: readOnlyHint → 0,
// destructive → 3, anything else → 2 (when several Levels globs match a
// tool, the highest level wins). Tags are "mcp" and "mcp:<server>".
//
// A Config shapes what the model sees of an upstream, every key naming a
// tool as the upstream does: Tools (include globs) and Exclude select the
// tools, Rename gives one a new name before the prefix (a call still
// reaches the upstream under the original name), Describe replaces its
// description. Two upstreams that would register one name are an error
// naming both. Options.Wrap puts checks around each tool's calls and
// results (the gateway's guardrail webhook, package trust); the check of
// results for injected text is the engine's, for every tool
// (engine.Options.ResultChecker). Each tool is tagged "mcp" and
// "mcp:UPSTREAM".
//
// # Input schemas the engine cannot compile
//
// toolgate validates arguments with Go's regular expressions (RE2), so an
// upstream schema using an ECMAScript-only construct (look-ahead, back
// references) would make its tool uncallable. Such a tool is registered
// with a sanitised schema instead: every pattern (and patternProperties
// key) RE2 refuses is dropped, and when the schema still does not compile
// (a remote $ref, over a size limit) it is replaced by {"type":"object"}.
// The tool's description says so, and a warning is logged. The upstream
// still validates the arguments against its own schema, so nothing is
// accepted that the upstream would refuse.
//
// # Calls and results
//
// A call goes to the upstream with the per-upstream timeout (default 60 s).
// Content blocks (text, image, audio, embedded resource; a resource link
// becomes a text line naming it) and structuredContent map to tool.Result;
// isError becomes a tool.Error whose message is the upstream's text, typed
// by the upstream's structured error when it is toolgate's shape, else by
// its wording (not found, denied, timed out, invalid …), else "internal".
// A JSON-RPC error of the upstream is typed by its code.
//
// # Outages
//
// When an upstream dies (its process exits, its HTTP session ends), calls
// in flight fail with a retryable "unavailable" error; the next call
// reconnects. Failed reconnects back off (1 s doubling up to 30 s); a call
// made while backing off fails at once with "unavailable" and the time to
// wait. After a reconnect the tool list is fetched again.
//
// # What passes through, and to whom
//
// A call made on behalf of a downstream client (Options.PeerFromContext
// names it, e.g. the MCP session that sent tools/call) carries a progress
// token upstream; the upstream's progress notifications come back through
// tool.ReportProgress. Log messages, elicitation and sampling requests that
// the upstream sends while calls are in flight go to the downstream client
// of those calls, in the context of the call, so they travel on its stream.
// MCP does not tie these requests to a call, so the rule is: when every
// call in flight on that upstream comes from one client, that client gets
// them; otherwise (no call in flight, or calls of several clients) log
// messages go to Options.Logger and elicitation and sampling are refused,
// rather than asking the wrong user.
//
// # Gateway
//
// A Gateway joins several upstreams: it keeps a registry in step with
// their tools (tools/list_changed upstream → Unregister/Register → the
// served registry's own list_changed downstream), and mounts their
// resources (by URI, unchanged, each read sent to the upstream that listed
// it), resource templates and prompts (prefixed like tools) on a go-sdk
// server, with completion and resource subscriptions forwarded. Resource
// reads and prompts are passed through as they are: the engine governs
// tools only (see Config.NoResources and Config.NoPrompts).
//
// # Vetting
//
// With Options.Vetter (toolgate proxy: pins and the poisoning scan of
// package trust) the gateway offers nothing its Vetter has not judged. It
// shows the Vetter every upstream's tools as the upstreams listed them,
// all at once, at start, whenever an upstream lists its tools again
// (tools/list_changed, reconnect) and on Refresh; each tool is then
// offered, offered but asking a person before each call
// (tool.NeedsApproval, which the engine's approver answers), or hidden:
// left out of the registry, so out of the list the client sees (which
// gets list_changed), and a tools/call of it by name is answered with the
// Vetter's refusal as a tool error. A Vetter that fails hides every tool.
//
// # Telemetry
//
// With Options.TracerProvider or MeterProvider (package telemetry), every
// request sent to an upstream is a CLIENT span, a child of the caller's
// span (the engine's run of the tool), and lasts in
// mcp.client.operation.duration; its trace context and baggage are written
// into the request's params._meta (traceparent, tracestate, baggage), so
// the upstream's SERVER span continues the caller's trace.
package mcpclient
