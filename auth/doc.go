// Package auth says who is calling over HTTP. It makes toolgate an OAuth 2.1
// resource server as the MCP authorization specification asks (revisions
// 2025-06-18, 2025-11-25, 2026-07-28), with static API keys for machines,
// from a policy file's auth block (policy.Auth):
//
//   - A JWT is accepted only when its signature verifies with a key of the
//     issuer's JWKS (RS256, ES256 or EdDSA; never none or HMAC, and the
//     header's alg must fit the key), iss is the issuer, aud names the
//     resource (RFC 8707), exp is in the future and nbf and iat in the past
//     (Skew allowed). The principal is principal_claim (default sub), the
//     roles roles_claim (a string or a list; "a.b" reaches into an object,
//     as Keycloak's realm_access.roles), the scopes scopes_claim (default
//     "scope", space-separated, and "scp", a list or a string).
//   - The JWKS comes from a file or a URL. A fetched set is cached, fetched
//     again when it is older than MaxAge or when a token names an unknown
//     kid (at most once every MinRefresh), and its fetch dials only public
//     addresses or loopback (plain http only there); private networks
//     need jwt.allow_private_network, and cloud metadata addresses stay
//     refused. Redirects are not followed.
//   - An API key is a bearer token whose SHA-256 is listed; the comparison is
//     constant-time over every listed hash.
//
// Middleware answers a request without a credential with 401 and
// WWW-Authenticate: Bearer resource_metadata="…" (and scope="…" when
// Auth.Scopes are set), a bad or expired one with 401 error="invalid_token",
// a token in the URL (access_token), a malformed or oversized Authorization
// header with 400 error="invalid_request", and a token without a needed
// scope of Auth.Scopes with 403 error="insufficient_scope" (a tool's own
// scope, Auth.ToolScopes, is the policy's: a permission_denied result). A
// verified caller reaches the handler through the go-sdk's
// auth.RequireBearerToken: its TokenInfo (UserID = the principal,
// Extra[tool.CredentialKey] = the *tool.Credential) is what the go-sdk's
// streamable HTTP handler binds sessions to and what package mcpserver
// turns into tool.Call.Principal and Auth. The go-sdk's own middleware
// checks no audience; Verify does.
//
// The key set's fetch reuses the egress proxy's address checks
// (sandbox/egress.Policy as the dialer) rather than a second copy of them.
//
// The Protected Resource Metadata (RFC 9728) is built from Auth.Resource,
// never from the request's Host, and served at
// /.well-known/oauth-protected-resource and at the path-inserted form for
// the resource's path (MetadataPaths).
//
// ClientCredentials is the other direction: a token source for an upstream
// server (OAuth 2.0 client credentials, golang.org/x/oauth2), cached and
// refreshed before it expires. The caller's own token is never forwarded.
package auth
