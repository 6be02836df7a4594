package policy

import (
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/tool"
)

// Auth is the auth block of a policy file: how `serve --http` and `proxy
// --http` authenticate their callers. The policy only reads and checks it;
// package auth verifies the credentials (the policy never imports it).
type Auth struct {
	// Resource is this server's canonical URL (https, or http on a loopback
	// host): the audience a token must name (RFC 8707) and the base of the
	// protected resource metadata (RFC 9728).
	Resource string `yaml:"resource" json:"resource"`
	// AuthorizationServers are published in the resource metadata.
	AuthorizationServers []string `yaml:"authorization_servers,omitempty" json:"authorization_servers,omitempty"`
	// Scopes are needed by every request (published as scopes_supported and
	// in WWW-Authenticate); a token that lacks one gets 403
	// insufficient_scope.
	Scopes []string `yaml:"scopes,omitempty" json:"scopes,omitempty"`
	// ToolScopes maps a tool glob to the scope a token needs to call the
	// tools it matches, decided by the one glob rule (GlobMap: the tool's
	// own name, else the most specific glob, else "*"). A call without it is
	// denied (permission_denied, naming the scope); the tool stays listed,
	// so that the client can ask for a token with more scope.
	ToolScopes map[string]string `yaml:"tool_scopes,omitempty" json:"tool_scopes,omitempty"`
	// toolScopes is ToolScopes as a GlobMap, made when the file is checked.
	toolScopes *GlobMap[string]
	// JWT accepts tokens of one issuer; APIKeys static keys. At least one.
	JWT     *AuthJWT `yaml:"jwt,omitempty" json:"jwt,omitempty"`
	APIKeys []APIKey `yaml:"api_keys,omitempty" json:"api_keys,omitempty"`
}

// AuthJWT says which JSON Web Tokens are accepted.
type AuthJWT struct {
	Issuer   string `yaml:"issuer" json:"issuer"`
	JWKSURL  string `yaml:"jwks_url,omitempty" json:"jwks_url,omitempty"`   // the issuer's key set
	JWKSFile string `yaml:"jwks_file,omitempty" json:"jwks_file,omitempty"` // … or a local one
	// PrincipalClaim names the caller (default "sub"); RolesClaim, a string
	// or list claim whose values name policy roles ("a.b" reaches into an
	// object: realm_access.roles); ScopesClaim, the scopes (default "scope"
	// as a space-separated string, and "scp").
	PrincipalClaim string `yaml:"principal_claim,omitempty" json:"principal_claim,omitempty"`
	RolesClaim     string `yaml:"roles_claim,omitempty" json:"roles_claim,omitempty"`
	ScopesClaim    string `yaml:"scopes_claim,omitempty" json:"scopes_claim,omitempty"`
	// AllowPrivateNetwork lets the key set be fetched from private
	// addresses (loopback is always allowed; cloud metadata never).
	AllowPrivateNetwork bool `yaml:"allow_private_network,omitempty" json:"allow_private_network,omitempty"`
}

// APIKey is a static key for a machine: only the SHA-256 of the key (64
// hex digits) is stored.
type APIKey struct {
	SHA256    string   `yaml:"sha256" json:"sha256"`
	Principal string   `yaml:"principal" json:"principal"`
	Roles     []string `yaml:"roles,omitempty" json:"roles,omitempty"`
}

// checkAuth reports the first problem of an auth block, as a path in the
// file and a message.
func checkAuth(a *Auth, roles map[string]Role) (string, string) {
	if err := checkResource(a.Resource); err != "" {
		return "$.auth.resource", "auth.resource " + err
	}
	for _, s := range a.AuthorizationServers {
		if u, err := url.Parse(s); err != nil || !u.IsAbs() || u.Host == "" {
			return "$.auth.authorization_servers", fmt.Sprintf("auth.authorization_servers: %q is not an absolute URL", s)
		}
	}
	for _, s := range a.Scopes {
		if s == "" || strings.ContainsAny(s, " \"\\") {
			return "$.auth.scopes", fmt.Sprintf("auth.scopes: %q is not a scope (no spaces or quotes)", s)
		}
	}
	for g, sc := range a.ToolScopes {
		if _, err := path.Match(g, ""); err != nil {
			return "$.auth.tool_scopes", fmt.Sprintf("auth.tool_scopes: %q is not a tool glob: %v", g, err)
		}
		if sc == "" || strings.ContainsAny(sc, " \"\\") {
			return "$.auth.tool_scopes", fmt.Sprintf("auth.tool_scopes %q: %q is not a scope (no spaces or quotes)", g, sc)
		}
	}
	scopes, err := NewGlobMap("auth.tool_scopes", a.ToolScopes)
	if err != nil {
		return "$.auth.tool_scopes", err.Error()
	}
	a.toolScopes = &scopes
	if a.JWT == nil && len(a.APIKeys) == 0 {
		return "$.auth", "auth needs jwt or api_keys (or both): otherwise no caller could get in"
	}
	if j := a.JWT; j != nil {
		if j.Issuer == "" {
			return "$.auth.jwt.issuer", "auth.jwt.issuer is required: the iss every token must carry"
		}
		if (j.JWKSURL == "") == (j.JWKSFile == "") {
			return "$.auth.jwt", "auth.jwt needs exactly one of jwks_url and jwks_file"
		}
		if j.JWKSURL != "" {
			u, err := url.Parse(j.JWKSURL)
			if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && loopbackName(u.Hostname()))) {
				return "$.auth.jwt.jwks_url", fmt.Sprintf("auth.jwt.jwks_url %q: want an https URL (plain http only on a loopback address)", j.JWKSURL)
			}
		}
	}
	seen := map[string]bool{}
	for i, k := range a.APIKeys {
		where := fmt.Sprintf("$.auth.api_keys[%d]", i)
		if b, err := hex.DecodeString(k.SHA256); err != nil || len(b) != 32 {
			return where + ".sha256", fmt.Sprintf("auth.api_keys[%d].sha256 must be 64 hex digits (printf %%s \"$KEY\" | sha256sum)", i)
		}
		if seen[strings.ToLower(k.SHA256)] {
			return where + ".sha256", fmt.Sprintf("auth.api_keys[%d]: the same key is listed twice", i)
		}
		seen[strings.ToLower(k.SHA256)] = true
		if k.Principal == "" {
			return where + ".principal", fmt.Sprintf("auth.api_keys[%d].principal is required: the name the key's calls are made under", i)
		}
		for _, r := range k.Roles {
			if _, ok := roles[r]; !ok {
				return where + ".roles", fmt.Sprintf("auth.api_keys[%d]: role %q is not a role of the roles section", i, r)
			}
		}
	}
	return "", ""
}

// checkResource says what is wrong with a resource URL ("" nothing).
func checkResource(s string) string {
	u, err := url.Parse(s)
	switch {
	case s == "":
		return "is required: this server's URL, the audience tokens must name"
	case err != nil || !u.IsAbs() || u.Host == "":
		return fmt.Sprintf("%q is not an absolute URL", s)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Sprintf("%q must not have a fragment (RFC 8707)", s)
	case u.Scheme != "https" && !(u.Scheme == "http" && loopbackName(u.Hostname())):
		return fmt.Sprintf("%q: want https (plain http only on a loopback address)", s)
	}
	return ""
}

// loopbackName reports whether a URL's host names this machine.
func loopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// missingScope returns the scope an authenticated call of the tool named
// name needs and its credential lacks ("" none). An Auth that was not
// checked (made in code) and whose globs tie needs every matching glob's
// scope: it fails closed.
func (a *Auth) missingScope(name string, cred *tool.Credential) string {
	m := a.toolScopes
	if m == nil {
		gm, err := NewGlobMap("auth.tool_scopes", a.ToolScopes)
		if err != nil {
			for _, g := range slices.Sorted(maps.Keys(a.ToolScopes)) {
				if ok, _ := path.Match(g, name); ok && !slices.Contains(cred.Scopes, a.ToolScopes[g]) {
					return a.ToolScopes[g]
				}
			}
			return ""
		}
		m = &gm
	}
	if sc, _, ok := m.Lookup(name); ok && !slices.Contains(cred.Scopes, sc) {
		return sc
	}
	return ""
}
