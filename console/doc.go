// Package console is toolgate's web console: the pages a person keeps open
// to govern an agent's tools, served under /ui/ by serve --http and proxy
// --http beside /mcp, behind the same authentication.
//
//	/ui/           approvals: the calls waiting for a person, live (server-sent
//	               events at /ui/events), answered once, session, always or deny
//	/ui/api/       the same queue as JSON: pending (GET), decide (POST)
//	/ui/audit      the audit trail: filters, each record's JSON, the chain's state
//	/ui/tools      the catalogue as the model sees it, for the signed-in principal
//	/ui/policy     the rules in force, how often each decided, a what-if box
//	/ui/activity   calls in flight, per-tool rates, limits and breaker refusals
//	/ui/signin/U   sign in to upstream U (OAuth, per principal: Options.SignIns);
//	               the Tools page lists them, and auth_required errors point here
//
// Pages are rendered on the server with html/template and work without
// JavaScript for reading; one small script (console.js) makes the queue
// live and nothing else. Everything is embedded: no CDN, no build step.
//
// Security. With an authenticator (Options.Authenticate: the policy's auth
// block) a browser signs in by posting its API key or bearer token to a
// form; the console keeps it in a cookie (HttpOnly, SameSite=Strict, Path
// /ui/, Secure over TLS) and checks it on every request exactly as /mcp
// checks an Authorization header, which it also accepts. Without one the
// console is served to this machine only (loopback Host and Origin, as
// /mcp) and its user is the local admin. Who may read and who may answer
// comes from the policy's console section (roles reader/approver/admin by
// default). Every POST carries a CSRF token that must equal the value of
// its cookie, and comes from the same origin (Origin, Sec-Fetch-Site);
// pages are sent with a strict Content-Security-Policy (no inline script
// or style), X-Frame-Options DENY and no-store caching. No secret is ever
// put in a URL: keys, tokens and what-if arguments travel in POST bodies.
//
// Answers go through the approval queue (policy.QueueApprover.Decide) as
// "console:<principal>", so the engine's audit record of the call names who
// answered. Beside the page, a JSON API lists and answers the queue for
// chat bots and scripts (/ui/api/pending, /ui/api/decide; see api.go).
//
// An upstream sign-in (signin.go) begins with a POST, which seals the
// pending sign-in (PKCE verifier, state, principal) into a cookie of that
// browser (SameSite=Lax, on the callback's path, 10 minutes) and sends the
// browser to the authorization server; its redirect to
// /ui/signin/U/callback, a top-level navigation from another site that
// the Strict sign-in cookie does not come with, finishes only the sign-in
// the cookie holds, once, for its principal, on any replica that shares
// CookieSecret.
//
// The console is also the page of approvals.http: serve and proxy over
// stdio (no listener of their own) serve the approvals page and its API
// alone at that address (Options.ApprovalsOnly), at the paths of the page
// it replaced too (/, /api/pending, /api/decide), to this machine only.
package console
