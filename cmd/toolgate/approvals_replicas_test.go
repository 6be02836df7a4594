package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/toolgate/toolgate/internal/redistest"
)

// approvalToken is the API token both replicas read from the environment
// (approvals.token_env).
const approvalToken = "replicas-share-this-approval-token"

// ghToken is a secret in a call's arguments: it must never reach Redis.
var ghToken = "ghp_" + strings.Repeat("A1b2C3d4", 5)

// approvalReplica is one `serve --http --stateless` process: its MCP
// endpoint and its approval page.
type approvalReplica struct {
	name, mcp, page string
}

// approvalReplicas starts two stateless replicas sharing srv, each with its
// own approval page, named a and b (TOOLGATE_REPLICA).
func approvalReplicas(t *testing.T, srv *redistest.Server) []approvalReplica {
	t.Helper()
	root, _ := serveWorkspace(t)
	dir := t.TempDir()
	t.Setenv("TOOLGATE_APPROVAL_TOKEN", approvalToken)
	var out []approvalReplica
	for _, name := range []string{"a", "b"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		page := ln.Addr().String()
		ln.Close()
		pol := filepath.Join(dir, name+".yaml")
		body := fmt.Sprintf("approvals:\n  http: %s\n  token_env: TOOLGATE_APPROVAL_TOKEN\n  timeout: 2m\nstate:\n  redis:\n    url: %s\n    on_error: deny\n", page, srv.URL())
		if err := os.WriteFile(pol, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("TOOLGATE_REPLICA", "replica-"+name)
		u, lines := startHTTPLines(t, "serve", "--root", root, "--policy", pol, "--audit", filepath.Join(dir, name+".jsonl"), "--http", "127.0.0.1:0", "--stateless")
		if l := strings.Join(lines(), "\n"); strings.Contains(l, approvalToken) || !strings.Contains(l, "API token in $TOOLGATE_APPROVAL_TOKEN") {
			t.Errorf("replica %s's start-up lines: want the token's variable named, not its value:\n%s", name, l)
		}
		out = append(out, approvalReplica{name: name, mcp: u, page: page})
	}
	return out
}

type pendingEntry struct {
	ID        string          `json:"id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Pretty    string          `json:"pretty"`
	Replica   string          `json:"replica"`
	Rule      string          `json:"rule"`
	Since     time.Time       `json:"since"`
}

// pendingOn waits (bounded by ctx) until the page at addr lists n calls.
func pendingOn(t *testing.T, ctx context.Context, addr string, n int) []pendingEntry {
	t.Helper()
	for {
		resp, err := http.Get("http://" + addr + "/api/pending")
		if err != nil {
			t.Fatal(err)
		}
		var list []pendingEntry
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if err == nil && len(list) == n {
			return list
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the page at %s lists %d calls (%v), want %d", addr, len(list), err, n)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// decideOn posts a decision to the page at addr and returns its status and
// JSON body.
func decideOn(t *testing.T, addr, id, decision, reason string) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"id": id, "decision": decision, "reason": reason})
	req, _ := http.NewRequest("POST", "http://"+addr+"/api/decide", strings.NewReader(string(b)))
	req.Header.Set("X-Toolgate-Token", approvalToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Errorf("decide on %s: %d, not JSON: %s", addr, resp.StatusCode, raw)
	}
	return resp.StatusCode, body
}

// callAsync calls execute_command on the replica through a go-sdk client.
func callAsync(t *testing.T, ctx context.Context, endpoint, command string) chan *mcp.CallToolResult {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "approvals-replicas", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_command", Arguments: map[string]any{"command": command}})
		if err != nil {
			t.Errorf("call %q: %v", command, err)
		}
		done <- res
	}()
	return done
}

func ended(t *testing.T, ctx context.Context, done chan *mcp.CallToolResult) *mcp.CallToolResult {
	t.Helper()
	select {
	case res := <-done:
		if res == nil {
			t.Fatal("the call failed at the protocol level")
		}
		return res
	case <-ctx.Done():
		t.Fatal("the call did not end")
	}
	return nil
}

// TestApprovalAnsweredOnAnotherReplica: a call that asks on replica A is
// listed on replica B's page (secrets redacted, named for A), approved
// there, and runs on A; a second answer to it, through either page, gets
// 409 and an unknown id 404. A denial with a reason through B reaches the
// model's result on A. Redis keeps nothing of the secret in the call.
func TestApprovalAnsweredOnAnotherReplica(t *testing.T) {
	srv := redistest.Start(t)
	reps := approvalReplicas(t, srv)
	a, b := reps[0], reps[1]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	done := callAsync(t, ctx, a.mcp, "cat a.txt # "+ghToken)
	list := pendingOn(t, ctx, b.page, 1)
	p := list[0]
	if p.Tool != "execute_command" || p.Replica != "replica-a" || !strings.Contains(p.Pretty, "cat a.txt") {
		t.Errorf("B lists %+v", p)
	}
	if strings.Contains(string(p.Arguments), ghToken) || strings.Contains(p.Pretty, ghToken) || !strings.Contains(string(p.Arguments), "[REDACTED:github_token]") {
		t.Errorf("B shows the secret, or no redaction: %s", p.Arguments)
	}
	if on := pendingOn(t, ctx, a.page, 1); on[0].ID != p.ID {
		t.Errorf("A lists %+v, B %+v", on, list)
	}
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rc.Close()
	keys, err := rc.Keys(ctx, "*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatal(keys, err)
	}
	for _, k := range keys {
		if v, _ := rc.Dump(ctx, k).Result(); strings.Contains(k+v, ghToken[4:]) {
			t.Errorf("Redis key %q holds the secret", k)
		}
	}

	if code, body := decideOn(t, b.page, p.ID, "once", ""); code != http.StatusOK {
		t.Fatalf("approving on B: %d %v", code, body)
	}
	if res := ended(t, ctx, done); res.IsError || !strings.Contains(text(res), "hello from toolgate") {
		t.Errorf("approved on B, A's call: %s", text(res))
	}
	for _, r := range []approvalReplica{b, a} {
		if code, body := decideOn(t, r.page, p.ID, "deny", "too late"); code != http.StatusConflict || body["error"] == nil {
			t.Errorf("a second answer through %s: %d %v, want 409 with an error", r.name, code, body)
		}
	}
	for _, id := range []string{"no-such-call", "../" + p.ID, strings.Repeat("x", 100)} {
		if code, body := decideOn(t, b.page, id, "once", ""); code != http.StatusNotFound || body["error"] == nil {
			t.Errorf("answering %q: %d %v, want 404 with an error", id, code, body)
		}
	}
	pendingOn(t, ctx, b.page, 0)

	// a denial with a reason, through B
	done = callAsync(t, ctx, a.mcp, "cat b.txt")
	p = pendingOn(t, ctx, b.page, 1)[0]
	if code, body := decideOn(t, b.page, p.ID, "deny", "read it with read_file instead"); code != http.StatusOK {
		t.Fatalf("denying on B: %d %v", code, body)
	}
	if res := ended(t, ctx, done); !res.IsError || !strings.Contains(text(res), "read it with read_file instead") || !strings.Contains(text(res), "approval_denied") {
		t.Errorf("denied on B, A's call: %s", text(res))
	}

	// the page of A answers a call B holds
	done = callAsync(t, ctx, b.mcp, "cat a.txt")
	p = pendingOn(t, ctx, a.page, 1)[0]
	if p.Replica != "replica-b" {
		t.Errorf("A lists %+v", p)
	}
	if code, body := decideOn(t, a.page, p.ID, "once", ""); code != http.StatusOK {
		t.Fatalf("approving on A: %d %v", code, body)
	}
	if res := ended(t, ctx, done); res.IsError {
		t.Errorf("approved on A, B's call: %s", text(res))
	}
}

// TestApprovalWaitEndsWhenRedisDies: Redis killed while a call waits for
// approval ends the call (no hang) with a structured, retryable
// unavailable error under on_error deny; the pages say the queue cannot
// be reached; once Redis is back, calls are asked and answered across
// replicas again without a restart.
func TestApprovalWaitEndsWhenRedisDies(t *testing.T) {
	srv := redistest.Start(t)
	reps := approvalReplicas(t, srv)
	a, b := reps[0], reps[1]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	done := callAsync(t, ctx, a.mcp, "cat a.txt")
	pendingOn(t, ctx, b.page, 1)
	srv.Kill()
	res := ended(t, ctx, done)
	var e struct {
		Type      string `json:"type"`
		Retryable bool   `json:"retryable"`
	}
	sc, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(sc, &e)
	if !res.IsError || e.Type != "unavailable" || !e.Retryable || !strings.Contains(text(res), "approval") {
		t.Errorf("the waiting call, Redis killed: %+v %s, want a retryable unavailable error about the approval", e, text(res))
	}
	resp, err := http.Get("http://" + b.page + "/api/pending")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("B's pending list while Redis is down: %d, want 503", resp.StatusCode)
	}
	// a call asked while Redis is down is refused at once, not queued
	if res := ended(t, ctx, callAsync(t, ctx, a.mcp, "cat b.txt")); !res.IsError || !strings.Contains(text(res), "unavailable") {
		t.Errorf("a call asked while Redis is down: %s", text(res))
	}

	srv.Restart()
	// A call asked before the replicas reach Redis again is refused as
	// unavailable: ask until one is listed, then answer it on B.
	for range 20 {
		done = callAsync(t, ctx, a.mcp, "cat a.txt")
		list, res := listedOrEnded(t, ctx, b.page, done)
		if res != nil {
			if !res.IsError || !strings.Contains(text(res), "unavailable") {
				t.Fatalf("after the restart, neither listed nor unavailable: %s", text(res))
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if code, body := decideOn(t, b.page, list[0].ID, "once", ""); code != http.StatusOK {
			t.Fatalf("after the restart, approving on B: %d %v", code, body)
		}
		if res := ended(t, ctx, done); res.IsError {
			t.Errorf("after the restart: %s", text(res))
		}
		return
	}
	t.Fatal("after the restart, no call was listed")
}

// listedOrEnded waits until the page at addr lists a call or the call
// done ends.
func listedOrEnded(t *testing.T, ctx context.Context, addr string, done chan *mcp.CallToolResult) ([]pendingEntry, *mcp.CallToolResult) {
	t.Helper()
	for {
		select {
		case res := <-done:
			return nil, res
		case <-ctx.Done():
			t.Fatal("the call was neither listed nor ended")
		case <-time.After(50 * time.Millisecond):
		}
		resp, err := http.Get("http://" + addr + "/api/pending")
		if err != nil {
			t.Fatal(err)
		}
		var list []pendingEntry
		if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&list) == nil && len(list) > 0 {
			resp.Body.Close()
			return list, nil
		}
		resp.Body.Close()
	}
}

// stateKey is the secret both replicas seal approval states with
// (approvals.state_key_env).
const stateKey = "a secret both replicas seal approval states with"

// inputReplicas starts two stateless replicas sharing srv that ask
// clients of protocol 2026-07-28 through input requests (no approval page).
func inputReplicas(t *testing.T, srv *redistest.Server) []string {
	t.Helper()
	root, _ := serveWorkspace(t)
	dir := t.TempDir()
	t.Setenv("TOOLGATE_APPROVAL_STATE_KEY", stateKey)
	pol := filepath.Join(dir, "toolgate.yaml")
	body := fmt.Sprintf("approvals:\n  state_key_env: TOOLGATE_APPROVAL_STATE_KEY\nstate:\n  redis:\n    url: %s\n", srv.URL())
	if err := os.WriteFile(pol, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, name := range []string{"a", "b"} {
		urls = append(urls, startHTTP(t, "serve", "--root", root, "--policy", pol, "--audit", filepath.Join(dir, name+".jsonl"), "--http", "127.0.0.1:0", "--stateless"))
	}
	return urls
}

// TestApprovalAsInputRequest: on stateless replicas, a go-sdk client of
// protocol 2026-07-28 is asked by its own user: the call ends with an
// input request, the SDK asks the elicitation handler and calls again with
// the answer and the sealed state, and the call runs (or is denied, with
// the user's reason). An older client is not asked that way.
func TestApprovalAsInputRequest(t *testing.T) {
	srv := redistest.Start(t)
	urls := inputReplicas(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name   string
		answer *mcp.ElicitResult
		ok     bool
		want   string
	}{
		{"approved once", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, true, "hello from toolgate"},
		{"denied with a reason", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "deny", "reason": "use read_file"}}, false, "use read_file"},
		{"declined", &mcp.ElicitResult{Action: "decline"}, false, "declined"},
		{"dismissed", &mcp.ElicitResult{Action: "cancel"}, false, "dismissed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []string
			c := mcp.NewClient(&mcp.Implementation{Name: "input-requests", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params.Message)
					return tc.answer, nil
				},
			})
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: urls[0]}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_command", Arguments: map[string]any{"command": "cat a.txt"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(asked) != 1 || !strings.Contains(asked[0], "execute_command") || !strings.Contains(asked[0], "cat a.txt") {
				t.Errorf("the user was asked %q", asked)
			}
			if res.IsError == tc.ok || !strings.Contains(text(res), tc.want) {
				t.Errorf("result: %s", text(res))
			}
		})
	}

	// A client of 2025-11-25 on a stateless server cannot be asked: nothing
	// is elicited, and the call does not run (it is refused, or waits for
	// an approval page: then the client gives up).
	elicited := false
	old := mcp.NewClient(&mcp.Implementation{Name: "old", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited = true
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, nil
		},
	})
	cs, err := old.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: urls[0]}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	octx, ocancel := context.WithTimeout(ctx, 10*time.Second)
	defer ocancel()
	res, err := cs.CallTool(octx, &mcp.CallToolParams{Name: "execute_command", Arguments: map[string]any{"command": "cat a.txt"}})
	if elicited || err == nil && (!res.IsError || res.NeedsInput()) {
		t.Errorf("an old client: %v %+v, elicited %v", err, res, elicited)
	}
}

// TestInputRequestStateAcrossReplicas: a client that retries by hand
// (the SDK's retry turned off) gets the sealed state from replica A and
// answers on replica B; the state then works nowhere again, and never for
// another call, principal or a forged state.
func TestInputRequestStateAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	urls := inputReplicas(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var sessions []*mcp.ClientSession
	for _, u := range urls {
		c := mcp.NewClient(&mcp.Implementation{Name: "by-hand", Version: "1"}, &mcp.ClientOptions{
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				t.Error("the SDK answered an input request by itself")
				return nil, fmt.Errorf("no")
			},
		})
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		sessions = append(sessions, cs)
	}
	a, b := sessions[0], sessions[1]
	args := map[string]any{"command": "cat a.txt"}
	ask := func(cs *mcp.ClientSession, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_command", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		if !res.NeedsInput() || res.RequestState == "" || res.InputRequests["toolgate/approval"] == nil {
			t.Fatalf("no input request: %s %+v", text(res), res)
		}
		return res.RequestState
	}
	// Each answer names a conversation of its own, so that the refusals
	// below do not open the denial breaker of one.
	n := 0
	answer := func(cs *mcp.ClientSession, args map[string]any, state string) *mcp.CallToolResult {
		t.Helper()
		n++
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"toolgate/conversation": fmt.Sprint("c", n)}, Name: "execute_command", Arguments: args, RequestState: state,
			InputResponses: mcp.InputResponseMap{"toolgate/approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	state := ask(a, args)
	if res := answer(b, args, state); res.IsError || !strings.Contains(text(res), "hello from toolgate") {
		t.Fatalf("answered on B: %s", text(res))
	}
	for i, cs := range []*mcp.ClientSession{a, b} {
		if res := answer(cs, args, state); !res.IsError || !strings.Contains(text(res), "used already") || strings.Contains(text(res), "hello from toolgate") {
			t.Errorf("the state again on replica %d: %s", i, text(res))
		}
	}

	state = ask(a, args)
	forged := []byte(state)
	forged[len(forged)/2] ^= 1
	for name, tc := range map[string]struct {
		args  map[string]any
		state string
		want  string
	}{
		"other arguments": {map[string]any{"command": "cat b.txt"}, state, "another call"},
		"forged state":    {args, string(forged), "not sealed by this server"},
		"no state":        {args, "", "not sealed by this server"},
	} {
		if res := answer(b, tc.args, tc.state); !res.IsError || !strings.Contains(text(res), tc.want) || strings.Contains(text(res), "hello from toolgate") {
			t.Errorf("%s: %s", name, text(res))
		}
	}
	if res := answer(a, args, state); res.IsError { // refused attempts did not use it up
		t.Errorf("the state after refused attempts: %s", text(res))
	}
}
