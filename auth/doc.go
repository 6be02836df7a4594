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
// Upstream is the other direction: toolgate as the OAuth client of an
// upstream MCP server, as the MCP authorization specification asks of a
// client (the oauth block of a gateway configuration, OAuth). It discovers
// the authorization server from the upstream's 401 (its resource_metadata,
// then the RFC 9728 well-known URLs, path-inserted then root; RFC 8414 and
// OpenID discovery; without protected resource metadata, the 2025-03-26
// rules), registers (a Client ID Metadata Document, a pre-registered
// client, or dynamic registration), and signs a principal in with the
// authorization code flow, PKCE (S256) and the RFC 8707 resource
// (BeginLogin, then PendingLogin.Finish with the redirect's query); or
// fetches client credentials itself (client_secret_basic,
// client_secret_post, private_key_jwt). Every fetch of discovery,
// registration and tokens dials through the egress dial guard
// (sandbox/egress) for its one host and port: public addresses, loopback
// only where the configuration names a loopback URL, no redirects.
//
// A sign-in begun by one process may be finished by another: the console
// keeps PendingLogin.Marshal sealed in the browser's cookie, and
// Upstream.ResumeLogin takes it back for the principal that began it.
// ClientIDMetadata is the Client ID Metadata Document the gateway serves
// at client_id_metadata_url.
//
// Grants are kept per principal (or one for the gateway), sealed with
// AES-256-GCM (Sealer) in a TokenStore: FileTokens in the state folder,
// or Redis (package store). Upstream.Transport sends each request with the
// grant's token, refreshes it before it expires (a rotated refresh token
// replaces the old one), and answers a call that waits for a person with
// an auth_required *tool.Error naming how to sign in; insufficient_scope
// asks for one sign-in with the union of the scopes, at most MaxStepUps
// times and only when the union grows: never a loop. A TokenStore that is
// also a Locker (SealedTokens over store.RedisBlobs) serialises renewals
// across replicas, so a rotated refresh token is used once. No token is written
// in an error text. The caller's own token is never forwarded.
package auth
