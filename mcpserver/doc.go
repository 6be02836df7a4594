// Package mcpserver serves a registry of tools over the Model Context
// Protocol, with every tools/call executed by the governed engine, so that
// policy, limits, approvals and audit apply to MCP clients exactly as to Go
// callers. It is built on the official go-sdk (github.com/modelcontextprotocol/go-sdk).
//
// A Server offers:
//
//   - Tools: the enabled tools of Engine.Registry(), with title, annotations,
//     input and output schemas. A successful call returns its content and
//     structuredContent; a failed one returns isError: true, the
//     model-facing text (tool.Error.Text) as content and the structured
//     error ({"type","message","retryable","suggestion",…}) as
//     structuredContent. A call of a tool that is not listed is a JSON-RPC
//     error (invalid params), as the specification asks. When the registry
//     changes, the list follows and clients get notifications/tools/list_changed.
//   - Identity: each call's Principal is the caller a bearer-token
//     middleware in front of Handler verified (package auth; the go-sdk's
//     auth.TokenInfo: UserID, and the *tool.Credential in
//     Extra[tool.CredentialKey], which becomes the call's Auth), else the
//     name the client gave in initialize (clientInfo.name, self-declared,
//     "mcp-client" when absent); its Session is the MCP session id (over
//     stdio, a random id per connection), so audit records say who called.
//     Stateless HTTP has no session: a call counts under the conversation
//     the client names in params._meta["toolgate/conversation"] (Session
//     "conversation:ID"), or with none under the principal alone (Session
//     ""), so the loop guard and the denial breaker, keyed by principal and
//     session, never start afresh with each request.
//     An authenticated caller is listed only the tools the engine shows it
//     (engine.Engine.Visible), and a call of a hidden tool gets the answer
//     a tool that is not served gets.
//   - Progress and cancellation: when a request carries a progress token, a
//     tool's tool.ReportProgress calls become notifications/progress
//     (non-increasing values are dropped, as the specification requires);
//     notifications/cancelled cancels the call's context. A tool's
//     tool.Logger(ctx) writes MCP log notifications (logger = the tool's
//     name), and every finished call is logged to its session (logger
//     "toolgate"), both filtered by the level the client set.
//   - Resources: each root folder (Options.Roots) as a directory resource
//     (file:///…, mimeType inode/directory; reading it lists it), and every
//     file through the template file:///{+path}. Reads are calls of the
//     list and read tools (Options.ListTool, Options.ReadTool: list_directory
//     and read_file by default) through the engine, so policy, confinement
//     and audit apply. A file resource is the text view read_file gives:
//     lines joined with "\n", long lines cut with read_file's marker, binary
//     files refused; it is read in windows (offset/limit) up to
//     Options.MaxResourceBytes.
//   - Prompts: code_review (language, code) and explore_project (focus,
//     optional), unless Options.NoPrompts.
//   - Anything else the go-sdk offers, through MCP() (extra resources,
//     prompts) and Options.MCP (completion, subscriptions, …).
//
// # Client roots
//
// A client may offer roots (the folders its user opened). They can only
// narrow what the server allows, never widen it. The rule:
//
//	allowed = { C ∩ S : C a client root, S a server root }
//
// where C ∩ S is the deeper of the two folders when one contains the other
// and nothing otherwise (compared on real paths, symbolic links resolved).
// A client without the roots capability, or whose roots/list is empty (it
// has opened no folder), is not narrowed; nor is a session on protocol
// 2026-07-28 or later, where roots are deprecated and a server may no
// longer ask for them. A client that lists roots of
// which none meets a server root (or none is a file:// URI of an existing
// folder) may touch no path at all, and so may one whose roots/list fails
// (fail closed). The list is asked for on the first
// call that needs it and again after notifications/roots/list_changed.
//
// The rule is enforced inside the engine's chain, after policy and before
// the tool runs, by the engine.Limiter that ClientRoots returns: build the
// engine with it (engine.Options.Limiter) and every refusal is an audited
// permission_denied result. A call's paths are found by a PathFunc (default:
// the string arguments "path", "source" and "destination", relative paths
// taken against the first server root; Opaque marks tools whose paths it
// cannot tell, e.g. apply_patch), and such a tool is refused while the
// session is narrowed. An engine built without
// ClientRoots ignores client roots: the server roots (the file tools' own
// confinement) are then the only boundary.
//
// # HTTP
//
// Handler serves streamable HTTP (sessions, SSE streams, resumable GET
// streams) behind a guard against DNS rebinding: on a loopback address only
// requests whose Host is a loopback name (localhost, 127.0.0.1, [::1],
// any port) and whose Origin, when present, is one too get through; on any
// other address the Origin, when present, must match the Host. Request
// bodies are capped (HTTPOptions.MaxRequestBytes, 4 MiB by default).
// HTTPOptions.Stateless drops sessions: every POST is answered on its own
// and carries no Mcp-Session-Id, so replicas behind a load balancer can
// answer any request; the server then cannot ask the client anything
// (elicitation, roots/list) during a call. A client of protocol 2026-07-28
// can still be asked, after it: a call whose approver returns a tool.Error
// of type input_required ends with that question as an input request
// (InputID) and its requestState, and the client's retry carries the
// answer to the approver (InputAnswerFromContext; TakesInputRequests says
// whether the client can be asked so). A call that fails auth_required
// with a sign-in page (Details[SignInURL]: an upstream's OAuth sign-in in
// the console) is answered to a 2025-11-25 client that declared URL-mode
// elicitation with URLElicitationRequiredError (-32042) naming that page.
//
// # On upstream go-sdk
//
// toolgate's own programs build against the patched go-sdk in
// third_party/go-sdk; a module that requires toolgate gets upstream
// v1.8.0, and this package works on it through fallbacks with the same
// results, slower (a relayed result is encoded again; a call's log message
// is built before the SDK filters it by level). One patch is a fix, not a
// speed-up: on upstream, a server request withdrawn after its call's answer
// ended the POST's stream (an elicitation that policy.FirstAnswer withdrew
// because the console answered first) is refused ("write to closed
// stream"), so the client's user keeps a question no one waits for.
//
// # Telemetry
//
// With Options.TracerProvider or MeterProvider (package telemetry), every
// request is a SERVER span named "{method} {tool or prompt}" in the MCP
// semantic conventions' attributes, whose parent is the trace context in
// params._meta (traceparent, tracestate, baggage), else in the HTTP
// request's headers, and lasts in mcp.server.operation.duration. The
// engine's execute_tool span is its child. Arguments, results, error
// messages and resource URIs stay out; a tool or prompt name the server
// refused with a JSON-RPC error names no span and no metric series.
package mcpserver
