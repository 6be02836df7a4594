package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/browsertest"
)

// oauthAS is an authorization server of the test's own, on loopback: RFC
// 8414 metadata, dynamic registration, a consent page where the person
// types the account they sign in as and clicks Allow, and a token
// endpoint that checks PKCE (S256) and the resource. Its access tokens
// name the account (AT-<account>-<n>).
type oauthAS struct {
	*httptest.Server
	resource string // the one resource it issues tokens for

	mu     sync.Mutex
	codes  map[string]asCode
	issued int
}

type asCode struct{ account, challenge, redirect, resource string }

func newOAuthAS(t *testing.T) *oauthAS {
	as := &oauthAS{codes: map[string]asCode{}}
	as.Server = httptest.NewServer(http.HandlerFunc(as.serve))
	t.Cleanup(as.Close)
	return as
}

func (as *oauthAS) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":%q,"token_endpoint":%q,"registration_endpoint":%q,"code_challenge_methods_supported":["S256"],"token_endpoint_auth_methods_supported":["none"],"response_types_supported":["code"]}`,
			as.URL, as.URL+"/authorize", as.URL+"/token", as.URL+"/register")
	case "/register":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		fmt.Fprint(w, `{"client_id":"toolgate-dcr","token_endpoint_auth_method":"none"}`)
	case "/authorize": // the consent page
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("resource") != as.resource {
			http.Error(w, "PKCE S256 and the resource are required", 400)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>Tracker sign-in</title><form method="post" action="/approve">`)
		for _, k := range []string{"redirect_uri", "state", "code_challenge", "resource"} {
			fmt.Fprintf(w, `<input type="hidden" name="%s" value="%s">`, k, html.EscapeString(q.Get(k)))
		}
		fmt.Fprint(w, `<label>Account <input id="account" name="account"></label><button id="allow">Allow</button></form>`)
	case "/approve":
		r.ParseForm()
		code := fmt.Sprintf("code-%d", time.Now().UnixNano())
		as.mu.Lock()
		as.codes[code] = asCode{r.Form.Get("account"), r.Form.Get("code_challenge"), r.Form.Get("redirect_uri"), r.Form.Get("resource")}
		as.mu.Unlock()
		to, err := url.Parse(r.Form.Get("redirect_uri"))
		if err != nil {
			http.Error(w, "bad redirect_uri", 400)
			return
		}
		to.RawQuery = url.Values{"code": {code}, "state": {r.Form.Get("state")}}.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	case "/token":
		r.ParseForm()
		as.mu.Lock()
		defer as.mu.Unlock()
		c, ok := as.codes[r.Form.Get("code")]
		delete(as.codes, r.Form.Get("code"))
		sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
		w.Header().Set("Content-Type", "application/json")
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge || r.Form.Get("redirect_uri") != c.redirect || r.Form.Get("resource") != as.resource {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		as.issued++
		fmt.Fprintf(w, `{"access_token":"AT-%s-%d","token_type":"Bearer","expires_in":3600}`, c.account, as.issued)
	default:
		http.NotFound(w, r)
	}
}

// accountOf is the account an access token of oauthAS names ("" none).
func accountOf(authz string) string {
	tok, ok := strings.CutPrefix(authz, "Bearer AT-")
	if !ok {
		return ""
	}
	if i := strings.LastIndexByte(tok, '-'); i > 0 {
		return tok[:i]
	}
	return ""
}

// TestConsoleOAuthSignIn: a team's gateway (`proxy --http` with two
// API-key principals) in front of an OAuth-protected MCP server, started
// before anyone signed in: it waits for the operator, who signs in once
// with `toolgate auth login` (the gateway's listing), and lists the tools
// then; then alice and bob each sign in in the console, in headless
// Chromium, through the authorization server's consent page, as their
// own accounts, alice from the Tools page, bob from the page his client
// was sent as a URL-mode elicitation. Before bob signs in, his call is
// answered auth_required with the console's sign-in page (a 2025-11-25
// client declaring URL elicitation gets it as -32042); after, each call carries the token of
// the principal who made it, over a session of its own (no upstream
// session ever sees two accounts' tokens). No token reaches the audit
// log or the state folder in clear. The gateway serves its Client ID
// Metadata Document.
func TestConsoleOAuthSignIn(t *testing.T) {
	as := newOAuthAS(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "tracker", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are " + accountOf(req.Extra.Header.Get("Authorization"))}}}, struct{}{}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex
	sessions := map[string]map[string]bool{} // upstream session → the accounts whose tokens it carried
	var up *httptest.Server
	up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			fmt.Fprintf(w, `{"resource":%q,"authorization_servers":[%q]}`, up.URL+"/mcp", as.URL)
			return
		}
		account := accountOf(r.Header.Get("Authorization"))
		if account == "" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+up.URL+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(401)
			return
		}
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			mu.Lock()
			if sessions[id] == nil {
				sessions[id] = map[string]bool{}
			}
			sessions[id][account] = true
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	as.resource = up.URL + "/mcp"

	dir := t.TempDir()
	t.Setenv("TOOLGATE_STATE", filepath.Join(dir, "state"))
	cfg := filepath.Join(dir, "gateway.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("servers:\n  - name: tracker\n    url: %s/mcp\n    oauth:\n      client_id_metadata_url: https://tools.example.com/oauth/client.json\n", up.URL)), 0o600)
	aliceKey, bobKey := "tg_alice_0123456789abcdef0123456789ab", "tg_bob_0123456789abcdef0123456789abcd"
	pol := filepath.Join(dir, "policy.yaml")
	os.WriteFile(pol, []byte(fmt.Sprintf(`auth:
  resource: %s
  api_keys:
    - {sha256: %s, principal: alice, roles: [reader]}
    - {sha256: %s, principal: bob, roles: [reader]}
roles: {reader: {}}
allow: ["tracker__*"]
`, testResource, sha256Hex(aliceKey), sha256Hex(bobKey))), 0o600)

	// The gateway starts before anyone signed in: the upstream waits for
	// the operator's sign-in, which lists its tools.
	audit := filepath.Join(dir, "audit.jsonl")
	u, lines := startHTTPLines(t, "proxy", "--config", cfg, "--policy", pol, "--audit", audit, "--http", "127.0.0.1:0")
	base := strings.TrimSuffix(u, "/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	listed := func() bool {
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		hc := &http.Client{Transport: headerRT{http.DefaultTransport, "Bearer " + aliceKey}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "lister", Version: "1"}, nil).Connect(lctx, &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: hc}, nil)
		if err != nil {
			t.Fatalf("connecting: %v\n%s", err, strings.Join(lines(), "\n"))
		}
		defer cs.Close()
		res, err := cs.ListTools(lctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "tracker__whoami" })
	}
	if listed() {
		t.Fatal("the upstream's tools are listed before the gateway signed in")
	}
	if !slices.ContainsFunc(lines(), func(l string) bool {
		return strings.Contains(l, "upstream tracker waits for the gateway's own sign-in") && strings.Contains(l, "toolgate auth login tracker --config "+cfg+" --policy "+pol)
	}) {
		t.Fatalf("the gateway does not say how to sign it in:\n%s", strings.Join(lines(), "\n"))
	}

	// The operator signs in at the gateway's host: the printed URL, opened
	// in a browser, the account typed on the consent page.
	login := exec.Command(bin, "auth", "login", "tracker", "--config", cfg, "--timeout", "60s")
	stdout, _ := login.StdoutPipe()
	var stderr strings.Builder
	login.Stderr = &stderr
	if err := login.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		login.Wait()
		t.Fatalf("auth login printed no URL: %v\n%s", err, stderr.String())
	}
	operator := browsertest.New(t)
	consent(t, operator, strings.TrimSpace(line), "operator")
	if err := login.Wait(); err != nil {
		t.Fatalf("auth login: %v\n%s", err, stderr.String())
	}
	for !listed() { // the gateway tries again every 5 s
		if ctx.Err() != nil {
			t.Fatal("the upstream's tools were never listed after the operator signed in")
		}
		time.Sleep(200 * time.Millisecond)
	}

	whoami := func(key string) *mcp.CallToolResult {
		t.Helper()
		res, err := bearerClient(t, ctx, u, key).CallTool(ctx, &mcp.CallToolParams{Name: "tracker__whoami", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// The gateway serves its Client ID Metadata Document (this
	// authorization server does not take one: it registers the client).
	resp, err := http.Get(base + "/oauth/client.json")
	if err != nil {
		t.Fatal(err)
	}
	var cimd struct {
		ClientID     string   `json:"client_id"`
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
	}
	err = json.NewDecoder(resp.Body).Decode(&cimd)
	resp.Body.Close()
	if err != nil || resp.Header.Get("Content-Type") != "application/json" || cimd.ClientID != "https://tools.example.com/oauth/client.json" || cimd.AuthMethod != "none" ||
		!slices.Contains(cimd.RedirectURIs, "https://tools.example.com/ui/signin/tracker/callback") || !slices.Contains(cimd.RedirectURIs, "http://127.0.0.1/callback") {
		t.Fatalf("the client ID metadata document: %v %+v", err, cimd)
	}

	res := whoami(bobKey)
	b, _ := json.Marshal(res.StructuredContent)
	if !res.IsError || !strings.Contains(string(b), `"type":"auth_required"`) || !strings.Contains(string(b), `"sign_in_url":"https://tools.example.com/ui/signin/tracker"`) {
		t.Fatalf("bob's call before he signed in: %s", b)
	}
	// A 2025-11-25 client that declares URL-mode elicitation is sent the
	// page that way (URLElicitationRequiredError).
	elicitingBob := mcp.NewClient(&mcp.Implementation{Name: "eliciting", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	ecs, err := elicitingBob.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: &http.Client{Transport: headerRT{http.DefaultTransport, "Bearer " + bobKey}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer ecs.Close()
	_, err = ecs.CallTool(ctx, &mcp.CallToolParams{Name: "tracker__whoami", Arguments: map[string]any{}})
	var rpcErr *jsonrpc.Error
	var elicited struct {
		Elicitations []mcp.ElicitParams `json:"elicitations"`
	}
	if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeURLElicitationRequired || json.Unmarshal(rpcErr.Data, &elicited) != nil ||
		len(elicited.Elicitations) != 1 || elicited.Elicitations[0].Mode != "url" || elicited.Elicitations[0].URL != "https://tools.example.com/ui/signin/tracker" || elicited.Elicitations[0].ElicitationID == "" {
		t.Fatalf("the eliciting client's call before bob signed in: %v %+v", err, elicited)
	}
	page, _ := url.Parse(elicited.Elicitations[0].URL)

	// alice signs in on the Tools page; bob opens the page his client was
	// sent (its path on this gateway: tools.example.com is the policy's
	// public name of it).
	for _, p := range []struct{ name, key, open, button string }{
		{"alice", aliceKey, "/ui/tools", `#signin-list tr[data-upstream="tracker"]`},
		{"bob", bobKey, page.Path, `#signin-tracker`},
	} {
		browser := browsertest.New(t)
		err := chromedp.Do(browsertest.Within(t, browser),
			chromedp.Navigate(base+"/ui/login"),
			chromedp.SendKeys(`#key`, p.key),
			chromedp.Click(`#signin`),
			chromedp.WaitVisible(`#principal`),
			chromedp.Navigate(base+p.open),
			chromedp.WaitVisible(p.button))
		if err != nil {
			t.Fatalf("%s opening %s: %v", p.name, p.open, err)
		}
		if text, _ := chromedp.Run(browsertest.Within(t, browser), chromedp.Text(`main`)); !strings.Contains(text, "not signed in") {
			t.Fatalf("%s's sign-in before signing in: %q", p.name, text)
		}
		browsertest.Shot(t, browser, "signin-start-"+p.name)
		if err := chromedp.Do(browsertest.Within(t, browser), chromedp.Click(`#signin-tracker`)); err != nil {
			t.Fatalf("%s clicking Sign in to tracker: %v", p.name, err)
		}
		consent(t, browser, "", p.name)
		// the page the redirect loaded says who is signed in
		browsertest.WaitTrue(t, browser, fmt.Sprintf(`document.readyState === "complete" && (document.getElementById("signed-in") || {textContent: ""}).textContent.includes("as %s:")`, p.name))
		browsertest.Shot(t, browser, "signin-done-"+p.name)
		if err := chromedp.Do(browsertest.Within(t, browser), chromedp.Click(`#back`), chromedp.WaitVisible(`#signin-list`)); err != nil {
			t.Fatalf("%s back to the tools: %v", p.name, err)
		}
		if row, _ := chromedp.Run(browsertest.Within(t, browser), chromedp.Text(`#signin-list tr[data-upstream="tracker"]`)); !strings.Contains(row, "signed in") || strings.Contains(row, "not signed in") {
			t.Fatalf("%s's sign-in after signing in: %q", p.name, row)
		}
	}

	for range 2 {
		for _, p := range []struct{ name, key string }{{"alice", aliceKey}, {"bob", bobKey}} {
			if res := whoami(p.key); res.IsError || res.Content[0].(*mcp.TextContent).Text != "you are "+p.name {
				t.Fatalf("%s's call: %+v", p.name, res.Content[0])
			}
		}
	}
	mu.Lock()
	for id, accounts := range sessions {
		if len(accounts) != 1 {
			t.Errorf("upstream session %s carried the tokens of %v", id, accounts)
		}
	}
	if len(sessions) < 3 {
		t.Errorf("%d upstream sessions, want one for the gateway and one for each of alice and bob", len(sessions))
	}
	mu.Unlock()

	log, err := os.ReadFile(audit)
	if err != nil || !strings.Contains(string(log), `"principal":"alice"`) || strings.Contains(string(log), "AT-") {
		t.Fatalf("audit log: %v\n%s", err, log)
	}
	grants, _ := filepath.Glob(filepath.Join(dir, "state", "oauth", "*.grant"))
	if len(grants) != 3 {
		t.Fatalf("grants in the state folder: %v, want the operator's, alice's and bob's", grants)
	}
	for _, g := range grants {
		if b, _ := os.ReadFile(g); strings.Contains(string(b), "AT-") {
			t.Fatalf("grant %s is in clear", g)
		}
	}
}

// consent signs account in on oauthAS's consent page in browser (at
// authURL, or the page the browser is on its way to).
func consent(t *testing.T, browser context.Context, authURL, account string) {
	t.Helper()
	var steps []chromedp.Action[chromedp.Void]
	if authURL != "" {
		steps = append(steps, chromedp.Navigate(authURL))
	}
	steps = append(steps, chromedp.WaitVisible(`#account`), chromedp.SendKeys(`#account`, account), chromedp.Click(`#allow`))
	if err := chromedp.Do(browsertest.Within(t, browser), steps...); err != nil {
		browsertest.Shot(t, browser, "consent-"+account)
		t.Fatalf("signing in as %s on the authorization server's page: %v", account, err)
	}
}
