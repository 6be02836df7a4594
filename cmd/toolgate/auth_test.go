package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/audit"
)

const (
	testIssuer   = "https://id.example.com"
	testResource = "https://tools.example.com/mcp"
	testMetadata = "https://tools.example.com/.well-known/oauth-protected-resource/mcp"
	testAPIKey   = "tg_ci_0123456789abcdef0123456789abcdef"
)

// idpKey is a signing key of the test's identity provider.
type idpKey struct {
	kid string
	alg jose.SignatureAlgorithm
	key crypto.Signer
}

func newIDPKey(t *testing.T, kind, kid string) idpKey {
	t.Helper()
	var k crypto.Signer
	var alg jose.SignatureAlgorithm
	var err error
	switch kind {
	case "rsa":
		k, err = rsa.GenerateKey(rand.Reader, 2048)
		alg = jose.RS256
	case "ecdsa":
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		alg = jose.ES256
	default:
		_, k, err = ed25519.GenerateKey(rand.Reader)
		alg = jose.EdDSA
	}
	if err != nil {
		t.Fatal(err)
	}
	return idpKey{kid, alg, k}
}

// token signs claims (over the defaults: iss, aud, exp, nbf, iat, jti)
// with k; a nil value removes a default.
func (k idpKey) token(t *testing.T, sub string, kv ...any) string {
	t.Helper()
	now := time.Now()
	c := map[string]any{"iss": testIssuer, "aud": testResource, "sub": sub, "jti": "jti-" + sub,
		"exp": now.Add(time.Hour).Unix(), "nbf": now.Add(-time.Minute).Unix(), "iat": now.Add(-time.Minute).Unix()}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(c, kv[i].(string))
		} else {
			c[kv[i].(string)] = kv[i+1]
		}
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.key, KeyID: k.kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(sig).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// forged returns the token k would sign, with its header replaced by alg
// (and kid) and signed with HMAC keyed by the public key (alg HS*), or
// not signed at all (alg none).
func (k idpKey) forged(t *testing.T, alg string) string {
	parts := strings.Split(k.token(t, "mallory"), ".")
	h, _ := json.Marshal(map[string]any{"alg": alg, "typ": "JWT", "kid": k.kid})
	input := base64.RawURLEncoding.EncodeToString(h) + "." + parts[1]
	if alg == "none" {
		return input + "."
	}
	der, err := x509.MarshalPKIXPublicKey(k.key.Public())
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, der)
	m.Write([]byte(input))
	return input + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// idp serves the JWKS on loopback.
type idp struct {
	srv     *httptest.Server
	mu      sync.Mutex
	keys    []idpKey
	fetches atomic.Int32
}

func newIDP(t *testing.T, keys ...idpKey) *idp {
	p := &idp{keys: keys}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.fetches.Add(1)
		p.mu.Lock()
		var set jose.JSONWebKeySet
		for _, k := range p.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.key.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"})
		}
		p.mu.Unlock()
		json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *idp) add(k idpKey) {
	p.mu.Lock()
	p.keys = append(p.keys, k)
	p.mu.Unlock()
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// authPolicy is a policy whose auth block trusts p and the CI key:
// readers (the default role) reach level 0, admins everything.
func authPolicy(t *testing.T, p *idp, extra string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "toolgate.yaml")
	pol := fmt.Sprintf(`auth:
  resource: %s
  authorization_servers: [%s]
  jwt:
    issuer: %s
    jwks_url: %s/.well-known/jwks.json
    roles_claim: roles
  api_keys:
    - sha256: %s
      principal: ci-bot
      roles: [admin]
roles:
  reader: {max_level: 0}
  admin: {max_level: 3, admin: true}
principals:
  alice: {role: admin}
default_role: reader
allow: [execute_command]
%s`, testResource, testIssuer, testIssuer, p.srv.URL, sha256Hex(testAPIKey), extra)
	if err := os.WriteFile(file, []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`

// post sends one JSON-RPC message with the given headers.
func post(t *testing.T, u, body string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("POST", u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func TestServeAuthenticatesEveryRequest(t *testing.T) {
	rsaKey, ecKey, edKey := newIDPKey(t, "rsa", "rsa-1"), newIDPKey(t, "ecdsa", "ec-1"), newIDPKey(t, "ed25519", "ed-1")
	stranger := newIDPKey(t, "ecdsa", "ec-1") // the same kid, another key
	p := newIDP(t, rsaKey, ecKey, edKey)
	root, auditLog := serveWorkspace(t)
	u := startHTTP(t, "serve", "--root", root, "--audit", auditLog, "--policy", authPolicy(t, p, ""), "--http", "127.0.0.1:0")
	bearer := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	for _, tc := range []struct {
		name    string
		query   string
		headers []string
		status  int
	}{
		{"RS256", "", bearer(rsaKey.token(t, "alice")), 200},
		{"ES256", "", bearer(ecKey.token(t, "bob")), 200},
		{"EdDSA", "", bearer(edKey.token(t, "carol", "roles", []string{"admin"})), 200},
		{"aud list naming the resource", "", bearer(ecKey.token(t, "bob", "aud", []string{"https://other.example", testResource})), 200},
		{"API key", "", bearer(testAPIKey), 200},
		{"no credential", "", nil, 401},
		{"expired", "", bearer(rsaKey.token(t, "alice", "exp", time.Now().Add(-time.Hour).Unix())), 401},
		{"no exp", "", bearer(rsaKey.token(t, "alice", "exp", nil)), 401},
		{"not yet valid", "", bearer(ecKey.token(t, "alice", "nbf", time.Now().Add(time.Hour).Unix())), 401},
		{"wrong audience", "", bearer(edKey.token(t, "alice", "aud", "https://other.example.com/mcp")), 401},
		{"audience of the authorization server", "", bearer(edKey.token(t, "alice", "aud", testIssuer)), 401},
		{"wrong issuer", "", bearer(rsaKey.token(t, "alice", "iss", "https://evil.example.com")), 401},
		{"unknown kid", "", bearer(newIDPKey(t, "rsa", "nobody").token(t, "alice")), 401},
		{"another key with a known kid", "", bearer(stranger.token(t, "alice")), 401},
		{"alg none", "", bearer(rsaKey.forged(t, "none")), 401},
		{"HS256 signed with the RSA public key", "", bearer(rsaKey.forged(t, "HS256")), 401},
		{"HS256 signed with the EC public key", "", bearer(ecKey.forged(t, "HS256")), 401},
		{"wrong API key", "", bearer(testAPIKey + "x"), 401},
		{"the stored hash as a key", "", bearer(sha256Hex(testAPIKey)), 401},
		{"basic", "", []string{"Authorization", "Basic YWxpY2U6c2VjcmV0"}, 401},
		{"token in the query", "?access_token=" + rsaKey.token(t, "alice"), nil, 400},
		{"API key in the query", "?access_token=" + testAPIKey, bearer(testAPIKey), 400},
		{"malformed: two tokens", "", bearer(testAPIKey + " " + testAPIKey), 400},
		{"malformed: scheme alone", "", []string{"Authorization", "Bearer"}, 400},
		{"malformed: quoted", "", bearer(`"` + testAPIKey + `"`), 400},
		{"malformed: two headers", "", append(bearer(testAPIKey), bearer(testAPIKey)...), 400},
		{"huge header", "", bearer(strings.Repeat("A", 32<<10)), 400},
		{"header over the server's limit", "", bearer(strings.Repeat("A", 200<<10)), 431},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, u+tc.query, initializeBody, tc.headers...)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			www := resp.Header.Get("WWW-Authenticate")
			if tc.status == 401 || tc.status == 400 {
				if !strings.HasPrefix(www, "Bearer ") || !strings.Contains(www, `resource_metadata="`+testMetadata+`"`) {
					t.Fatalf("WWW-Authenticate %q", www)
				}
			}
		})
	}

	// the resource metadata, from the configuration whatever the Host
	base := strings.TrimSuffix(u, "/mcp")
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Host = "evil.example.com"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			BearerMethods        []string `json:"bearer_methods_supported"`
		}
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || doc.Resource != testResource || !slices.Equal(doc.AuthorizationServers, []string{testIssuer}) || !slices.Equal(doc.BearerMethods, []string{"header"}) {
			t.Fatalf("%s: %d %+v %v", path, resp.StatusCode, doc, err)
		}
	}

	// The provider rotates to a new key: the first tokens naming it are
	// refused until the JWKS may be fetched again (at most every few
	// seconds), then accepted, without a fetch per request.
	rotated := newIDPKey(t, "ed25519", "ed-2")
	tok := rotated.token(t, "bob")
	if post(t, u, initializeBody, bearer(tok)...).StatusCode != 401 {
		t.Fatal("a key the JWKS does not hold yet was accepted")
	}
	p.add(rotated)
	attempts, before := 0, p.fetches.Load()
	for deadline := time.Now().Add(30 * time.Second); ; attempts++ {
		if post(t, u, initializeBody, bearer(tok)...).StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rotated key was never accepted (%d attempts, %d fetches)", attempts, p.fetches.Load()-before)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if fetched := int(p.fetches.Load() - before); attempts > 3 && fetched >= attempts {
		t.Fatalf("%d fetches of the JWKS for %d refused tokens: an unknown kid must not fetch it every time", fetched, attempts)
	}
}

// bearerClient connects a go-sdk client over streamable HTTP with a token.
func bearerClient(t *testing.T, ctx context.Context, u, token string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: headerRT{http.DefaultTransport, "Bearer " + token}}
	c := mcp.NewClient(&mcp.Implementation{Name: "auth-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connecting with a token: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type headerRT struct {
	base http.RoundTripper
	auth string
}

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", h.auth)
	return h.base.RoundTrip(r)
}

// wholeBodies reads each request's body whole before proxy forwards it.
// Streamed, the body races net/http (golang/go#40747): the HTTP/1 server
// drains and closes a request's body when the handler writes its answer's
// headers, while the proxy's transport, having sent Content-Length bytes,
// may not yet have made its one more read (to check that nothing follows);
// that read fails on the closed body and the transport closes its
// connection to the server mid-answer, cutting the body the proxy is
// copying ("ReverseProxy read error during body copy: use of closed
// network connection"; the client's fetch says "terminated").
func wholeBodies(proxy http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	})
}

func toolNames(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
	}
	return names
}

func TestServeIdentityDecides(t *testing.T) {
	key := newIDPKey(t, "ecdsa", "k1")
	p := newIDP(t, key)
	root, auditLog := serveWorkspace(t)
	u := startHTTP(t, "serve", "--root", root, "--audit", auditLog, "--policy", authPolicy(t, p, ""), "--http", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	level2 := []string{"execute_command", "run_code", "http_request"}

	type caller struct {
		name, token string
		admin       bool
	}
	callers := []caller{
		{"bob", key.token(t, "bob"), false},                                         // unknown to principals: default_role reader
		{"dave", key.token(t, "dave", "roles", []string{"superuser"}), false},       // a claim role the policy lacks
		{"alice", key.token(t, "alice"), true},                                      // principals: admin
		{"carol", key.token(t, "carol", "roles", []string{"admin"}), true},          // roles claim
		{"ci-bot", testAPIKey, true},                                                // API key with a role
		{"erin", key.token(t, "erin", "roles", []string{"reader", "admin"}), false}, // the first role the policy defines
	}
	for _, c := range callers {
		t.Run(c.name, func(t *testing.T) {
			cs := bearerClient(t, ctx, u, c.token)
			names := toolNames(t, ctx, cs)
			if !slices.Contains(names, "read_file") {
				t.Fatalf("tools/list %v lacks read_file", names)
			}
			for _, n := range append(level2, "write_file", "delete_file") {
				if slices.Contains(names, n) != c.admin {
					t.Fatalf("tools/list %v: %s shown = %v, want %v", names, n, !c.admin, c.admin)
				}
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_command", Arguments: map[string]any{"command": "echo governed"}})
			if c.admin {
				if err != nil || res.IsError || !strings.Contains(fmt.Sprint(res.Content[0].(*mcp.TextContent).Text), "governed") {
					t.Fatalf("an admin's execute_command: %v %+v", err, res)
				}
			} else {
				// exactly as a tool that does not exist
				_, ghost := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_commanx", Arguments: map[string]any{"command": "echo governed"}})
				if err == nil || ghost == nil || strings.ReplaceAll(err.Error(), "execute_command", "T") != strings.ReplaceAll(ghost.Error(), "execute_commanx", "T") {
					t.Fatalf("a hidden tool answered %v; a missing one %v", err, ghost)
				}
				plan := func(tool string) *mcp.CallToolResult {
					r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_plan", Arguments: map[string]any{
						"steps": []any{map[string]any{"id": "s", "tool": tool, "args": map[string]any{"command": "echo governed"}}}}})
					if err != nil {
						t.Fatal(err)
					}
					return r
				}
				hidden, missing := plan("execute_command"), plan("execute_commanx")
				ht, mt := hidden.Content[0].(*mcp.TextContent).Text, missing.Content[0].(*mcp.TextContent).Text
				if !hidden.IsError || strings.ReplaceAll(ht, "execute_command", "T") != strings.ReplaceAll(mt, "execute_commanx", "T") {
					t.Fatalf("run_plan of a hidden tool: %s\nof a missing one: %s", ht, mt)
				}
			}
		})
	}

	// the audit log names each caller and its credential
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]audit.Record{}
	dec := json.NewDecoder(f)
	for {
		var r audit.Record
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if r.Tool == "execute_command" {
			seen[r.Principal] = r
		}
	}
	for _, c := range callers {
		r, ok := seen[c.name]
		if !ok {
			t.Fatalf("no audit record of %s's call; records: %v", c.name, seen)
		}
		want := audit.Auth{Kind: audit.AuthJWT, Issuer: testIssuer, JTI: "jti-" + c.name}
		if c.name == "ci-bot" {
			want = audit.Auth{Kind: audit.AuthAPIKey, Key: sha256Hex(testAPIKey)[:8]}
		}
		if r.Auth != want {
			t.Errorf("%s: audit auth %+v, want %+v", c.name, r.Auth, want)
		}
		if wantOutcome := map[bool]string{true: audit.OutcomeOK, false: audit.OutcomeInvalid}[c.admin]; r.Outcome != wantOutcome {
			t.Errorf("%s: outcome %s, want %s", c.name, r.Outcome, wantOutcome)
		}
	}
}

func TestServeSessionBoundToPrincipal(t *testing.T) {
	key := newIDPKey(t, "rsa", "k1")
	p := newIDP(t, key)
	root, auditLog := serveWorkspace(t)
	u := startHTTP(t, "serve", "--root", root, "--audit", auditLog, "--policy", authPolicy(t, p, ""), "--http", "127.0.0.1:0")
	alice, bob := key.token(t, "alice"), key.token(t, "bob")
	resp := post(t, u, initializeBody, "Authorization", "Bearer "+alice)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, sid)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
	proto := []string{"Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25"}
	for _, tc := range []struct {
		name    string
		headers []string
		status  int
	}{
		{"another principal's token", append([]string{"Authorization", "Bearer " + bob}, proto...), 403},
		{"an API key", append([]string{"Authorization", "Bearer " + testAPIKey}, proto...), 403},
		{"no token", proto, 401},
		{"the same principal, another token", append([]string{"Authorization", "Bearer " + key.token(t, "alice", "jti", "second")}, proto...), 200},
	} {
		if got := post(t, u, list, tc.headers...).StatusCode; got != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.status)
		}
	}
}

func TestServeRemoteAddressWithAuth(t *testing.T) {
	p := newIDP(t, newIDPKey(t, "rsa", "k"))
	root, auditLog := serveWorkspace(t)
	u := startHTTP(t, "serve", "--root", root, "--audit", auditLog, "--policy", authPolicy(t, p, ""), "--http", "0.0.0.0:0")
	port := u[strings.LastIndex(u, ":")+1 : len(u)-len("/mcp")]
	if resp := post(t, "http://127.0.0.1:"+port+"/mcp", initializeBody); resp.StatusCode != 401 {
		t.Fatalf("a request without a token on a remote address: %d", resp.StatusCode)
	}
}

// TestProxyUpstreamGetsItsOwnToken: the gateway authenticates its caller
// with the caller's JWT and calls the upstream with its own
// client-credentials token, never the caller's.
func TestProxyUpstreamGetsItsOwnToken(t *testing.T) {
	var issued atomic.Int32
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		id, secret, _ := r.BasicAuth()
		if r.Form.Get("grant_type") != "client_credentials" || id != "toolgate-gw" || secret != "gw-secret" || r.Form.Get("scope") != "tools" {
			http.Error(w, `{"error":"invalid_client"}`, 401)
			return
		}
		n := issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"gateway-token-%d","token_type":"Bearer","expires_in":3600}`, n)
	}))
	t.Cleanup(tokens.Close)

	up := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	mcp.AddTool(up, &mcp.Tool{Name: "whoami", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "upstream says hi"}}}, struct{}{}, nil
		})
	var mu sync.Mutex
	var upHeaders []http.Header
	upH := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		upHeaders = append(upHeaders, r.Header.Clone())
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer gateway-token-1" {
			http.Error(w, "not the gateway's token", 401)
			return
		}
		upH.ServeHTTP(w, r)
	}))
	t.Cleanup(upstream.Close) // after the gateway (cleanups run last first), whose streams it would wait for

	dir := t.TempDir()
	cfg := filepath.Join(dir, "gateway.yaml")
	os.WriteFile(filepath.Join(dir, "gw.secret"), []byte("gw-secret\n"), 0o600)
	os.WriteFile(cfg, []byte(fmt.Sprintf(`servers:
  - name: up
    url: %s/mcp
    oauth:
      token_url: %s/token
      client_id: toolgate-gw
      client_secret_file: gw.secret
      scopes: [tools]
`, upstream.URL, tokens.URL)), 0o644)
	key := newIDPKey(t, "ed25519", "k")
	p := newIDP(t, key)
	u := startHTTP(t, "proxy", "--config", cfg, "--policy", authPolicy(t, p, ""), "--audit", filepath.Join(dir, "audit.jsonl"), "--http", "127.0.0.1:0")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	callerToken := key.token(t, "bob")
	cs := bearerClient(t, ctx, u, callerToken)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__whoami", Arguments: map[string]any{}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "upstream says hi" {
		t.Fatalf("up__whoami: %v %+v", err, res)
	}
	if resp := post(t, u, initializeBody); resp.StatusCode != 401 {
		t.Fatalf("the gateway without a token: %d", resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(upHeaders) == 0 || issued.Load() != 1 {
		t.Fatalf("%d upstream requests, %d tokens issued", len(upHeaders), issued.Load())
	}
	for _, h := range upHeaders {
		if h.Get("Authorization") != "Bearer gateway-token-1" {
			t.Fatalf("the upstream got Authorization %q", h.Get("Authorization"))
		}
		for k, vs := range h {
			for _, v := range vs {
				if strings.Contains(v, callerToken) || strings.Contains(v, strings.Split(callerToken, ".")[1]) {
					t.Fatalf("the caller's token reached the upstream in %s", k)
				}
			}
		}
	}
}

// TestServeConformanceAuthenticated runs the conformance scenarios of
// TestServeConformance against an authenticated `serve --http`. The suite
// has no option for a token, so a loopback reverse proxy in front adds the
// configured API key to each of its requests (keeping Host and Origin, which
// the DNS-rebinding scenario changes).
func TestServeConformanceAuthenticated(t *testing.T) {
	node, modules := npmTools(t)
	p := newIDP(t, newIDPKey(t, "rsa", "k"))
	root, auditLog := serveWorkspace(t)
	u := startHTTP(t, "serve", "--root", root, "--audit", auditLog, "--policy", authPolicy(t, p, ""), "--http", "127.0.0.1:0")
	target, _ := url.Parse(u)
	front := httptest.NewServer(wholeBodies(&httputil.ReverseProxy{
		Director: func(r *http.Request) {
			r.URL.Scheme, r.URL.Host = target.Scheme, target.Host
			r.Header.Set("Authorization", "Bearer "+testAPIKey)
		},
		FlushInterval: -1,
	}))
	defer front.Close()
	if resp := post(t, u, initializeBody); resp.StatusCode != 401 {
		t.Fatalf("the server without the token: %d", resp.StatusCode)
	}
	passedRE := regexp.MustCompile(`Passed: (\d+)/(\d+), 0 failed`)
	for _, sc := range []string{"server-initialize", "ping", "tools-list", "logging-set-level", "dns-rebinding-protection",
		"server-sse-multiple-streams", "resources-list", "prompts-list"} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, node, filepath.Join(modules, ".bin", "conformance"), "server", "--url", front.URL+"/mcp", "--scenario", sc)
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		cancel()
		m := passedRE.FindSubmatch(out)
		if err != nil || m == nil || !bytes.Equal(m[1], m[2]) {
			t.Errorf("conformance scenario %s through auth: %v\n%s", sc, err, out)
			continue
		}
		t.Logf("%s: %s passed, 0 failed", sc, m[1])
	}
}
