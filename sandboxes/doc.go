// Package sandboxes is the gateway side of remote sandboxes (issue 28): it
// decides which sandbox a call runs in and reaches it, while the call stays
// governed by the gateway's engine (the runner executes, the gateway
// governs).
//
// A conversation's sandbox is keyed by (principal, conversation): the
// caller a transport names and its MCP session, or the conversation a
// stateless client names in params._meta["toolgate/conversation"]. ID turns
// the key into the sandbox id, a hash that passes runner.ValidID and can
// start a Kubernetes object name, so every replica computes the same id and
// a different principal or conversation never computes it. The bearer a
// gateway presents to the sandbox is runner.Token(secret, id). A call is
// sent as one POST to the sandbox's call endpoint (package runner), on a
// connection kept between calls; its progress comes back as it is made,
// and cancelling the call ends the request, which cancels it there. To a
// plain http:// runner the request is written and its answer read on the
// calling goroutine by a small HTTP/1.1 client of this package (the hop),
// not by net/http's Transport, whose writer and reader goroutines cost
// two hand-offs a call; every other runner (TLS, a proxy, a client whose
// Transport is not an *http.Transport) is called through net/http.
//
// A Backend places sandboxes: a fixed set of `toolgate runner` processes
// (backend runner) or one Pod or agent-sandbox claim per sandbox on
// Kubernetes (backend kubernetes, package sandboxes/kube). Its errors that a
// caller may retry wrap ErrUnavailable; a refusal because too many
// sandboxes exist wraps ErrTooMany.
//
// Which sandbox each id has, and where, is kept in a policy.SandboxMap:
// the store package's RedisSandboxes when the replicas share state.redis,
// NewMemoryState otherwise. A replica makes, finds or deletes (Reap) a
// sandbox only under its lease in that map, so that none acts on an entry
// another is changing.
package sandboxes
