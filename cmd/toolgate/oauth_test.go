package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/toolgate/toolgate/internal/redistest"
)

// TestProxyOAuthReplicasShareTokens: two replicas of `proxy --http` with
// the policy's state.redis use one client-credentials token, fetched
// once (its token endpoint discovered from the upstream's 401) and kept
// sealed in a real redis-server; the token is never in an audit log, and
// not in Redis in clear.
func TestProxyOAuthReplicasShareTokens(t *testing.T) {
	rs := redistest.Start(t)
	var issued atomic.Int32
	var as *httptest.Server
	as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			fmt.Fprintf(w, `{"issuer":%q,"token_endpoint":%q,"token_endpoint_auth_methods_supported":["client_secret_basic"],"grant_types_supported":["client_credentials"]}`, as.URL, as.URL+"/token")
		case "/token":
			r.ParseForm()
			id, secret, _ := r.BasicAuth()
			if r.Form.Get("grant_type") != "client_credentials" || id != "gw" || secret != "gw-secret" {
				w.WriteHeader(401)
				fmt.Fprint(w, `{"error":"invalid_client"}`)
				return
			}
			fmt.Fprintf(w, `{"access_token":"gw-token-%d-sensitive","token_type":"Bearer","expires_in":3600}`, issued.Add(1))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(as.Close)

	srv := mcp.NewServer(&mcp.Implementation{Name: "tracker", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "tracker says hi"}}}, struct{}{}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex
	var seen []string
	var up *httptest.Server
	up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			fmt.Fprintf(w, `{"resource":%q,"authorization_servers":[%q]}`, up.URL+"/mcp", as.URL)
			return
		}
		a := r.Header.Get("Authorization")
		mu.Lock()
		seen = append(seen, a)
		mu.Unlock()
		if !strings.HasPrefix(a, "Bearer gw-token-") {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+up.URL+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(401)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)

	dir := t.TempDir()
	t.Setenv("TOOLGATE_STATE", filepath.Join(dir, "state"))
	t.Setenv("TOOLGATE_TOKEN_KEY", strings.Repeat("k", 40))
	t.Setenv("TRACKER_SECRET", "gw-secret")
	cfg := filepath.Join(dir, "gateway.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("servers:\n  - name: tracker\n    url: %s/mcp\n    oauth:\n      grant: client_credentials\n      client_id: gw\n      client_secret_env: TRACKER_SECRET\n", up.URL)), 0o600)
	pol := filepath.Join(dir, "policy.yaml")
	os.WriteFile(pol, []byte(fmt.Sprintf("allow: [\"tracker__*\"]\nstate:\n  redis:\n    url: %s\n", rs.URL())), 0o600)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var audits []string
	for i := range 2 {
		audit := filepath.Join(dir, fmt.Sprintf("audit-%d.jsonl", i))
		audits = append(audits, audit)
		u := startHTTP(t, "proxy", "--config", cfg, "--policy", pol, "--audit", audit, "--http", "127.0.0.1:0")
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tracker__whoami", Arguments: map[string]any{}})
		if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "tracker says hi" {
			t.Fatalf("replica %d: %v %+v", i, err, res)
		}
		cs.Close()
	}
	if n := issued.Load(); n != 1 {
		t.Fatalf("%d tokens issued for two replicas sharing redis, want 1", n)
	}
	mu.Lock()
	for _, a := range seen[1:] { // the first: discovery's probe, without a token
		if a != "Bearer gw-token-1-sensitive" {
			t.Fatalf("the upstream got Authorization %q", a)
		}
	}
	mu.Unlock()
	for _, f := range audits {
		b, err := os.ReadFile(f)
		if err != nil || len(b) == 0 || strings.Contains(string(b), "gw-token") {
			t.Fatalf("audit log %s: %v; a token in it: %v", f, err, strings.Contains(string(b), "gw-token"))
		}
	}
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rc.Close()
	keys, err := rc.Keys(ctx, "toolgate:oauth:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("grant keys in redis: %v %v", keys, err)
	}
	if v, _ := rc.Get(ctx, keys[0]).Result(); strings.Contains(v, "gw-token") || strings.Contains(v, "gw-secret") {
		t.Fatal("the grant is in redis in clear")
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "state", "oauth", "*.grant")); len(files) != 0 {
		t.Fatalf("grants written to the state folder with state.redis: %v", files)
	}
}

// TestProxyOAuthPerPrincipal: behind `proxy --http` with two API-key
// principals, each call to the upstream carries the token of the
// principal who made it: alice, signed in, reaches the upstream with her
// own token; bob, not signed in, is answered auth_required naming the
// console's page where he signs in. The operator's sign-in (the local principal) lists the tools.
// No token reaches the audit log.
func TestProxyOAuthPerPrincipal(t *testing.T) {
	var n atomic.Int32
	var as *httptest.Server
	as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":%q,"token_endpoint":%q,"registration_endpoint":%q,"code_challenge_methods_supported":["S256"],"token_endpoint_auth_methods_supported":["none"]}`,
				as.URL, as.URL+"/authorize", as.URL+"/token", as.URL+"/register")
		case "/register":
			w.WriteHeader(201)
			fmt.Fprint(w, `{"client_id":"gw-client","token_endpoint_auth_method":"none"}`)
		case "/authorize":
			to, _ := url.Parse(r.URL.Query().Get("redirect_uri"))
			to.RawQuery = url.Values{"code": {"c"}, "state": {r.URL.Query().Get("state")}}.Encode()
			http.Redirect(w, r, to.String(), http.StatusFound)
		case "/token":
			fmt.Fprintf(w, `{"access_token":"AT-%d-sensitive","token_type":"Bearer","expires_in":3600}`, n.Add(1))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(as.Close)
	srv := mcp.NewServer(&mcp.Implementation{Name: "tracker", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
			tok := strings.TrimPrefix(req.Extra.Header.Get("Authorization"), "Bearer AT-")
			num, _, _ := strings.Cut(tok, "-")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "grant " + num}}}, struct{}{}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	var up *httptest.Server
	up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			fmt.Fprintf(w, `{"resource":%q,"authorization_servers":[%q]}`, up.URL+"/mcp", as.URL)
			return
		}
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer AT-") {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+up.URL+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(401)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)

	dir := t.TempDir()
	t.Setenv("TOOLGATE_STATE", filepath.Join(dir, "state"))
	cfg := filepath.Join(dir, "gateway.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("servers:\n  - name: tracker\n    url: %s/mcp\n    oauth: {}\n", up.URL)), 0o600)
	aliceKey, bobKey := "tg_alice_0123456789abcdef0123456789ab", "tg_bob_0123456789abcdef0123456789abcd"
	pol := filepath.Join(dir, "policy.yaml")
	os.WriteFile(pol, []byte(fmt.Sprintf(`auth:
  resource: %s
  api_keys:
    - sha256: %s
      principal: alice
    - sha256: %s
      principal: bob
allow: ["tracker__*"]
`, testResource, sha256Hex(aliceKey), sha256Hex(bobKey))), 0o600)

	signIn := func(args ...string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"auth", "login", "tracker", "--config", cfg, "--timeout", "30s"}, args...)...)
		stdout, _ := cmd.StdoutPipe()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			cmd.Wait()
			t.Fatalf("auth login printed no URL: %v\n%s", err, stderr.String())
		}
		resp, err := http.Get(strings.TrimSpace(line)) // the browser
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("auth login %v: %v\n%s", args, err, stderr.String())
		}
	}
	signIn()                       // the operator: AT-1 lists the tools
	signIn("--principal", "alice") // AT-2
	r := toolgate(t, dir, "", "auth", "status", "--config", cfg, "--principal", "bob", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"signed_in":false`) || strings.Contains(r.stdout, "AT-") {
		t.Fatalf("auth status for bob: %d %s %s", r.code, r.stdout, r.stderr)
	}

	audit := filepath.Join(dir, "audit.jsonl")
	u := startHTTP(t, "proxy", "--config", cfg, "--policy", pol, "--audit", audit, "--http", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := bearerClient(t, ctx, u, aliceKey).CallTool(ctx, &mcp.CallToolParams{Name: "tracker__whoami", Arguments: map[string]any{}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "grant 2" {
		t.Fatalf("alice's call: %v %+v", err, res)
	}
	res, err = bearerClient(t, ctx, u, bobKey).CallTool(ctx, &mcp.CallToolParams{Name: "tracker__whoami", Arguments: map[string]any{}})
	if err != nil || !res.IsError {
		t.Fatalf("bob's call: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), `"type":"auth_required"`) || !strings.Contains(string(b), "https://tools.example.com/ui/signin/tracker in a browser") {
		t.Fatalf("bob's call: %s", b)
	}
	log, err := os.ReadFile(audit)
	if err != nil || !strings.Contains(string(log), `"principal":"bob"`) || strings.Contains(string(log), "AT-") || strings.Contains(string(log), "sensitive") {
		t.Fatalf("audit log: %v\n%s", err, log)
	}
}
