// Package runner is the sandbox side of remote sandboxes (`toolgate
// runner`): one workspace per sandbox id under a folder, each served to a
// caller that holds the sandbox's token, Token(secret, id) = HMAC-SHA256
// of the id under the runner's secret, so that any gateway replica
// knowing the secret can compute it and nobody else can.
//
// A sandbox answers at two endpoints. A gateway calls its tools at
// POST /sandboxes/{id}/call: the body a CallRequest (at most
// MaxCallBytes), the answer JSON Lines (CallContentType), each an Answer:
// the call's progress as it comes ({"progress":{"done","total",
// "message"}}), then its Result ({"result":{"content","structured",
// "error","meta"}}, each content block flat: {"type","text","data",
// "mime_type","uri"}, not MCP's shape); the request's end (the caller
// gone) cancels the call, and ApprovedHeader runs it approved. Call and
// answer carry VersionHeader: CallVersion; either side refuses the other
// version (a gateway and runners of different releases fail a call,
// saying so, rather than lose what a block carries). One request and one answer, on a kept connection: no session,
// no JSON-RPC framing, no event stream, and two fifths of the
// instructions of the same call over MCP. An MCP client (a person
// debugging a sandbox, another program) reaches the same tools over MCP
// streamable HTTP at /sandboxes/{id}/mcp, stateless. Serve serves a
// connection's well-formed, authorised calls on the connection's own
// goroutine (no goroutine per request, the answer in one write) and hands
// every other request, with its connection, to net/http (Handler).
//
// The runner executes, the gateway governs: what a sandbox serves is built
// by the caller of New (Options.Open; the CLI serves the built-in file and
// command tools rooted at the workspace, with its own local sandbox and no
// policy of its own). This package holds only what both sides share (Token,
// ValidID, the call's format both ways: AppendCall and DecodeCall for its
// body, DecodeAnswer for an answer's line, each giving the value
// encoding/json gives, in one pass of its own; the process events a
// sandbox keeps for its gateway's audit log until acknowledged: Events)
// and the runner's HTTP front: every request but GET /healthz and GET
// /readyz must carry "Authorization: Bearer <token of the id in its
// path>", checked in constant time before anything else is looked at, and
// is answered 401 otherwise, whatever the path (an unknown path included),
// so nothing about the runner can be learnt without a token.
//
// The probes need no token: a kubelet or load balancer probing a runner
// has no sandbox id to hold a token for, and putting the secret in a pod's
// probe spec would spread it. They say only that the process is up and
// which protections its local sandbox reached (what every command's result
// already tells its caller); the runner's network should still admit only
// the gateway.
//
// A gateway places a sandbox with PUT /sandboxes/{id} (201 when made, 200
// when it was there), removes it with DELETE /sandboxes/{id} (its
// processes stop, its workspace goes) and counts them with GET /sandboxes
// under the token of ListID. The call and MCP endpoints serve only a
// sandbox that exists (404 otherwise), so a gateway learns that a
// workspace is gone instead of meeting an empty one unawares.
//
// A workspace is the folder Dir/id; it outlives the runner process, so a
// runner restarted on the same Dir keeps its workspaces, and a runner on
// another Dir starts empty.
package runner
