package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/redistest"
)

// roundRobin sends each request to the next of its endpoints (a load
// balancer without affinity) and remembers every answer's status and
// Mcp-Session-Id.
type roundRobin struct {
	mu        sync.Mutex
	endpoints []*url.URL
	next      int
	statuses  map[int]int
	sessions  []string // Mcp-Session-Id headers seen
}

func newRoundRobin(t *testing.T, endpoints ...string) *roundRobin {
	rr := &roundRobin{statuses: map[int]int{}}
	for _, e := range endpoints {
		u, err := url.Parse(e)
		if err != nil {
			t.Fatal(err)
		}
		rr.endpoints = append(rr.endpoints, u)
	}
	return rr
}

func (rr *roundRobin) RoundTrip(r *http.Request) (*http.Response, error) {
	rr.mu.Lock()
	u := rr.endpoints[rr.next%len(rr.endpoints)]
	rr.next++
	rr.mu.Unlock()
	r = r.Clone(r.Context())
	r.URL.Host, r.Host = u.Host, u.Host
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		rr.mu.Lock()
		rr.statuses[resp.StatusCode]++
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			rr.sessions = append(rr.sessions, id)
		}
		rr.mu.Unlock()
	}
	return resp, err
}

// connectVia connects a go-sdk client named name through rr.
func connectVia(t *testing.T, rr *roundRobin, name string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: rr.endpoints[0].String(), HTTPClient: &http.Client{Transport: rr}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// statelessReplicas starts two `serve --http` replicas sharing one
// redis-server: the first stateless by --stateless, the second by the
// policy's http.stateless.
func statelessReplicas(t *testing.T, extra string) (urls []string, root string) {
	t.Helper()
	srv := redistest.Start(t)
	root, _ = serveWorkspace(t)
	dir := t.TempDir()
	base := fmt.Sprintf("limits:\n  tools:\n    \"*\": {per_second: 100, burst: 100}\n%sstate:\n  redis:\n    url: %s\n", extra, srv.URL())
	for i, pol := range []string{base, base + "http:\n  stateless: true\n"} {
		p := filepath.Join(dir, fmt.Sprintf("policy-%d.yaml", i))
		if err := os.WriteFile(p, []byte(pol), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"serve", "--root", root, "--policy", p, "--audit", filepath.Join(dir, fmt.Sprintf("audit-%d.jsonl", i)), "--http", "127.0.0.1:0"}
		if i == 0 {
			args = append(args, "--stateless")
		}
		urls = append(urls, startHTTP(t, args...))
	}
	return urls, root
}

// TestStatelessClientSpreadsOverReplicas: a session-free client whose
// every request goes to the other replica lists and calls tools with no
// 404 and no Mcp-Session-Id in any answer.
func TestStatelessClientSpreadsOverReplicas(t *testing.T) {
	urls, _ := statelessReplicas(t, "")
	rr := newRoundRobin(t, urls...)
	cs := connectVia(t, rr, "stateless-test")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt", "limit": i + 1}})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if res.IsError || !strings.Contains(text(res), "hello from toolgate") {
			t.Fatalf("call %d: %s", i, text(res))
		}
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.next < 14 {
		t.Errorf("%d requests went out, want at least 14", rr.next)
	}
	for code, n := range rr.statuses {
		if code >= 400 {
			t.Errorf("%d answers with status %d", n, code)
		}
	}
	if len(rr.sessions) > 0 {
		t.Errorf("stateless replicas answered with Mcp-Session-Id %q", rr.sessions)
	}
}

// TestStatelessLoopAcrossReplicas: identical calls spread over two
// stateless replicas are caught on the sixth, as in one process, for the
// conversation the client names in params._meta; another conversation,
// and calls that name none (counted per principal), start their own count.
func TestStatelessLoopAcrossReplicas(t *testing.T) {
	urls, _ := statelessReplicas(t, "")
	rr := newRoundRobin(t, urls...)
	cs := connectVia(t, rr, "loop-test")
	for _, tc := range []struct {
		name string
		meta mcp.Meta
	}{
		{"conversation", mcp.Meta{"toolgate/conversation": "conv-1"}},
		{"another conversation", mcp.Meta{"toolgate/conversation": "conv-2"}},
		{"none named", nil},
		{"not a string", mcp.Meta{"toolgate/conversation": 7}}, // counts with "none named": caught at once
		{"unicode", mcp.Meta{"toolgate/conversation": "чат-3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := 1
			if tc.name == "not a string" {
				first = 6 // the principal's session-free count is already at 5
			}
			for i := first; i <= 6; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: tc.meta, Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
				cancel()
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				caught := res.IsError && strings.Contains(text(res), "loop_detected")
				switch {
				case i < 6 && res.IsError:
					t.Fatalf("call %d refused: %s", i, text(res))
				case i == 6 && !caught:
					t.Fatalf("call 6 not caught as a loop: %s", text(res))
				}
			}
		})
	}
}

// TestReadyzFollowsRedis: /healthz answers while the process is up;
// /readyz only while Redis answers (503 with a short JSON reason that
// names no address otherwise), and again once it is back, with no restart
// of toolgate; both for serve and proxy (whose tools a stateless client
// calls), outside /mcp's guard.
func TestReadyzFollowsRedis(t *testing.T) {
	srv := redistest.Start(t)
	root, _ := serveWorkspace(t)
	dir := t.TempDir()
	pol := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(pol, []byte(fmt.Sprintf("state:\n  redis:\n    url: %s\n", srv.URL())), 0o644); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(dir, "local.yaml")
	if err := os.WriteFile(local, []byte("mode: default\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := func(u string) string { return strings.TrimSuffix(u, "/mcp") }
	withRedis := map[string]string{
		"serve": base(startHTTP(t, "serve", "--root", root, "--policy", pol, "--audit", "off", "--http", "127.0.0.1:0", "--stateless")),
		"proxy": base(startHTTP(t, "proxy", "--policy", pol, "--audit", "off", "--http", "127.0.0.1:0", "--stateless", "--write", root, "--", bin, "serve", "--root", root, "--audit", "off")),
	}
	noRedis := base(startHTTP(t, "serve", "--root", root, "--policy", local, "--audit", "off", "--http", "127.0.0.1:0"))

	probe := func(u string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("GET", u, nil)
		req.Host = "replica.example:80" // a probe comes by the pod's address, not localhost
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		return resp.StatusCode, body
	}
	// want waits (bounded) for every probe to give code.
	want := func(stage string, urls map[string]string, path string, code int) {
		t.Helper()
		for name, u := range urls {
			got, body := 0, map[string]any(nil)
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if got, body = probe(u + path); got == code {
					break
				}
			}
			if got != code {
				t.Fatalf("%s: %s %s answered %d %v, want %d", stage, name, path, got, body, code)
			}
			reason, _ := body["reason"].(string)
			if code == http.StatusServiceUnavailable && (reason == "" || strings.Contains(reason, srv.Addr()) || strings.Contains(reason, "127.0.0.1")) {
				t.Errorf("%s: %s %s reason %q: want a short reason naming no address", stage, name, path, reason)
			}
		}
	}
	// The stateless gateway serves its upstream's tools without sessions.
	rr := newRoundRobin(t, withRedis["proxy"]+"/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := connectVia(t, rr, "proxy-test").CallTool(ctx, &mcp.CallToolParams{Name: "upstream__read_file", Arguments: map[string]any{"path": "a.txt"}})
	if err != nil || res.IsError || !strings.Contains(text(res), "hello from toolgate") {
		t.Fatalf("a call through the stateless proxy: %v %v", err, res)
	}
	if len(rr.sessions) > 0 {
		t.Errorf("the stateless proxy answered with Mcp-Session-Id %q", rr.sessions)
	}
	all := map[string]string{"serve": withRedis["serve"], "proxy": withRedis["proxy"], "no redis": noRedis}
	want("redis up", all, "/healthz", http.StatusOK)
	want("redis up", all, "/readyz", http.StatusOK)
	srv.Kill()
	want("redis killed", withRedis, "/readyz", http.StatusServiceUnavailable)
	want("redis killed", all, "/healthz", http.StatusOK)
	want("redis killed", map[string]string{"no redis": noRedis}, "/readyz", http.StatusOK)
	srv.Restart()
	want("redis restarted", all, "/readyz", http.StatusOK)
}

// TestStatelessApprovals: a stateless server never elicits, even from a
// client that offers elicitation (it could not answer): a call the policy
// asks about is refused with a reason naming the approval page, and with
// one (approvals.http) it waits there and runs once a person approves it.
func TestStatelessApprovals(t *testing.T) {
	root, _ := serveWorkspace(t)
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	page := ln.Addr().String()
	ln.Close()
	elicited := make(chan string, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "stateless-approvals", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited <- req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, nil
		},
	})
	for _, tc := range []struct {
		name, policy string
	}{
		{"no approval page", "mode: default\n"},
		{"approval page", "approvals:\n  http: " + page + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if err := os.WriteFile(pol, []byte(tc.policy), 0o644); err != nil {
				t.Fatal(err)
			}
			u, stderr := startHTTPLines(t, "serve", "--root", root, "--policy", pol, "--audit", "off", "--http", "127.0.0.1:0", "--stateless")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			done := make(chan *mcp.CallToolResult, 1)
			go func() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_command", Arguments: map[string]any{"command": "cat a.txt"}})
				if err != nil {
					t.Error(err)
				}
				done <- res
			}()
			if tc.name == "approval page" {
				approveOnPage(t, ctx, page, tokenRE.FindStringSubmatch(strings.Join(stderr(), "\n")))
			}
			var res *mcp.CallToolResult
			select {
			case res = <-done:
			case <-ctx.Done():
				t.Fatal("the call did not end")
			}
			switch {
			case res == nil:
			case tc.name == "no approval page" && (!res.IsError || !strings.Contains(text(res), "approvals.http") || !strings.Contains(text(res), "stateless")):
				t.Errorf("asked with no page: %s", text(res))
			case tc.name == "approval page" && (res.IsError || !strings.Contains(text(res), "hello from toolgate")):
				t.Errorf("approved on the page: %s", text(res))
			}
			select {
			case m := <-elicited:
				t.Errorf("a stateless server elicited %q", m)
			default:
			}
		})
	}
}

var tokenRE = regexp.MustCompile(`approve calls at http://\S+/ \(API token (\S+)\)`)

// approveOnPage waits (bounded) for one call pending on the approval page
// at addr and approves it once with the API token.
func approveOnPage(t *testing.T, ctx context.Context, addr string, token []string) {
	t.Helper()
	if token == nil {
		t.Fatal("the server printed no approval page token")
	}
	for ctx.Err() == nil {
		resp, err := http.Get("http://" + addr + "/api/pending")
		if err != nil {
			t.Fatal(err)
		}
		var pending []struct{ ID, Tool string }
		json.NewDecoder(resp.Body).Decode(&pending)
		resp.Body.Close()
		if len(pending) == 0 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		req, _ := http.NewRequest("POST", "http://"+addr+"/api/decide", strings.NewReader(fmt.Sprintf(`{"id":%q,"decision":"once"}`, pending[0].ID)))
		req.Header.Set("X-Toolgate-Token", token[1])
		req.Header.Set("Content-Type", "application/json")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || pending[0].Tool != "execute_command" {
			t.Fatalf("deciding %v: %s", pending, resp.Status)
		}
		return
	}
}

// startHTTPLines is startHTTP that also returns the lines the process
// wrote to stderr up to its address.
func startHTTPLines(t *testing.T, args ...string) (string, func() []string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	var mu sync.Mutex
	var lines []string
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case u := <-found:
		return u, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), lines...) }
	case <-time.After(60 * time.Second):
		t.Fatalf("toolgate %s did not announce its address", args[0])
	}
	return "", nil
}

// TestProbesNeedNoToken: with the policy's auth block /mcp wants a bearer
// token, the probes do not (a load balancer has none); with sessions and
// without, and whatever the method but GET, they answer nothing else.
func TestProbesNeedNoToken(t *testing.T) {
	p := newIDP(t, newIDPKey(t, "ecdsa", "ec-1"))
	root, _ := serveWorkspace(t)
	pol := authPolicy(t, p, "")
	for _, mode := range [][]string{nil, {"--stateless"}} {
		u := startHTTP(t, append([]string{"serve", "--root", root, "--audit", "off", "--policy", pol, "--http", "127.0.0.1:0"}, mode...)...)
		base := strings.TrimSuffix(u, "/mcp")
		if r := post(t, u, initializeBody); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("%v: /mcp without a token: %d, want 401", mode, r.StatusCode)
		}
		for _, tc := range []struct {
			method, path string
			want         int
		}{
			{"GET", "/healthz", 200}, {"GET", "/readyz", 200}, {"HEAD", "/healthz", 200},
			{"POST", "/healthz", 405}, {"POST", "/readyz", 405}, {"DELETE", "/readyz", 405},
			{"GET", "/healthz/x", 404}, {"GET", "/readyz/../mcp", 401},
		} {
			req, _ := http.NewRequest(tc.method, base+tc.path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%v: %s %s: %d, want %d", mode, tc.method, tc.path, resp.StatusCode, tc.want)
			}
		}
	}
}
