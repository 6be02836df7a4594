package auth

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// OAuth is the oauth block of one server in a gateway configuration: how
// toolgate gets a token for that upstream. An empty block discovers
// everything, registers and signs each principal in with the
// authorization code flow.
type OAuth struct {
	// Grant is authorization_code (default) or client_credentials (the
	// default when TokenURL is set: the older form of this block).
	Grant string `yaml:"grant,omitempty" json:"grant,omitempty"`
	// ClientID names a pre-registered client; without it, a Client ID
	// Metadata Document (ClientIDMetadataURL) or dynamic registration.
	ClientID string `yaml:"client_id,omitempty" json:"client_id,omitempty"`
	// The client's secret, read from a file or an environment variable,
	// never written in the config.
	ClientSecretFile string `yaml:"client_secret_file,omitempty" json:"client_secret_file,omitempty"`
	ClientSecretEnv  string `yaml:"client_secret_env,omitempty" json:"client_secret_env,omitempty"`
	// PrivateKeyFile (PEM, PKCS#8 or SEC 1) signs private_key_jwt client
	// assertions with SigningAlgorithm (default ES256) for client
	// credentials.
	PrivateKeyFile   string `yaml:"private_key_file,omitempty" json:"private_key_file,omitempty"`
	SigningAlgorithm string `yaml:"signing_algorithm,omitempty" json:"signing_algorithm,omitempty"`
	// ClientIDMetadataURL is the https URL of this gateway's Client ID
	// Metadata Document (the gateway serves it at that URL's path): used
	// as the client_id where the authorization server supports it.
	ClientIDMetadataURL string `yaml:"client_id_metadata_url,omitempty" json:"client_id_metadata_url,omitempty"`
	// Scopes asked for; omitted: the upstream's WWW-Authenticate scope,
	// else its scopes_supported, else none.
	Scopes []string `yaml:"scopes,omitempty" json:"scopes,omitempty"`
	// TokenURL skips discovery (client credentials only).
	TokenURL string `yaml:"token_url,omitempty" json:"token_url,omitempty"`
	// Resource overrides the RFC 8707 resource (default: the one the
	// upstream's protected resource metadata names).
	Resource string `yaml:"resource,omitempty" json:"resource,omitempty"`
	// PerPrincipal (default true for authorization_code): each principal
	// signs in for itself; false: one sign-in for the whole gateway.
	PerPrincipal *bool `yaml:"per_principal,omitempty" json:"per_principal,omitempty"`
	// AllowPrivateNetwork lets discovery and token requests reach private
	// addresses (an authorization server inside the network).
	AllowPrivateNetwork bool `yaml:"allow_private_network,omitempty" json:"allow_private_network,omitempty"`
}

// The grants.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// MaxStepUps bounds the sign-ins asked for by insufficient_scope answers
// (the conformance suite's retry limit is 3 authorization requests).
const MaxStepUps = 2

// UpstreamOptions describe one OAuth-protected upstream.
type UpstreamOptions struct {
	// Name is the upstream's name; URL its MCP endpoint.
	Name, URL string
	OAuth     OAuth
	// Tokens keeps the grants.
	Tokens TokenStore
	// Dir resolves the relative files of OAuth (the config's folder).
	Dir string
	// SignIn says how a person signs in, for auth_required errors
	// (e.g. "toolgate auth login tracker --config gateway.yaml").
	SignIn string
	// SignInURL, when people sign in in a web page (the console's), is
	// that page: auth_required errors carry it (detail sign_in_url), for
	// a URL-mode elicitation.
	SignInURL string
	// ClientName is sent in dynamic registration; default "toolgate".
	ClientName string
}

// Upstream gets and keeps tokens for one upstream.
type Upstream struct {
	o       UpstreamOptions
	command string       // UpstreamOptions.SignIn, before SignInAt
	client  *http.Client // discovery, registration, token requests
	secret  string
	key     crypto.Signer
	alg     jose.SignatureAlgorithm
}

// NewUpstream checks the oauth block and returns its token keeper.
func NewUpstream(o UpstreamOptions) (*Upstream, error) {
	c := &o.OAuth
	where := "oauth of " + o.Name
	switch c.Grant {
	case "":
		c.Grant = GrantAuthorizationCode
		if c.TokenURL != "" {
			c.Grant = GrantClientCredentials
		}
	case GrantAuthorizationCode, GrantClientCredentials:
	default:
		return nil, fmt.Errorf("%s: grant %q: want authorization_code or client_credentials", where, c.Grant)
	}
	u, err := url.Parse(o.URL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("%s: oauth needs the server's http(s) url", where)
	}
	loopback := isLoopbackHost(u.Hostname())
	if u.Scheme == "http" && !loopback {
		return nil, fmt.Errorf("%s: url %s: OAuth tokens go over https only (plain http on a loopback address)", where, o.URL)
	}
	for _, f := range []struct{ name, v string }{{"token_url", c.TokenURL}, {"client_id_metadata_url", c.ClientIDMetadataURL}} {
		if f.v == "" {
			continue
		}
		fu, err := url.Parse(f.v)
		if err != nil || fu.Host == "" || (fu.Scheme != "https" && !(fu.Scheme == "http" && isLoopbackHost(fu.Hostname()))) {
			return nil, fmt.Errorf("%s: %s %q: want an https URL (plain http only on a loopback address)", where, f.name, f.v)
		}
		if f.name == "client_id_metadata_url" && (fu.Scheme != "https" || fu.Path == "" || fu.Path == "/") {
			return nil, fmt.Errorf("%s: client_id_metadata_url %q: a Client ID Metadata Document is an https URL with a path", where, f.v)
		}
		loopback = loopback || isLoopbackHost(fu.Hostname())
	}
	up := &Upstream{o: o}
	if c.ClientSecretFile != "" && !filepath.IsAbs(c.ClientSecretFile) && o.Dir != "" {
		c.ClientSecretFile = filepath.Join(o.Dir, c.ClientSecretFile)
	}
	if c.ClientSecretFile != "" || c.ClientSecretEnv != "" {
		if up.secret, err = readSecret(c.ClientSecretFile, c.ClientSecretEnv); err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
	}
	if c.PrivateKeyFile != "" {
		if up.key, up.alg, err = readSigningKey(c.PrivateKeyFile, o.Dir, c.SigningAlgorithm); err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
	} else if c.SigningAlgorithm != "" {
		return nil, fmt.Errorf("%s: signing_algorithm needs private_key_file", where)
	}
	switch {
	case (up.secret != "" || up.key != nil) && c.ClientID == "":
		return nil, fmt.Errorf("%s: a client secret or private key needs the client_id it belongs to", where)
	case up.secret != "" && up.key != nil:
		return nil, fmt.Errorf("%s: give a client secret or a private key, not both", where)
	case c.Grant == GrantClientCredentials && c.ClientID == "":
		return nil, fmt.Errorf("%s: client_credentials needs client_id and a secret (client_secret_env or client_secret_file) or a private key (private_key_file)", where)
	case c.Grant == GrantClientCredentials && up.secret == "" && up.key == nil:
		return nil, fmt.Errorf("%s: client_credentials needs a secret (client_secret_env or client_secret_file) or a private key (private_key_file)", where)
	case c.Grant == GrantClientCredentials && c.PerPrincipal != nil && *c.PerPrincipal:
		return nil, fmt.Errorf("%s: client_credentials is the gateway's own identity: per_principal cannot be true", where)
	case c.Grant == GrantAuthorizationCode && c.TokenURL != "":
		return nil, fmt.Errorf("%s: token_url is for client_credentials; the authorization code flow discovers its endpoints", where)
	}
	up.client = guardedClient(loopback, c.AllowPrivateNetwork)
	return up, nil
}

// Name is the upstream's name.
func (u *Upstream) Name() string { return u.o.Name }

// SignInAt says people sign in to the upstream at the web page url (the
// console's) rather than with the command of UpstreamOptions.SignIn. Call
// it before the upstream is used.
func (u *Upstream) SignInAt(url string) {
	if u.command == "" {
		u.command = u.o.SignIn
	}
	u.o.SignIn, u.o.SignInURL = "open "+url+" in a browser", url
}

// SignInCommand is the command that signs the local principal in (the
// UpstreamOptions.SignIn it was made with).
func (u *Upstream) SignInCommand() string {
	if u.command != "" {
		return u.command
	}
	return u.o.SignIn
}

// Grant is the block's grant type.
func (u *Upstream) Grant() string { return u.o.OAuth.Grant }

// PerPrincipal reports whether each principal signs in for itself.
func (u *Upstream) PerPrincipal() bool {
	if u.o.OAuth.Grant == GrantClientCredentials {
		return false
	}
	return u.o.OAuth.PerPrincipal == nil || *u.o.OAuth.PerPrincipal
}

// Key is the store key of principal's grant.
func (u *Upstream) Key(principal string) string {
	if !u.PerPrincipal() {
		principal = ""
	}
	return GrantKey(u.o.Name, u.o.URL, principal)
}

// Status is what Status tells of a principal's grant, without its
// secrets.
type Status struct {
	Upstream  string    `json:"upstream"`
	SignedIn  bool      `json:"signed_in"`
	Grant     string    `json:"grant"`
	Scopes    []string  `json:"scopes,omitempty"`
	Want      []string  `json:"want,omitempty"`
	Expiry    time.Time `json:"expiry,omitzero"`
	Refreshes bool      `json:"refreshable"`
	Issuer    string    `json:"issuer,omitempty"`
	Since     time.Time `json:"since,omitzero"`
}

// Status tells whether principal holds a grant.
func (u *Upstream) Status(ctx context.Context, principal string) (Status, error) {
	s := Status{Upstream: u.o.Name, Grant: u.o.OAuth.Grant}
	g, err := u.o.Tokens.Load(ctx, u.Key(principal))
	if err != nil || g == nil {
		return s, err
	}
	s.SignedIn, s.Scopes, s.Want, s.Expiry, s.Refreshes, s.Issuer, s.Since = true, g.Scopes, g.Want, g.Expiry, g.RefreshToken != "", g.Issuer, g.SignedIn
	return s, nil
}

// Logout forgets principal's grant, revoking its tokens first where the
// authorization server offers revocation (RFC 7009). A failed revocation
// is returned after the grant is forgotten.
func (u *Upstream) Logout(ctx context.Context, principal string) (revoked bool, err error) {
	key := u.Key(principal)
	g, err := u.o.Tokens.Load(ctx, key)
	if err != nil || g == nil {
		return false, err
	}
	var rerr error
	if g.RevocationURL != "" {
		for _, t := range []struct{ v, hint string }{{g.RefreshToken, "refresh_token"}, {g.AccessToken, "access_token"}} {
			if t.v == "" {
				continue
			}
			if err := u.revoke(ctx, g, t.v, t.hint); err != nil {
				rerr = err
			} else {
				revoked = true
			}
		}
	}
	if err := u.o.Tokens.Delete(ctx, key); err != nil {
		return revoked, err
	}
	return revoked, rerr
}

func (u *Upstream) revoke(ctx context.Context, g *Grant, token, hint string) error {
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.RevocationURL, nil)
	if err != nil {
		return err
	}
	switch g.AuthMethod {
	case "client_secret_basic":
		req.SetBasicAuth(url.QueryEscape(g.ClientID), url.QueryEscape(g.ClientSecret))
	case "client_secret_post":
		form.Set("client_id", g.ClientID)
		form.Set("client_secret", g.ClientSecret)
	default:
		form.Set("client_id", g.ClientID)
	}
	body := form.Encode()
	req.Body = io.NopCloser(strings.NewReader(body))
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := u.client.Do(req)
	if err != nil {
		return fmt.Errorf("revoking the %s at %s: %w", hint, g.RevocationURL, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revoking the %s at %s: HTTP %d", hint, g.RevocationURL, resp.StatusCode)
	}
	return nil
}

// readSigningKey reads a PEM private key for private_key_jwt.
func readSigningKey(file, dir, alg string) (crypto.Signer, jose.SignatureAlgorithm, error) {
	if !filepath.IsAbs(file) && dir != "" {
		file = filepath.Join(dir, file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, "", fmt.Errorf("private_key_file: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, "", fmt.Errorf("private_key_file %s: no PEM block", file)
	}
	var key any
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, "", fmt.Errorf("private_key_file %s: %w", file, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, "", fmt.Errorf("private_key_file %s: not a signing key", file)
	}
	if alg == "" {
		alg = "ES256"
	}
	a := jose.SignatureAlgorithm(alg)
	if !slices.Contains([]jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.ES512, jose.RS256, jose.PS256, jose.EdDSA}, a) {
		return nil, "", fmt.Errorf("signing_algorithm %q: want ES256, ES384, ES512, RS256, PS256 or EdDSA", alg)
	}
	return signer, a, nil
}

// endpoints is what discovery found.
type endpoints struct {
	resource string
	scopes   []string // the challenge's, else the resource's scopes_supported
	asm      *oauthex.AuthServerMeta
}

// discover finds the authorization server of the upstream from its
// challenge (nil: none seen), as the MCP authorization specification
// says: the protected resource metadata (the challenge's
// resource_metadata, then the path-inserted and the root well-known
// URLs), then the authorization server's metadata (RFC 8414 and OpenID
// discovery, path-inserted then appended); without protected resource
// metadata, the 2025-03-26 rules (the server's root is the authorization
// server; its metadata, else /authorize, /token and /register there).
func (u *Upstream) discover(ctx context.Context, ch *challenge) (*endpoints, error) {
	base, err := url.Parse(u.o.URL)
	if err != nil {
		return nil, err
	}
	type candidate struct{ url, resource string }
	var cands []candidate
	if ch != nil && ch.resourceMetadata != "" {
		cands = append(cands, candidate{ch.resourceMetadata, u.o.URL})
	}
	inserted := *base
	inserted.RawQuery, inserted.Fragment = "", ""
	inserted.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(base.Path, "/")
	inserted.RawPath = ""
	root := *base
	root.Path, root.RawPath, root.RawQuery, root.Fragment = "", "", "", ""
	rootPRM := root
	rootPRM.Path = "/.well-known/oauth-protected-resource"
	if strings.Trim(base.Path, "/") != "" {
		cands = append(cands, candidate{inserted.String(), u.o.URL})
	}
	cands = append(cands, candidate{rootPRM.String(), root.String()})

	var prm *oauthex.ProtectedResourceMetadata
	for _, c := range cands {
		p, err := getJSON[oauthex.ProtectedResourceMetadata](ctx, u.client, c.url)
		if err != nil {
			return nil, fmt.Errorf("protected resource metadata at %s: %w", c.url, err)
		}
		if p == nil {
			continue
		}
		if strings.TrimSuffix(p.Resource, "/") != strings.TrimSuffix(c.resource, "/") {
			return nil, fmt.Errorf("protected resource metadata at %s names the resource %q, not %q: refusing it (RFC 9728 §3.3)", c.url, p.Resource, c.resource)
		}
		if len(p.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("protected resource metadata at %s names no authorization server", c.url)
		}
		prm = p
		break
	}
	e := &endpoints{}
	if ch != nil {
		e.scopes = ch.scopes
	}
	if prm == nil {
		// 2025-03-26: the server's root is the authorization server.
		e.resource = u.o.URL
		asURL := root.String()
		meta := asURL + "/.well-known/oauth-authorization-server"
		asm, err := getJSON[oauthex.AuthServerMeta](ctx, u.client, meta)
		if err != nil {
			return nil, fmt.Errorf("authorization server metadata at %s: %w", meta, err)
		}
		if asm == nil {
			asm = &oauthex.AuthServerMeta{Issuer: asURL, AuthorizationEndpoint: asURL + "/authorize", TokenEndpoint: asURL + "/token", RegistrationEndpoint: asURL + "/register"}
		}
		e.asm = asm
	} else {
		e.resource = prm.Resource
		if len(e.scopes) == 0 {
			e.scopes = prm.ScopesSupported
		}
		if e.asm, err = u.authServerMeta(ctx, prm.AuthorizationServers[0]); err != nil {
			return nil, err
		}
	}
	if u.o.OAuth.Resource != "" {
		e.resource = u.o.OAuth.Resource
	}
	for _, f := range []struct{ name, v string }{{"authorization_endpoint", e.asm.AuthorizationEndpoint}, {"token_endpoint", e.asm.TokenEndpoint}, {"registration_endpoint", e.asm.RegistrationEndpoint}, {"revocation_endpoint", e.asm.RevocationEndpoint}} {
		if f.v == "" {
			continue
		}
		if pu, err := url.Parse(f.v); err != nil || (pu.Scheme != "https" && !(pu.Scheme == "http" && isLoopbackHost(pu.Hostname()))) {
			return nil, fmt.Errorf("authorization server %s: %s %q is not an https URL", e.asm.Issuer, f.name, f.v)
		}
	}
	if e.asm.TokenEndpoint == "" {
		return nil, fmt.Errorf("authorization server %s names no token endpoint", e.asm.Issuer)
	}
	return e, nil
}

// authServerMeta fetches an issuer's metadata, trying the RFC 8414 and
// OpenID well-known URLs in the specification's order.
func (u *Upstream) authServerMeta(ctx context.Context, issuer string) (*oauthex.AuthServerMeta, error) {
	iu, err := url.Parse(issuer)
	if err != nil || iu.Host == "" || (iu.Scheme != "https" && !(iu.Scheme == "http" && isLoopbackHost(iu.Hostname()))) {
		return nil, fmt.Errorf("authorization server %q is not an https URL", issuer)
	}
	p := strings.Trim(iu.Path, "/")
	var urls []string
	at := func(path string) string {
		v := *iu
		v.Path, v.RawPath, v.RawQuery, v.Fragment = path, "", "", ""
		return v.String()
	}
	if p == "" {
		urls = []string{at("/.well-known/oauth-authorization-server"), at("/.well-known/openid-configuration")}
	} else {
		urls = []string{at("/.well-known/oauth-authorization-server/" + p), at("/.well-known/openid-configuration/" + p), at("/" + p + "/.well-known/openid-configuration")}
	}
	for _, m := range urls {
		asm, err := getJSON[oauthex.AuthServerMeta](ctx, u.client, m)
		if err != nil {
			return nil, fmt.Errorf("authorization server metadata at %s: %w", m, err)
		}
		if asm == nil {
			continue
		}
		if strings.TrimSuffix(asm.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			return nil, fmt.Errorf("authorization server metadata at %s names the issuer %q, not %q (RFC 8414 §3.3)", m, asm.Issuer, issuer)
		}
		return asm, nil
	}
	return nil, fmt.Errorf("authorization server %s publishes no metadata (tried %s)", issuer, strings.Join(urls, ", "))
}

// maxMetadata bounds a metadata document.
const maxMetadata = 1 << 20

// getJSON fetches a JSON document; a 4xx answer is nil and no error.
func getJSON[T any](ctx context.Context, c *http.Client, u string) (*T, error) {
	if err := checkURL(u); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var v T
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMetadata)).Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	return &v, nil
}

// challenge is what a 401 or 403 said (RFC 6750 §3, RFC 9728 §5.1).
type challenge struct {
	status           int
	resourceMetadata string
	scopes           []string
	err              string
}

func parseChallenge(resp *http.Response) *challenge {
	ch := &challenge{status: resp.StatusCode}
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return ch
	}
	for _, c := range cs {
		if c.Scheme != "bearer" {
			continue
		}
		ch.resourceMetadata = c.Params["resource_metadata"]
		ch.scopes = strings.Fields(c.Params["scope"])
		ch.err = c.Params["error"]
		break
	}
	return ch
}

// probe asks the upstream, without a token, what it wants: an
// initialize, and when that is let through, a tools/list in its session.
// It returns the first 401 or 403 challenge, or nil.
func (u *Upstream) probe(ctx context.Context) (*challenge, error) {
	post := func(body, session string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.o.URL, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		return u.client.Do(req)
	}
	resp, err := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"toolgate","version":"auth"}}}`, "")
	if err != nil {
		return nil, fmt.Errorf("reaching %s: %w", u.o.URL, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadata))
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return parseChallenge(resp), nil
	}
	session := resp.Header.Get("Mcp-Session-Id")
	for _, body := range []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`} {
		resp, err := post(body, session)
		if err != nil {
			return nil, fmt.Errorf("reaching %s: %w", u.o.URL, err)
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadata))
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			return parseChallenge(resp), nil
		}
	}
	return nil, nil
}

// client is the registered (or configured) client at an authorization
// server.
type client struct {
	id, secret, method string
}

// register picks the client: a Client ID Metadata Document where the
// server supports it, the pre-registered client_id, else dynamic
// registration (RFC 7591) for redirectURL.
func (u *Upstream) register(ctx context.Context, asm *oauthex.AuthServerMeta, redirectURL string) (client, error) {
	c := u.o.OAuth
	if c.ClientIDMetadataURL != "" && asm.ClientIDMetadataDocumentSupported {
		return client{id: c.ClientIDMetadataURL, method: "none"}, nil
	}
	if c.ClientID != "" {
		m := "none"
		if u.secret != "" {
			m = pickMethod(asm.TokenEndpointAuthMethodsSupported)
		}
		return client{id: c.ClientID, secret: u.secret, method: m}, nil
	}
	if asm.RegistrationEndpoint == "" {
		return client{}, fmt.Errorf("authorization server %s offers no dynamic registration: set client_id (a client registered there) or client_id_metadata_url in the oauth block", asm.Issuer)
	}
	name := u.o.ClientName
	if name == "" {
		name = "toolgate"
	}
	method := "none"
	if s := asm.TokenEndpointAuthMethodsSupported; len(s) > 0 && !slices.Contains(s, "none") {
		method = pickMethod(s)
	}
	meta := &oauthex.ClientRegistrationMetadata{
		RedirectURIs:            []string{redirectURL},
		TokenEndpointAuthMethod: method,
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		ClientName:              name,
	}
	if isLoopbackHost(hostOf(redirectURL)) {
		meta.ApplicationType = "native"
	}
	reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, meta, u.client)
	if err != nil {
		return client{}, fmt.Errorf("registering at %s: %w", asm.RegistrationEndpoint, err)
	}
	if reg.TokenEndpointAuthMethod != "" {
		method = reg.TokenEndpointAuthMethod
	} else if reg.ClientSecret != "" && method == "none" {
		method = "client_secret_basic"
	}
	return client{id: reg.ClientID, secret: reg.ClientSecret, method: method}, nil
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// pickMethod chooses how a client with a secret authenticates at the token
// endpoint: client_secret_basic (RFC 6749's default) unless only
// client_secret_post is offered.
func pickMethod(supported []string) string {
	if !slices.Contains(supported, "client_secret_basic") && slices.Contains(supported, "client_secret_post") {
		return "client_secret_post"
	}
	return "client_secret_basic"
}

func authStyle(method string) oauth2.AuthStyle {
	if method == "client_secret_basic" {
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleInParams
}

// ClientIDMetadata is the Client ID Metadata Document of the client
// whose client_id is the https URL id, with the redirect URIs people sign
// in through (the console's callbacks; a loopback one for toolgate auth
// login): what an authorization server that supports such documents
// fetches from id. It is public: no secret is in it.
func ClientIDMetadata(id, name string, redirectURIs []string) ([]byte, error) {
	if name == "" {
		name = "toolgate"
	}
	return json.MarshalIndent(map[string]any{
		"client_id":                  id,
		"client_name":                name,
		"redirect_uris":              redirectURIs,
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	}, "", "  ")
}

// ClientIDMetadataURL is the block's client_id_metadata_url ("" none).
func (u *Upstream) ClientIDMetadataURL() string { return u.o.OAuth.ClientIDMetadataURL }

// PendingLogin is an authorization code flow waiting for its redirect.
type PendingLogin struct {
	// URL is where the person goes to sign in.
	URL string

	u         *Upstream
	principal string
	state     string
	verifier  string
	cfg       oauth2.Config
	e         *endpoints
	cl        client
	scopes    []string
	stepUps   int
}

// BeginLogin starts the authorization code flow for principal, whose
// browser will come back to redirectURL: discovery, registration, the
// scopes (the configured ones; else what the upstream asked for since
// the last sign-in together with what was granted then; else its
// challenge, else its scopes_supported), and the authorization URL with
// PKCE (S256) and the resource (RFC 8707).
func (u *Upstream) BeginLogin(ctx context.Context, principal, redirectURL string) (*PendingLogin, error) {
	if u.o.OAuth.Grant != GrantAuthorizationCode {
		return nil, fmt.Errorf("upstream %s uses client credentials: there is nobody to sign in", u.o.Name)
	}
	ch, err := u.probe(ctx)
	if err != nil {
		return nil, err
	}
	e, err := u.discover(ctx, ch)
	if err != nil {
		return nil, err
	}
	if e.asm.AuthorizationEndpoint == "" {
		return nil, fmt.Errorf("authorization server %s names no authorization endpoint", e.asm.Issuer)
	}
	if m := e.asm.CodeChallengeMethodsSupported; len(m) > 0 && !slices.Contains(m, "S256") {
		return nil, fmt.Errorf("authorization server %s does not offer PKCE with S256, which MCP requires", e.asm.Issuer)
	}
	cl, err := u.register(ctx, e.asm, redirectURL)
	if err != nil {
		return nil, err
	}
	scopes := e.scopes
	stepUps := 0
	if prev, err := u.o.Tokens.Load(ctx, u.Key(principal)); err == nil && prev != nil && len(prev.Want) > 0 {
		scopes = union(union(prev.Scopes, prev.Want), scopes)
		stepUps = prev.StepUps + 1
	}
	if len(u.o.OAuth.Scopes) > 0 {
		scopes = union(u.o.OAuth.Scopes, scopes)
	}
	p := &PendingLogin{
		u: u, principal: principal, state: rand.Text(), verifier: oauth2.GenerateVerifier(), e: e, cl: cl, scopes: scopes, stepUps: stepUps,
		cfg: oauth2.Config{
			ClientID: cl.id, ClientSecret: cl.secret, RedirectURL: redirectURL, Scopes: scopes,
			Endpoint: oauth2.Endpoint{AuthURL: e.asm.AuthorizationEndpoint, TokenURL: e.asm.TokenEndpoint, AuthStyle: authStyle(cl.method)},
		},
	}
	p.URL = p.cfg.AuthCodeURL(p.state, oauth2.S256ChallengeOption(p.verifier), oauth2.SetAuthURLParam("resource", e.resource))
	return p, nil
}

// Finish takes the query of the redirect: checks its state (and iss, RFC
// 9207), exchanges the code with the PKCE verifier and the resource, and
// stores the grant.
func (p *PendingLogin) Finish(ctx context.Context, q url.Values) error {
	if e := q.Get("error"); e != "" {
		return fmt.Errorf("the authorization server refused: %s %s", e, q.Get("error_description"))
	}
	if q.Get("state") != p.state {
		return errors.New("the redirect's state is not this sign-in's: start again")
	}
	if iss := q.Get("iss"); (iss != "" || p.e.asm.AuthorizationResponseIssParameterSupported) && strings.TrimSuffix(iss, "/") != strings.TrimSuffix(p.e.asm.Issuer, "/") {
		return fmt.Errorf("the redirect names the issuer %q, not %q (RFC 9207)", iss, p.e.asm.Issuer)
	}
	code := q.Get("code")
	if code == "" {
		return errors.New("the redirect carries no code")
	}
	tok, err := p.cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, p.u.client), code,
		oauth2.VerifierOption(p.verifier), oauth2.SetAuthURLParam("resource", p.e.resource))
	if err != nil {
		return fmt.Errorf("exchanging the code at %s: %s", p.e.asm.TokenEndpoint, tokenErr(err))
	}
	g := &Grant{
		Scopes: p.scopes, StepUps: p.stepUps, Resource: p.e.resource, Issuer: p.e.asm.Issuer,
		TokenURL: p.e.asm.TokenEndpoint, RevocationURL: p.e.asm.RevocationEndpoint,
		ClientID: p.cl.id, ClientSecret: p.cl.secret, AuthMethod: p.cl.method, SignedIn: time.Now().UTC(),
	}
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		g.Scopes = union(g.Scopes, strings.Fields(s))
	}
	g.setToken(tok)
	return p.u.o.Tokens.Save(ctx, p.u.Key(p.principal), g)
}

// pendingJSON is a PendingLogin written down, for a sign-in whose
// redirect may reach another replica (the console keeps it sealed in the
// browser's cookie until then).
type pendingJSON struct {
	Upstream  string   `json:"upstream"`
	URL       string   `json:"url"`
	Principal string   `json:"principal"`
	State     string   `json:"state"`
	Verifier  string   `json:"verifier"`
	Redirect  string   `json:"redirect"`
	Scopes    []string `json:"scopes,omitempty"`
	StepUps   int      `json:"step_ups,omitempty"`
	Resource  string   `json:"resource"`
	Issuer    string   `json:"issuer"`
	AuthURL   string   `json:"auth_url"`
	TokenURL  string   `json:"token_url"`
	Revoke    string   `json:"revocation_url,omitempty"`
	Iss       bool     `json:"iss,omitempty"` // the server sends iss (RFC 9207)
	ClientID  string   `json:"client_id"`
	Secret    string   `json:"client_secret,omitempty"`
	Method    string   `json:"auth_method,omitempty"`
}

// Marshal writes the pending sign-in down, secrets included (the PKCE
// verifier, a registered client's secret): keep it sealed.
func (p *PendingLogin) Marshal() ([]byte, error) {
	return json.Marshal(pendingJSON{
		Upstream: p.u.o.Name, URL: p.u.o.URL, Principal: p.principal, State: p.state, Verifier: p.verifier,
		Redirect: p.cfg.RedirectURL, Scopes: p.scopes, StepUps: p.stepUps, Resource: p.e.resource,
		Issuer: p.e.asm.Issuer, AuthURL: p.e.asm.AuthorizationEndpoint, TokenURL: p.e.asm.TokenEndpoint, Revoke: p.e.asm.RevocationEndpoint,
		Iss: p.e.asm.AuthorizationResponseIssParameterSupported, ClientID: p.cl.id, Secret: p.cl.secret, Method: p.cl.method,
	})
}

// ResumeLogin takes back what PendingLogin.Marshal wrote, for principal:
// a sign-in begun for another upstream or principal is refused.
func (u *Upstream) ResumeLogin(b []byte, principal string) (*PendingLogin, error) {
	var j pendingJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("a pending sign-in: %w", err)
	}
	if j.Upstream != u.o.Name || j.URL != u.o.URL {
		return nil, fmt.Errorf("this sign-in was begun for upstream %s, not %s: start again", j.Upstream, u.o.Name)
	}
	if j.Principal != principal {
		return nil, errors.New("this sign-in was begun by another principal: start again")
	}
	asm := &oauthex.AuthServerMeta{Issuer: j.Issuer, AuthorizationEndpoint: j.AuthURL, TokenEndpoint: j.TokenURL, RevocationEndpoint: j.Revoke, AuthorizationResponseIssParameterSupported: j.Iss}
	p := &PendingLogin{
		u: u, principal: j.Principal, state: j.State, verifier: j.Verifier, scopes: j.Scopes, stepUps: j.StepUps,
		e: &endpoints{resource: j.Resource, asm: asm}, cl: client{id: j.ClientID, secret: j.Secret, method: j.Method},
		cfg: oauth2.Config{
			ClientID: j.ClientID, ClientSecret: j.Secret, RedirectURL: j.Redirect, Scopes: j.Scopes,
			Endpoint: oauth2.Endpoint{AuthURL: j.AuthURL, TokenURL: j.TokenURL, AuthStyle: authStyle(j.Method)},
		},
	}
	p.URL = p.cfg.AuthCodeURL(p.state, oauth2.S256ChallengeOption(p.verifier), oauth2.SetAuthURLParam("resource", j.Resource))
	return p, nil
}

// tokenErr says why a token request failed without the response body
// (which an odd server could fill with anything).
func tokenErr(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		s := fmt.Sprintf("HTTP %d", re.Response.StatusCode)
		if re.ErrorCode != "" {
			s += " " + re.ErrorCode
		}
		return s
	}
	return err.Error()
}

// clientCredentials gets a token with the client's own credentials (RFC
// 6749 §4.4), the token endpoint discovered unless configured;
// private_key_jwt (RFC 7523) when a private key is configured.
func (u *Upstream) clientCredentials(ctx context.Context, ch *challenge, want []string) (*Grant, error) {
	c := u.o.OAuth
	g := &Grant{ClientID: c.ClientID, ClientSecret: u.secret, Resource: c.Resource, TokenURL: c.TokenURL, Issuer: c.TokenURL}
	methods := []string(nil)
	scopes := c.Scopes
	if c.TokenURL == "" {
		if ch == nil {
			var err error
			if ch, err = u.probe(ctx); err != nil {
				return nil, err
			}
		}
		e, err := u.discover(ctx, ch)
		if err != nil {
			return nil, err
		}
		g.Resource, g.TokenURL, g.Issuer, g.RevocationURL = e.resource, e.asm.TokenEndpoint, e.asm.Issuer, e.asm.RevocationEndpoint
		methods = e.asm.TokenEndpointAuthMethodsSupported
		if len(scopes) == 0 {
			scopes = e.scopes
		}
	}
	scopes = union(scopes, want)
	cfg := clientcredentials.Config{ClientID: c.ClientID, TokenURL: g.TokenURL, Scopes: scopes, EndpointParams: url.Values{}}
	if g.Resource != "" {
		cfg.EndpointParams.Set("resource", g.Resource)
	}
	if u.key != nil {
		assertion, err := u.assertion(g.Issuer)
		if err != nil {
			return nil, err
		}
		g.AuthMethod = "private_key_jwt"
		cfg.AuthStyle = oauth2.AuthStyleInParams
		cfg.EndpointParams.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		cfg.EndpointParams.Set("client_assertion", assertion)
	} else {
		g.AuthMethod = pickMethod(methods)
		cfg.ClientSecret = u.secret
		cfg.AuthStyle = authStyle(g.AuthMethod)
	}
	tok, err := cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, u.client))
	if err != nil {
		return nil, fmt.Errorf("client credentials at %s: %s", g.TokenURL, tokenErr(err))
	}
	g.Scopes, g.SignedIn = scopes, time.Now().UTC()
	g.setToken(tok)
	return g, nil
}

// assertion is a private_key_jwt client assertion for audience (the
// authorization server's issuer).
func (u *Upstream) assertion(audience string) (string, error) {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: u.alg, Key: u.key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", err
	}
	now := time.Now()
	return jwt.Signed(sig).Claims(jwt.Claims{
		Issuer: u.o.OAuth.ClientID, Subject: u.o.OAuth.ClientID, Audience: jwt.Audience{audience},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(5 * time.Minute)), ID: rand.Text(),
	}).Serialize()
}

// refresh uses g's refresh token; the new grant keeps the rotated refresh
// token (or the old one when none came back).
func (u *Upstream) refresh(ctx context.Context, g *Grant) error {
	cfg := oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret, Endpoint: oauth2.Endpoint{TokenURL: g.TokenURL, AuthStyle: authStyle(g.AuthMethod)}}
	old := g.token()
	old.Expiry = time.Unix(1, 0) // force the refresh
	src := cfg.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, u.client), old)
	tok, err := src.Token()
	if err != nil {
		return fmt.Errorf("refreshing at %s: %s", g.TokenURL, tokenErr(err))
	}
	g.setToken(tok)
	return nil
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// bodyAgain returns a fresh copy of a request's body for a retry.
func bodyAgain(r *http.Request) (io.ReadCloser, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return http.NoBody, nil
	}
	if r.GetBody == nil {
		return nil, errors.New("the request cannot be sent twice")
	}
	return r.GetBody()
}
