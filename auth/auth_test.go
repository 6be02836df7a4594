package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

const (
	issuer   = "https://id.example.com"
	resource = "https://tools.example.com/mcp"
)

// signer is a key of the test's identity provider.
type signer struct {
	kid string
	alg jose.SignatureAlgorithm
	key crypto.Signer
}

func newSigner(t testing.TB, kind, kid string) signer {
	t.Helper()
	switch kind {
	case "rsa":
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		return signer{kid, jose.RS256, k}
	case "ecdsa":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return signer{kid, jose.ES256, k}
	case "ed25519":
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return signer{kid, jose.EdDSA, k}
	}
	t.Fatalf("unknown key kind %s", kind)
	return signer{}
}

func (s signer) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: s.key.Public(), KeyID: s.kid, Algorithm: string(s.alg), Use: "sig"}
}

// sign returns a compact JWT of claims signed by s with header alg (s's
// own when empty).
func (s signer) sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: s.alg, Key: jose.JSONWebKey{Key: s.key, KeyID: s.kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func goodClaims(now time.Time) map[string]any {
	return map[string]any{
		"iss": issuer, "aud": resource, "sub": "alice", "jti": "j-1",
		"exp": now.Add(time.Hour).Unix(), "nbf": now.Add(-time.Minute).Unix(), "iat": now.Add(-time.Minute).Unix(),
		"scope": "mcp:tools files:read", "roles": []any{"admin", "reader"},
	}
}

func with(c map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range c {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

// idp serves a JWKS on loopback and counts its fetches.
type idp struct {
	srv     *httptest.Server
	mu      sync.Mutex
	keys    []jose.JSONWebKey
	fetches atomic.Int32
}

func newIDP(t testing.TB, keys ...signer) *idp {
	p := &idp{}
	p.set(keys...)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.fetches.Add(1)
		p.mu.Lock()
		defer p.mu.Unlock()
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: p.keys})
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *idp) set(keys ...signer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = nil
	for _, k := range keys {
		p.keys = append(p.keys, k.jwk())
	}
}

// clock is a test clock moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newAuth(t testing.TB, cfg policy.Auth, clk *clock) *Authenticator {
	t.Helper()
	a, err := New(cfg, Options{Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func jwtConfig(url string) policy.Auth {
	return policy.Auth{Resource: resource, JWT: &policy.AuthJWT{Issuer: issuer, JWKSURL: url, RolesClaim: "roles"}}
}

func TestVerifyJWT(t *testing.T) {
	for _, kind := range []string{"rsa", "ecdsa", "ed25519"} {
		t.Run(kind, func(t *testing.T) {
			key := newSigner(t, kind, "k1")
			other := newSigner(t, kind, "k1") // same kid, another key
			p := newIDP(t, key)
			clk := &clock{t: time.Now()}
			a := newAuth(t, jwtConfig(p.srv.URL+"/jwks.json"), clk)
			now := clk.now()
			good := goodClaims(now)
			for _, tc := range []struct {
				name  string
				token string
				want  string // "" accepted, else a part of the error
			}{
				{"valid", key.sign(t, good), ""},
				{"aud list naming the resource", key.sign(t, with(good, "aud", []any{"https://other.example", resource})), ""},
				{"expired", key.sign(t, with(good, "exp", now.Add(-time.Hour).Unix())), "expired"},
				{"expired within the skew", key.sign(t, with(good, "exp", now.Add(-30*time.Second).Unix())), ""},
				{"not yet valid", key.sign(t, with(good, "nbf", now.Add(time.Hour).Unix())), "not valid yet"},
				{"issued in the future", key.sign(t, with(good, "iat", now.Add(time.Hour).Unix())), "future"},
				{"no exp", key.sign(t, with(good, "exp", nil)), "no exp"},
				{"wrong audience", key.sign(t, with(good, "aud", "https://other.example/mcp")), "does not name this resource"},
				{"audience with a trailing slash", key.sign(t, with(good, "aud", resource+"/")), "does not name this resource"},
				{"no audience", key.sign(t, with(good, "aud", nil)), "does not name this resource"},
				{"wrong issuer", key.sign(t, with(good, "iss", "https://evil.example.com")), "is not the issuer"},
				{"issuer with a trailing slash", key.sign(t, with(good, "iss", issuer+"/")), "is not the issuer"},
				{"no sub", key.sign(t, with(good, "sub", nil)), "no sub claim"},
				{"sub not a string", key.sign(t, with(good, "sub", 42)), "do not have their types"},
				{"exp not a number", key.sign(t, with(good, "exp", "tomorrow")), "do not have their types"},
				{"another key with the same kid", other.sign(t, good), "signature does not verify"},
				{"tampered payload", tamper(key.sign(t, good)), "signature does not verify"},
				{"alg none", unsigned(good, "none", "k1"), "not a JWT signed"},
				{"alg None", unsigned(good, "None", "k1"), "not a JWT signed"},
				{"HS256 with the public key", hmacWithPublicKey(t, key, jose.HS256, good), "not a JWT signed"},
				{"HS512 with the public key", hmacWithPublicKey(t, key, jose.HS512, good), "not a JWT signed"},
				{"garbage", "not.a.jwt", "not a JWT"},
				{"empty", "", "not a JWT"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					id, err := a.Verify(context.Background(), tc.token)
					if tc.want == "" {
						if err != nil {
							t.Fatalf("refused: %v", err)
						}
						if id.Principal != "alice" || id.Credential.Kind != tool.CredentialJWT || id.Credential.Issuer != issuer || id.Credential.JTI != "j-1" {
							t.Fatalf("identity = %+v", id)
						}
						return
					}
					if err == nil || !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), tc.want) {
						t.Fatalf("err = %v, want %q", err, tc.want)
					}
				})
			}
		})
	}
}

// TestJWKSOnLocalhost: a local identity provider may be named localhost
// in jwks_url (loopback by RFC 6761, never asked of a resolver).
func TestJWKSOnLocalhost(t *testing.T) {
	key := newSigner(t, "ecdsa", "k1")
	p := newIDP(t, key)
	u := strings.Replace(p.srv.URL, "127.0.0.1", "localhost", 1) + "/jwks.json"
	clk := &clock{t: time.Now()}
	a := newAuth(t, jwtConfig(u), clk)
	if _, err := a.Verify(context.Background(), key.sign(t, goodClaims(clk.now()))); err != nil {
		t.Fatalf("a token checked against %s: %v", u, err)
	}
}

func TestAlgMustFitTheKey(t *testing.T) {
	rsaKey, ecKey := newSigner(t, "rsa", "rsa"), newSigner(t, "ecdsa", "ec")
	p := newIDP(t, rsaKey, ecKey)
	clk := &clock{t: time.Now()}
	a := newAuth(t, jwtConfig(p.srv.URL), clk)
	// an RSA signature naming the EC key's kid
	liar := signer{kid: "ec", alg: jose.RS256, key: rsaKey.key}
	if _, err := a.Verify(context.Background(), liar.sign(t, goodClaims(clk.now()))); err == nil {
		t.Fatal("an RS256 token naming an EC key was accepted")
	}
	// a key whose JWK says another alg
	p.mu.Lock()
	p.keys[0].Algorithm = string(jose.PS256)
	p.mu.Unlock()
	clk.add(time.Hour) // stale: fetched again
	if _, err := a.Verify(context.Background(), rsaKey.sign(t, goodClaims(clk.now()))); err == nil {
		t.Fatal("an RS256 token verified by a key published for PS256")
	}
	// no kid: every key that fits the alg is tried
	noKid := signer{alg: jose.ES256, key: ecKey.key}
	if _, err := a.Verify(context.Background(), noKid.sign(t, goodClaims(clk.now()))); err != nil {
		t.Fatalf("a token without kid: %v", err)
	}
}

func TestJWKSRotation(t *testing.T) {
	old, rotated := newSigner(t, "ecdsa", "2026-01"), newSigner(t, "ed25519", "2026-02")
	p := newIDP(t, old)
	clk := &clock{t: time.Now()}
	a := newAuth(t, jwtConfig(p.srv.URL), clk)
	ctx := context.Background()
	if _, err := a.Verify(ctx, old.sign(t, goodClaims(clk.now()))); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Verify(ctx, old.sign(t, goodClaims(clk.now()))); err != nil || p.fetches.Load() != 1 {
		t.Fatalf("the set is cached: err %v, %d fetches", err, p.fetches.Load())
	}
	// unknown kid before the provider rotates: fetched once, refused
	clk.add(10 * time.Second)
	if _, err := a.Verify(ctx, rotated.sign(t, goodClaims(clk.now()))); err == nil || !strings.Contains(err.Error(), "no EdDSA key") {
		t.Fatalf("err = %v", err)
	}
	if n := p.fetches.Load(); n != 2 {
		t.Fatalf("an unknown kid fetches the set again: %d fetches", n)
	}
	// rotated now, but within MinRefresh of the last fetch: not fetched
	p.set(rotated)
	for range 5 {
		if _, err := a.Verify(ctx, rotated.sign(t, goodClaims(clk.now()))); err == nil {
			t.Fatal("accepted before the set could be fetched again")
		}
	}
	if n := p.fetches.Load(); n != 2 {
		t.Fatalf("unknown kids fetch at most once every MinRefresh: %d fetches", n)
	}
	clk.add(6 * time.Second)
	if _, err := a.Verify(ctx, rotated.sign(t, goodClaims(clk.now()))); err != nil {
		t.Fatalf("the rotated key: %v", err)
	}
	if _, err := a.Verify(ctx, old.sign(t, goodClaims(clk.now()))); err == nil {
		t.Fatal("the retired key is still accepted")
	}
}

func TestJWKSUnreachableFailsClosed(t *testing.T) {
	key := newSigner(t, "rsa", "k")
	clk := &clock{t: time.Now()}
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	a := newAuth(t, jwtConfig(srv.URL), clk)
	if _, err := a.Verify(context.Background(), key.sign(t, goodClaims(clk.now()))); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("err = %v", err)
	}
}

func TestJWKSFetchGoesOnlyWhereAllowed(t *testing.T) {
	key := newSigner(t, "rsa", "k")
	for _, tc := range []struct {
		url          string
		allowPrivate bool
		want         string
	}{
		{"https://10.1.2.3/jwks", false, "private"},
		{"https://192.168.1.1/jwks", false, "private"},
		{"https://172.16.0.9:8443/jwks", false, "private"},
		{"https://100.64.1.1/jwks", false, "carrier-grade"},
		{"https://[fd00::1]/jwks", false, "private"},
		{"https://169.254.169.254/latest", false, "metadata"},
		{"https://169.254.169.254/latest", true, "metadata"},
		{"https://[fd00:ec2::254]/jwks", true, "metadata"},
		{"https://metadata.google.internal/jwks", true, "metadata"},
		{"http://93.184.216.34/jwks", false, "only loopback"},
		{"http://8.8.8.8:8080/jwks", true, "only loopback"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			cfg := jwtConfig(tc.url)
			cfg.JWT.AllowPrivateNetwork = tc.allowPrivate
			clk := &clock{t: time.Now()}
			a := newAuth(t, cfg, clk)
			_, err := a.Verify(context.Background(), key.sign(t, goodClaims(clk.now())))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestJWKSFile(t *testing.T) {
	key, hmacKey := newSigner(t, "ed25519", "f1"), jose.JSONWebKey{Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "f1", Algorithm: "HS256"}
	dir := t.TempDir()
	file := filepath.Join(dir, "jwks.json")
	data, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{hmacKey, {Key: key.key, KeyID: "f1"}}}) // private: only its public half is kept
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Now()}
	a := newAuth(t, policy.Auth{Resource: resource, JWT: &policy.AuthJWT{Issuer: issuer, JWKSFile: file}}, clk)
	if _, err := a.Verify(context.Background(), key.sign(t, goodClaims(clk.now()))); err != nil {
		t.Fatal(err)
	}
	hs, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: hmacKey}, nil)
	tok, _ := jwt.Signed(hs).Claims(goodClaims(clk.now())).Serialize()
	if _, err := a.Verify(context.Background(), tok); err == nil {
		t.Fatal("an HS256 token verified with a symmetric key of the set")
	}
	only, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{hmacKey}})
	os.WriteFile(file, only, 0o600)
	if _, err := New(policy.Auth{Resource: resource, JWT: &policy.AuthJWT{Issuer: issuer, JWKSFile: file}}, Options{}); err == nil {
		t.Fatal("a set of only HMAC keys was accepted")
	}
}

func TestClaims(t *testing.T) {
	key := newSigner(t, "ecdsa", "k")
	p := newIDP(t, key)
	clk := &clock{t: time.Now()}
	good := goodClaims(clk.now())
	for _, tc := range []struct {
		name          string
		jwt           policy.AuthJWT
		claims        map[string]any
		principal     string
		roles, scopes []string
	}{
		{"defaults", policy.AuthJWT{}, good, "alice", nil, []string{"mcp:tools", "files:read"}},
		{"roles list", policy.AuthJWT{RolesClaim: "roles"}, good, "alice", []string{"admin", "reader"}, []string{"mcp:tools", "files:read"}},
		{"roles string", policy.AuthJWT{RolesClaim: "role"}, with(good, "role", "writer"), "alice", []string{"writer"}, []string{"mcp:tools", "files:read"}},
		{"keycloak realm roles", policy.AuthJWT{RolesClaim: "realm_access.roles"}, with(good, "realm_access", map[string]any{"roles": []any{"writer", 7}}), "alice", []string{"writer"}, []string{"mcp:tools", "files:read"}},
		{"principal claim", policy.AuthJWT{PrincipalClaim: "preferred_username"}, with(good, "preferred_username", "al"), "al", nil, []string{"mcp:tools", "files:read"}},
		{"scp list", policy.AuthJWT{}, with(good, "scope", nil, "scp", []any{"a", "b"}), "alice", nil, []string{"a", "b"}},
		{"scp string (Entra)", policy.AuthJWT{}, with(good, "scope", nil, "scp", "a b"), "alice", nil, []string{"a", "b"}},
		{"scopes claim", policy.AuthJWT{ScopesClaim: "permissions"}, with(good, "permissions", []any{"x"}), "alice", nil, []string{"x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := tc.jwt
			j.Issuer, j.JWKSURL = issuer, p.srv.URL
			a := newAuth(t, policy.Auth{Resource: resource, JWT: &j}, clk)
			id, err := a.Verify(context.Background(), key.sign(t, tc.claims))
			if err != nil {
				t.Fatal(err)
			}
			if id.Principal != tc.principal || strings.Join(id.Credential.Roles, ",") != strings.Join(tc.roles, ",") || strings.Join(id.Credential.Scopes, ",") != strings.Join(tc.scopes, ",") {
				t.Fatalf("identity = %+v", id)
			}
		})
	}
}

func TestAPIKeys(t *testing.T) {
	sum := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	cfg := policy.Auth{Resource: resource, APIKeys: []policy.APIKey{
		{SHA256: sum("key-one-0123456789"), Principal: "ci-bot", Roles: []string{"writer"}},
		{SHA256: strings.ToUpper(sum("key-two-0123456789")), Principal: "backup"},
	}}
	a := newAuth(t, cfg, &clock{t: time.Now()})
	for _, tc := range []struct{ key, principal string }{
		{"key-one-0123456789", "ci-bot"},
		{"key-two-0123456789", "backup"},
		{"key-one-012345678", ""},
		{"key-one-01234567890", ""},
		{"KEY-ONE-0123456789", ""},
		{sum("key-one-0123456789"), ""}, // the stored hash is not the key
		{"", ""},
	} {
		id, err := a.Verify(context.Background(), tc.key)
		if tc.principal == "" {
			if err == nil {
				t.Errorf("%q accepted as %+v", tc.key, id)
			}
			continue
		}
		if err != nil || id.Principal != tc.principal || id.Credential.Kind != tool.CredentialAPIKey || id.Credential.Key != strings.ToLower(sum(tc.key))[:8] {
			t.Errorf("%q: %+v %v", tc.key, id, err)
		}
	}
	if id, _ := a.Verify(context.Background(), "key-one-0123456789"); strings.Join(id.Credential.Roles, ",") != "writer" {
		t.Errorf("roles = %v", id.Credential.Roles)
	}
}

func TestMetadata(t *testing.T) {
	for _, tc := range []struct{ resource, url string }{
		{"https://tools.example.com/mcp", "https://tools.example.com/.well-known/oauth-protected-resource/mcp"},
		{"https://tools.example.com/", "https://tools.example.com/.well-known/oauth-protected-resource"},
		{"https://tools.example.com", "https://tools.example.com/.well-known/oauth-protected-resource"},
		{"https://tools.example.com:8443/a/mcp/", "https://tools.example.com:8443/.well-known/oauth-protected-resource/a/mcp"},
		{"http://127.0.0.1:9/mcp", "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp"},
	} {
		got, err := MetadataURL(tc.resource)
		if err != nil || got != tc.url {
			t.Errorf("MetadataURL(%s) = %s, %v; want %s", tc.resource, got, err, tc.url)
		}
	}
	a := newAuth(t, policy.Auth{Resource: resource, AuthorizationServers: []string{issuer}, Scopes: []string{"mcp:tools"},
		ToolScopes: map[string]string{"exec*": "tools:exec", "*": "mcp:tools"},
		APIKeys:    []policy.APIKey{{SHA256: strings.Repeat("a", 64), Principal: "x"}}}, &clock{t: time.Now()})
	paths := a.MetadataPaths()
	if strings.Join(paths, " ") != "/.well-known/oauth-protected-resource /.well-known/oauth-protected-resource/mcp" {
		t.Fatalf("paths = %v", paths)
	}
	for _, path := range paths {
		req := httptest.NewRequest("GET", "http://evil.example"+path, nil)
		req.Host = "evil.example"
		rec := httptest.NewRecorder()
		a.MetadataHandler().ServeHTTP(rec, req)
		var doc map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || rec.Code != 200 {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		if doc["resource"] != resource || doc["authorization_servers"].([]any)[0] != issuer || fmt.Sprint(doc["scopes_supported"]) != "[mcp:tools tools:exec]" ||
			strings.Contains(rec.Body.String(), "evil") {
			t.Fatalf("%s: %s", path, rec.Body)
		}
	}
}

func TestMiddleware(t *testing.T) {
	key := newSigner(t, "rsa", "k")
	p := newIDP(t, key)
	clk := &clock{t: time.Now()}
	cfg := jwtConfig(p.srv.URL)
	cfg.Scopes = []string{"mcp:tools"}
	apiKey := "s3cret-key-for-the-ci-bot"
	s := sha256.Sum256([]byte(apiKey))
	cfg.APIKeys = []policy.APIKey{{SHA256: hex.EncodeToString(s[:]), Principal: "ci-bot"}}
	cfg.Scopes = nil
	a := newAuth(t, cfg, clk)
	scoped := cfg
	scoped.Scopes = []string{"mcp:tools", "admin:all"}
	as := newAuth(t, scoped, clk)

	var seen atomic.Value
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r)
		w.Write([]byte("ok"))
	})
	good := key.sign(t, goodClaims(clk.now()))
	meta := `resource_metadata="https://tools.example.com/.well-known/oauth-protected-resource/mcp"`
	for _, tc := range []struct {
		name    string
		a       *Authenticator
		url     string
		headers []string
		status  int
		www     []string // parts of WWW-Authenticate
	}{
		{"jwt", a, "/mcp", []string{"Bearer " + good}, 200, nil},
		{"lower-case scheme", a, "/mcp", []string{"bearer " + good}, 200, nil},
		{"api key", a, "/mcp", []string{"Bearer " + apiKey}, 200, nil},
		{"no header", a, "/mcp", nil, 401, []string{meta}},
		{"no header, scopes configured", as, "/mcp", nil, 401, []string{meta, `scope="mcp:tools admin:all"`}},
		{"basic", a, "/mcp", []string{"Basic YWxpY2U6cHc="}, 401, []string{meta}},
		{"bad token", a, "/mcp", []string{"Bearer abc.def.ghi"}, 401, []string{meta, `error="invalid_token"`}},
		{"expired", a, "/mcp", []string{"Bearer " + key.sign(t, with(goodClaims(clk.now()), "exp", clk.now().Add(-time.Hour).Unix()))}, 401, []string{`error="invalid_token"`}},
		{"wrong audience", a, "/mcp", []string{"Bearer " + key.sign(t, with(goodClaims(clk.now()), "aud", "https://other/mcp"))}, 401, []string{`error="invalid_token"`}},
		{"insufficient scope", as, "/mcp", []string{"Bearer " + good}, 403, []string{meta, `error="insufficient_scope"`, `scope="mcp:tools admin:all"`}},
		{"api key has no scopes", as, "/mcp", []string{"Bearer " + apiKey}, 403, []string{`error="insufficient_scope"`}},
		{"token in the query", a, "/mcp?access_token=" + good, nil, 400, []string{`error="invalid_request"`}},
		{"token in the query with a header too", a, "/mcp?Access_Token=x", []string{"Bearer " + good}, 400, []string{`error="invalid_request"`}},
		{"bearer alone", a, "/mcp", []string{"Bearer"}, 400, []string{`error="invalid_request"`}},
		{"bearer and a space", a, "/mcp", []string{"Bearer "}, 400, []string{`error="invalid_request"`}},
		{"two spaces", a, "/mcp", []string{"Bearer  " + good}, 400, []string{`error="invalid_request"`}},
		{"two tokens", a, "/mcp", []string{"Bearer " + good + " " + good}, 400, []string{`error="invalid_request"`}},
		{"control character", a, "/mcp", []string{"Bearer " + good + "\x01"}, 400, nil},
		{"non-ASCII", a, "/mcp", []string{"Bearer tok\u00e9n"}, 400, nil},
		{"padding inside", a, "/mcp", []string{"Bearer ab=cd"}, 400, nil},
		{"quote", a, "/mcp", []string{`Bearer "` + good + `"`}, 400, nil},
		{"two headers", a, "/mcp", []string{"Bearer " + good, "Bearer " + good}, 400, nil},
		{"huge header", a, "/mcp", []string{"Bearer " + strings.Repeat("A", 64<<10)}, 400, []string{`error="invalid_request"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen.Store((*http.Request)(nil))
			req := httptest.NewRequest("POST", "http://tools.example.com"+tc.url, nil)
			for _, h := range tc.headers {
				req.Header.Add("Authorization", h)
			}
			rec := httptest.NewRecorder()
			tc.a.Middleware(next).ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			www := rec.Header().Get("WWW-Authenticate")
			if tc.status != 200 {
				if !strings.HasPrefix(www, "Bearer ") || !strings.Contains(www, meta) || seen.Load().(*http.Request) != nil {
					t.Fatalf("refusal: WWW-Authenticate %q", www)
				}
			}
			for _, part := range tc.www {
				if !strings.Contains(www, part) {
					t.Fatalf("WWW-Authenticate %q lacks %s", www, part)
				}
			}
			if tc.status == 200 {
				r := seen.Load().(*http.Request)
				ti := tokenInfo(r)
				cred, _ := ti.Extra[tool.CredentialKey].(*tool.Credential)
				if cred == nil || (ti.UserID != "alice" || cred.Kind != tool.CredentialJWT) && (ti.UserID != "ci-bot" || cred.Kind != tool.CredentialAPIKey) {
					t.Fatalf("handler saw %q %+v", ti.UserID, cred)
				}
			}
		})
	}
}

// tampered changes one claim byte of a compact JWS.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	payload = []byte(strings.Replace(string(payload), `"alice"`, `"admin"`, 1))
	parts[1] = base64.RawURLEncoding.EncodeToString(payload)
	return strings.Join(parts, ".")
}

// unsigned builds a token with alg none (or any alg) and no signature.
func unsigned(claims map[string]any, alg, kid string) string {
	h, _ := json.Marshal(map[string]any{"alg": alg, "typ": "JWT", "kid": kid})
	c, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c) + "."
}

// hmacWithPublicKey signs with HMAC keyed by the public key's DER bytes:
// the classic key-confusion attack.
func hmacWithPublicKey(t *testing.T, s signer, alg jose.SignatureAlgorithm, claims map[string]any) string {
	der, err := x509.MarshalPKIXPublicKey(s.key.Public())
	if err != nil {
		t.Fatal(err)
	}
	h, _ := json.Marshal(map[string]any{"alg": string(alg), "typ": "JWT", "kid": s.kid})
	c, _ := json.Marshal(claims)
	input := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	hf := sha256.New
	if alg == jose.HS512 {
		hf = sha512.New
	}
	m := hmac.New(hf, der)
	m.Write([]byte(input))
	mac := m.Sum(nil)
	return input + "." + base64.RawURLEncoding.EncodeToString(mac)
}

func tokenInfo(r *http.Request) *sdkauth.TokenInfo { return sdkauth.TokenInfoFromContext(r.Context()) }

// A fetch for an unknown kid that hangs does not hold up tokens of known
// keys (were it to, this test would hang).
func TestKnownKeysDoNotWaitForAFetch(t *testing.T) {
	key, other := newSigner(t, "rsa", "known"), newSigner(t, "rsa", "other")
	var n atomic.Int32
	asked, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > 1 {
			close(asked)
			<-release
		}
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{key.jwk()}})
	}))
	defer srv.Close()
	clk := &clock{t: time.Now()}
	a := newAuth(t, jwtConfig(srv.URL), clk)
	ctx := context.Background()
	if _, err := a.Verify(ctx, key.sign(t, goodClaims(clk.now()))); err != nil {
		t.Fatal(err)
	}
	clk.add(time.Minute)
	done := make(chan error)
	go func() {
		_, err := a.Verify(ctx, other.sign(t, goodClaims(clk.now())))
		done <- err
	}()
	<-asked
	clk.add(20 * time.Minute) // stale too: still no wait
	if _, err := a.Verify(ctx, key.sign(t, goodClaims(clk.now()))); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err == nil {
		t.Fatal("a key the set does not hold was accepted")
	}
}
