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
