package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/toolgate/toolgate/tool"
)

// testAS is an authorization server and a protected resource of the
// test's own: dynamic registration, the authorization code flow with PKCE
// (it checks the verifier and the resource), refresh tokens that rotate
// (a used refresh token is refused afterwards), revocation, and a
// resource that takes only live access tokens.
type testAS struct {
	t         *testing.T
	srv, res  *httptest.Server
	mu        sync.Mutex
	n         int
	expiresIn int
	live      map[string][]string // access token → scopes
	refresh   map[string][]string // refresh token → scopes
	challenge string              // the last code_challenge
	revoked   []string
	seen      []string // access tokens the resource saw
	need      []string // scopes the resource wants for /admin
}

func newTestAS(t *testing.T) *testAS {
	a := &testAS{t: t, expiresIn: 3600, live: map[string][]string{}, refresh: map[string][]string{}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serveAS))
	a.res = httptest.NewServer(http.HandlerFunc(a.serveResource))
	t.Cleanup(a.srv.Close)
	t.Cleanup(a.res.Close)
	return a
}

func (a *testAS) serveAS(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": a.srv.URL, "authorization_endpoint": a.srv.URL + "/authorize", "token_endpoint": a.srv.URL + "/token",
			"registration_endpoint": a.srv.URL + "/register", "revocation_endpoint": a.srv.URL + "/revoke",
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"client_secret_post"},
		})
	case "/register":
		w.WriteHeader(201)
		json.NewEncoder(w).Encode(map[string]any{"client_id": "dyn-client", "client_secret": "dyn-secret", "token_endpoint_auth_method": "client_secret_post"})
	case "/authorize":
		q := r.URL.Query()
		if q.Get("resource") != a.res.URL+"/mcp" || q.Get("code_challenge_method") != "S256" {
			http.Error(w, "bad authorization request", 400)
			return
		}
		a.challenge = q.Get("code_challenge")
		to, _ := url.Parse(q.Get("redirect_uri"))
		v := url.Values{"code": {"code-" + q.Get("scope")}, "state": {q.Get("state")}}
		to.RawQuery = v.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	case "/token":
		r.ParseForm()
		if r.Form.Get("client_id") != "dyn-client" || r.Form.Get("client_secret") != "dyn-secret" {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		var scopes []string
		switch r.Form.Get("grant_type") {
		case "authorization_code":
			if r.Form.Get("resource") != a.res.URL+"/mcp" || s256(r.Form.Get("code_verifier")) != a.challenge {
				w.WriteHeader(400)
				fmt.Fprint(w, `{"error":"invalid_grant"}`)
				return
			}
			scopes = strings.Fields(strings.TrimPrefix(r.Form.Get("code"), "code-"))
		case "refresh_token":
			s, ok := a.refresh[r.Form.Get("refresh_token")]
			if !ok {
				w.WriteHeader(400)
				fmt.Fprint(w, `{"error":"invalid_grant"}`)
				return
			}
			delete(a.refresh, r.Form.Get("refresh_token")) // rotation: used once
			scopes = s
		default:
			w.WriteHeader(400)
			return
		}
		a.n++
		at, rt := fmt.Sprintf("AT-%d-secretvalue", a.n), fmt.Sprintf("RT-%d-secretvalue", a.n)
		a.live[at], a.refresh[rt] = scopes, scopes
		json.NewEncoder(w).Encode(map[string]any{"access_token": at, "refresh_token": rt, "token_type": "Bearer", "expires_in": a.expiresIn, "scope": strings.Join(scopes, " ")})
	case "/revoke":
		r.ParseForm()
		a.revoked = append(a.revoked, r.Form.Get("token"))
		delete(a.refresh, r.Form.Get("token"))
		delete(a.live, r.Form.Get("token"))
	default:
		http.NotFound(w, r)
	}
}

func (a *testAS) serveResource(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
		json.NewEncoder(w).Encode(map[string]any{"resource": a.res.URL + "/mcp", "authorization_servers": []string{a.srv.URL}, "scopes_supported": []string{"read"}})
		return
	}
	md := `resource_metadata="` + a.res.URL + `/.well-known/oauth-protected-resource/mcp"`
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	scopes, ok := a.live[tok]
	if !ok {
		w.Header().Set("WWW-Authenticate", "Bearer "+md)
		w.WriteHeader(401)
		return
	}
	a.seen = append(a.seen, tok)
	for _, s := range a.need {
		if !slices.Contains(scopes, s) {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+strings.Join(a.need, " ")+`", `+md)
			w.WriteHeader(403)
			return
		}
	}
	fmt.Fprint(w, "ok")
}

func s256(v string) string { return oauth2.S256ChallengeFromVerifier(v) }

// signIn runs the authorization code flow for principal, following the
// authorization URL as a browser would, up to the redirect.
func signIn(t *testing.T, up *Upstream, principal string) {
	t.Helper()
	ctx := context.Background()
	p, err := up.BeginLogin(ctx, principal, "http://127.0.0.1:9/callback")
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %d %v", resp.StatusCode, err)
	}
	if err := p.Finish(ctx, loc.Query()); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, rt http.RoundTripper, u string) (string, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	return resp.Status, nil
}

// TestUpstreamSignInRefreshRotation: a principal signs in (discovery,
// dynamic registration, PKCE, resource); its token is refreshed before it
// expires, each refresh rotating the refresh token (the old one no longer
// works, so using it twice would fail); another principal, not signed
// in, is answered auth_required; insufficient_scope asks for a wider
// sign-in once, then refuses; logout revokes. No token appears in an
// error text or in the sealed file.
func TestUpstreamSignInRefreshRotation(t *testing.T) {
	as := newTestAS(t)
	dir := t.TempDir()
	tokens, err := OpenFileTokens(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	up, err := NewUpstream(UpstreamOptions{Name: "tracker", URL: as.res.URL + "/mcp", Tokens: tokens, SignIn: "toolgate auth login tracker --config gw.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	as.expiresIn = 10 // within expirySkew: every use refreshes first
	signIn(t, up, "alice")
	who := "alice"
	rt := up.Transport(nil, func(context.Context) string { return who })
	for range 3 {
		if st, err := get(t, rt, as.res.URL+"/mcp"); err != nil || st != "200 OK" {
			t.Fatalf("alice's call: %v %v", st, err)
		}
	}
	g, _ := tokens.Load(context.Background(), up.Key("alice"))
	as.mu.Lock()
	seen := slices.Clone(as.seen)
	leftRefresh := len(as.refresh)
	as.mu.Unlock()
	// Each call refreshes with the latest refresh token first.
	if want := []string{"AT-2-secretvalue", "AT-3-secretvalue", "AT-4-secretvalue"}; !slices.Equal(seen, want) {
		t.Fatalf("the resource saw %v, want %v", seen, want)
	}
	if g.RefreshToken != "RT-4-secretvalue" || leftRefresh != 1 {
		t.Fatalf("stored refresh token %q, %d live at the server: rotation not kept", g.RefreshToken, leftRefresh)
	}

	// Bob has not signed in.
	who = "bob"
	_, err = get(t, rt, as.res.URL+"/mcp")
	var te *tool.Error
	if !errors.As(err, &te) || te.Type != tool.AuthRequired || !strings.Contains(te.Suggestion, "toolgate auth login tracker") {
		t.Fatalf("bob's call: %v", err)
	}

	// Step-up: the resource wants "read admin"; alice holds "read".
	who = "alice"
	as.mu.Lock()
	as.expiresIn = 3600
	as.need = []string{"read", "admin"}
	as.mu.Unlock()
	_, err = get(t, rt, as.res.URL+"/mcp")
	if !errors.As(err, &te) || te.Type != tool.AuthRequired || !slices.Equal(te.Details["scopes"].([]string), []string{"read", "admin"}) {
		t.Fatalf("insufficient_scope: %v %+v", err, te)
	}
	signIn(t, up, "alice") // asks for read admin
	if st, err := get(t, rt, as.res.URL+"/mcp"); err != nil || st != "200 OK" {
		t.Fatalf("after the step-up: %v %v", st, err)
	}
	// A scope the account cannot get: no sign-in loop.
	as.mu.Lock()
	as.need = []string{"read", "admin"}
	for k := range as.live {
		as.live[k] = []string{"read"}
	}
	as.mu.Unlock()
	_, err = get(t, rt, as.res.URL+"/mcp")
	if !errors.As(err, &te) || te.Type != tool.PermissionDenied {
		t.Fatalf("insufficient_scope with the scopes held: %v", err)
	}

	// Refresh refused: sign in again.
	as.mu.Lock()
	as.need = nil
	as.expiresIn = 1
	as.mu.Unlock()
	signIn(t, up, "alice")
	as.mu.Lock()
	as.refresh = map[string][]string{}
	as.mu.Unlock()
	_, err = get(t, rt, as.res.URL+"/mcp")
	if !errors.As(err, &te) || te.Type != tool.AuthRequired || !strings.Contains(te.Message, "could not be renewed") {
		t.Fatalf("a refused refresh: %v", err)
	}

	// Nothing secret in the error texts or in the sealed files.
	for _, e := range []*tool.Error{te} {
		b, _ := json.Marshal(e)
		if strings.Contains(string(b), "secretvalue") || strings.Contains(string(b), "dyn-secret") {
			t.Fatalf("a secret in an error: %s", b)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.grant"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), "secretvalue") || strings.Contains(string(b), "dyn-secret") {
			t.Fatalf("%s holds a token in clear", f)
		}
	}
	if len(files) == 0 {
		t.Fatal("no grant file")
	}
	// Sealed under another key, a grant does not open.
	other, _ := NewSealer(make([]byte, 32))
	b, _ := os.ReadFile(files[0])
	if _, err := other.Open(up.Key("alice"), b); err == nil {
		t.Fatal("a grant opened under another key")
	}

	// Logout revokes what the server offers to revoke.
	as.mu.Lock()
	as.expiresIn = 3600
	as.mu.Unlock()
	signIn(t, up, "alice")
	revoked, err := up.Logout(context.Background(), "alice")
	as.mu.Lock()
	n := len(as.revoked)
	as.mu.Unlock()
	if err != nil || !revoked || n != 2 {
		t.Fatalf("logout: revoked %v (%d tokens), %v", revoked, n, err)
	}
	if st, _ := up.Status(context.Background(), "alice"); st.SignedIn {
		t.Fatal("still signed in after logout")
	}
}

// TestUpstreamConfig: the oauth block is checked before anything is
// fetched.
func TestUpstreamConfig(t *testing.T) {
	t.Setenv("TG_TEST_SECRET", "s")
	yes := true
	for _, c := range []struct {
		url  string
		o    OAuth
		want string
	}{
		{"https://up.example/mcp", OAuth{Grant: "password"}, "grant"},
		{"http://up.example/mcp", OAuth{}, "https only"},
		{"https://up.example/mcp", OAuth{ClientIDMetadataURL: "http://127.0.0.1/c.json"}, "https URL with a path"},
		{"https://up.example/mcp", OAuth{ClientIDMetadataURL: "https://gw.example/"}, "https URL with a path"},
		{"https://up.example/mcp", OAuth{ClientSecretEnv: "TG_TEST_SECRET"}, "needs the client_id"},
		{"https://up.example/mcp", OAuth{Grant: "client_credentials", ClientID: "a"}, "needs a secret"},
		{"https://up.example/mcp", OAuth{Grant: "client_credentials", ClientID: "a", ClientSecretEnv: "TG_TEST_SECRET", PerPrincipal: &yes}, "per_principal"},
		{"https://up.example/mcp", OAuth{Grant: "authorization_code", TokenURL: "https://id.example/token"}, "token_url is for client_credentials"},
		{"https://up.example/mcp", OAuth{SigningAlgorithm: "ES256"}, "needs private_key_file"},
		{"https://up.example/mcp", OAuth{ClientID: "a", ClientSecretEnv: "TG_TEST_UNSET_VARIABLE"}, "not set"},
		{"https://up.example/mcp", OAuth{TokenURL: "http://id.example/token", ClientID: "a", ClientSecretEnv: "TG_TEST_SECRET"}, "https URL"},
	} {
		_, err := NewUpstream(UpstreamOptions{Name: "up", URL: c.url, OAuth: c.o})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error saying %q", c.o, err, c.want)
		}
	}
	up, err := NewUpstream(UpstreamOptions{Name: "up", URL: "https://up.example/mcp", OAuth: OAuth{TokenURL: "https://id.example/token", ClientID: "a", ClientSecretEnv: "TG_TEST_SECRET"}})
	if err != nil || up.Grant() != GrantClientCredentials || up.PerPrincipal() {
		t.Fatalf("token_url alone means client credentials, for the gateway: %v", err)
	}
	if up.Key("alice") != up.Key("bob") {
		t.Fatal("client credentials are one grant for every principal")
	}
}

// TestPendingLoginResumes: a sign-in begun by one process and written
// down (the console keeps it sealed in the browser's cookie) is finished
// by another Upstream of the same configuration (another replica), for
// the principal that began it only; the redirect's state must match.
func TestPendingLoginResumes(t *testing.T) {
	as := newTestAS(t)
	tokens, err := OpenFileTokens(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	open := func(name string) *Upstream {
		up, err := NewUpstream(UpstreamOptions{Name: name, URL: as.res.URL + "/mcp", Tokens: tokens})
		if err != nil {
			t.Fatal(err)
		}
		return up
	}
	ctx := context.Background()
	p, err := open("tracker").BeginLogin(ctx, "alice", "http://127.0.0.1:9/ui/signin/tracker/callback")
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	replica := open("tracker")
	if _, err := replica.ResumeLogin(b, "bob"); err == nil {
		t.Fatal("bob finished alice's sign-in")
	}
	if _, err := open("wiki").ResumeLogin(b, "alice"); err == nil {
		t.Fatal("a sign-in to tracker finished for wiki")
	}
	q, err := replica.ResumeLogin(b, "alice")
	if err != nil || q.URL != p.URL {
		t.Fatalf("resumed: %v, URL %q want %q", err, q.URL, p.URL)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(q.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	forged := loc.Query()
	forged.Set("state", "another")
	if err := q.Finish(ctx, forged); err == nil {
		t.Fatal("a redirect with another state was taken")
	}
	if err := q.Finish(ctx, loc.Query()); err != nil {
		t.Fatal(err)
	}
	if st, err := replica.Status(ctx, "alice"); err != nil || !st.SignedIn {
		t.Fatalf("alice after the resumed sign-in: %+v %v", st, err)
	}
	if st, _ := replica.Status(ctx, "bob"); st.SignedIn {
		t.Fatal("bob is signed in")
	}
}
