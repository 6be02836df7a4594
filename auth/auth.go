package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// Options tune an Authenticator; the zero value is the production setting.
type Options struct {
	// Skew is the clock difference allowed on exp, nbf and iat; default
	// one minute.
	Skew time.Duration
	// MinRefresh is the shortest time between two fetches of the JWKS
	// (an unknown kid fetches it again); default 5 s. MaxAge is how long a
	// fetched JWKS is used before it is fetched again; default 10 min.
	MinRefresh, MaxAge time.Duration
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// HTTPClient fetches the JWKS; nil: a client that dials only the URL's
	// host on a public or loopback address (see the package doc).
	HTTPClient *http.Client
}

// Identity is a verified caller.
type Identity struct {
	Principal  string
	Credential tool.Credential
	Expiry     time.Time // zero: none (an API key)
}

// Authenticator verifies the credentials of HTTP callers. It is safe for
// concurrent use.
type Authenticator struct {
	cfg    policy.Auth
	opts   Options
	keys   *keySet // nil: no JWT accepted
	apiKey []apiKey
	meta   string // the resource metadata URL
}

type apiKey struct {
	sum       [32]byte
	principal string
	roles     []string
}

// ErrInvalidToken is wrapped by every refusal of a credential.
var ErrInvalidToken = sdkauth.ErrInvalidToken

// maxTokenBytes caps an Authorization header.
const maxTokenBytes = 16 << 10

// New returns an Authenticator for an auth block that policy.Parse has
// checked.
func New(cfg policy.Auth, o Options) (*Authenticator, error) {
	if o.Skew <= 0 {
		o.Skew = time.Minute
	}
	if o.MinRefresh <= 0 {
		o.MinRefresh = 5 * time.Second
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 10 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	meta, err := MetadataURL(cfg.Resource)
	if err != nil {
		return nil, err
	}
	a := &Authenticator{cfg: cfg, opts: o, meta: meta}
	if j := cfg.JWT; j != nil {
		if j.JWKSFile != "" {
			if a.keys, err = loadKeys(j.JWKSFile); err != nil {
				return nil, err
			}
		} else {
			client := o.HTTPClient
			if client == nil {
				if client, err = jwksClient(j.JWKSURL, j.AllowPrivateNetwork); err != nil {
					return nil, fmt.Errorf("auth: jwks_url: %w", err)
				}
			}
			a.keys = &keySet{url: j.JWKSURL, client: client, now: o.Now, minGap: o.MinRefresh, maxAge: o.MaxAge}
		}
	}
	for _, k := range cfg.APIKeys {
		b, err := hex.DecodeString(k.SHA256)
		if err != nil || len(b) != 32 {
			return nil, fmt.Errorf("auth: api key of %q: sha256 must be 64 hex digits", k.Principal)
		}
		a.apiKey = append(a.apiKey, apiKey{sum: [32]byte(b), principal: k.Principal, roles: k.Roles})
	}
	return a, nil
}

// Verify checks a bearer token: an API key when its hash is listed,
// otherwise a JWT. Every error wraps ErrInvalidToken.
func (a *Authenticator) Verify(ctx context.Context, token string) (*Identity, error) {
	if len(a.apiKey) > 0 {
		sum := sha256.Sum256([]byte(token))
		found := -1
		for i := range a.apiKey { // no early exit: the time taken says nothing
			if subtle.ConstantTimeCompare(sum[:], a.apiKey[i].sum[:]) == 1 {
				found = i
			}
		}
		if found >= 0 {
			k := a.apiKey[found]
			return &Identity{Principal: k.principal, Credential: tool.Credential{
				Kind: tool.CredentialAPIKey, Key: hex.EncodeToString(k.sum[:4]), Roles: k.roles}}, nil
		}
	}
	if a.keys == nil {
		return nil, fmt.Errorf("%w: not a known API key", ErrInvalidToken)
	}
	id, err := a.verifyJWT(ctx, token)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	return id, nil
}

var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA}

func (a *Authenticator) verifyJWT(ctx context.Context, raw string) (*Identity, error) {
	tok, err := jwt.ParseSigned(raw, algorithms)
	if err != nil {
		return nil, fmt.Errorf("not a JWT signed with RS256, ES256 or EdDSA: %v", err)
	}
	if len(tok.Headers) != 1 {
		return nil, errors.New("a JWT has one signature")
	}
	h := tok.Headers[0]
	keys, err := a.keys.candidates(ctx, h.KeyID, jose.SignatureAlgorithm(h.Algorithm))
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no %s key with kid %q in the issuer's JWKS", h.Algorithm, h.KeyID)
	}
	var extra map[string]any
	verified := false
	for _, k := range keys {
		extra = nil
		if tok.Claims(k.Key, &extra) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, errors.New("the signature does not verify")
	}
	var claims jwt.Claims
	if b, err := json.Marshal(extra); err != nil || json.Unmarshal(b, &claims) != nil {
		return nil, errors.New("the token's registered claims (iss, sub, aud, exp, nbf, iat, jti) do not have their types")
	}
	j := a.cfg.JWT
	if claims.Expiry == nil {
		return nil, errors.New("the token has no exp")
	}
	err = claims.ValidateWithLeeway(jwt.Expected{Issuer: j.Issuer, AnyAudience: jwt.Audience{a.cfg.Resource}, Time: a.opts.Now()}, a.opts.Skew)
	switch {
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, fmt.Errorf("the token's aud %q does not name this resource %q", []string(claims.Audience), a.cfg.Resource)
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return nil, fmt.Errorf("the token's iss %q is not the issuer %q", claims.Issuer, j.Issuer)
	case err != nil:
		return nil, err
	}
	name := cmp(j.PrincipalClaim, "sub")
	principal, _ := claim(extra, name).(string)
	if principal == "" {
		return nil, fmt.Errorf("the token has no %s claim naming the caller", name)
	}
	cred := tool.Credential{Kind: tool.CredentialJWT, Issuer: claims.Issuer, JTI: claims.ID}
	if j.RolesClaim != "" {
		cred.Roles = words(claim(extra, j.RolesClaim), false)
	}
	if j.ScopesClaim != "" {
		cred.Scopes = words(claim(extra, j.ScopesClaim), true)
	} else {
		cred.Scopes = append(words(claim(extra, "scope"), true), words(claim(extra, "scp"), true)...)
	}
	return &Identity{Principal: principal, Credential: cred, Expiry: claims.Expiry.Time()}, nil
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// claim finds a claim by name; "a.b" reaches into object a when there is
// no claim "a.b" itself.
func claim(claims map[string]any, name string) any {
	if v, ok := claims[name]; ok {
		return v
	}
	head, rest, ok := strings.Cut(name, ".")
	if !ok {
		return nil
	}
	sub, _ := claims[head].(map[string]any)
	return claim(sub, rest)
}

// words reads a string claim or a list of strings; split: a string is
// space-separated (scopes).
func words(v any, split bool) []string {
	switch v := v.(type) {
	case string:
		if split {
			return strings.Fields(v)
		}
		if v != "" {
			return []string{v}
		}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// MetadataURL is where the resource metadata of resource is published:
// the path-inserted form of RFC 9728 §3.1.
func MetadataURL(resource string) (string, error) {
	u, err := url.Parse(resource)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return "", fmt.Errorf("auth: resource %q is not an absolute URL", resource)
	}
	m := url.URL{Scheme: u.Scheme, Host: u.Host, Path: wellKnown + strings.TrimSuffix(u.Path, "/")}
	return m.String(), nil
}

const wellKnown = "/.well-known/oauth-protected-resource"

// MetadataPaths are the paths to serve MetadataHandler at: the
// well-known path and its form with the resource's path inserted.
func (a *Authenticator) MetadataPaths() []string {
	u, _ := url.Parse(a.meta)
	if u.Path == wellKnown {
		return []string{wellKnown}
	}
	return []string{wellKnown, u.Path}
}

// MetadataHandler serves the Protected Resource Metadata document (RFC
// 9728), built from the configuration only.
func (a *Authenticator) MetadataHandler() http.Handler {
	return sdkauth.ProtectedResourceMetadataHandler(a.Metadata())
}

// Metadata is the Protected Resource Metadata document.
func (a *Authenticator) Metadata() *ProtectedResourceMetadata {
	return &ProtectedResourceMetadata{
		Resource:               a.cfg.Resource,
		AuthorizationServers:   a.cfg.AuthorizationServers,
		ScopesSupported:        a.scopes(),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "toolgate",
	}
}

// scopes are the scopes this resource knows: those every request needs,
// then those some tools need.
func (a *Authenticator) scopes() []string {
	out := slices.Clone(a.cfg.Scopes)
	for _, g := range slices.Sorted(maps.Keys(a.cfg.ToolScopes)) {
		if s := a.cfg.ToolScopes[g]; !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// ResourceMetadataURL is the URL the WWW-Authenticate challenge names.
func (a *Authenticator) ResourceMetadataURL() string { return a.meta }

// missingScopes returns the configured scopes id lacks.
func (a *Authenticator) missingScopes(id *Identity) []string {
	var out []string
	for _, s := range a.cfg.Scopes {
		if !slices.Contains(id.Credential.Scopes, s) {
			out = append(out, s)
		}
	}
	return out
}
