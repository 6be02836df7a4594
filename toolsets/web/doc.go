// Package web is toolgate's built-in HTTP tool set: http_request (url,
// method, headers, body), for APIs and pages on an allow-list of domains.
//
// Every connection, redirects included, is made by an egress.Policy — the
// same implementation, and usually the same Policy value, that the
// sandbox's egress proxy enforces: allow-listed names with dot-boundary
// wildcards and ports, IP-literal hosts refused unless listed, one lookup
// whose every address is checked (loopback, private, link-local, CGNAT and
// cloud metadata refused), and a connection to the checked address only. No
// proxy from the environment is used, no cookie jar is kept, and
// credentials (Authorization, Cookie, API-key headers) are dropped when a
// redirect leaves the host they were sent to; a redirect from https to http
// is refused, and at most Options.MaxRedirects are followed.
//
// Responses are capped in time and size. Text and JSON bodies come back as
// text (decoded from their charset); other bodies are described (type,
// size, SHA-256), not dumped. A failure is a *tool.Error a model can act on:
// a domain off the allow-list is permission_denied and names the entry to
// add, an internal address is permission_denied and explains the
// server-side request forgery protection, a lookup or connection failure is
// unavailable (retryable), running out of time is timeout, an oversized
// body is too_large with ways to ask for less.
//
// With Options.CacheDir set, each successful GET is kept (atomically
// written, size-capped) and, when the network fails for the same GET later,
// the last copy is returned marked cached, with its age. A refusal by the
// policy is never answered from the cache.
//
//	tools, err := web.Tools(web.Options{Policy: pol, CacheDir: dir})
package web
