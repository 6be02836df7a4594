package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/redistest"
)

// sharedPolicy writes a policy with a budget of two calls per tool and,
// unless url is "", state.redis at url.
func sharedPolicy(t *testing.T, ws, url string) string {
	return sharedPolicyBudget(t, ws, url, 2)
}

func sharedPolicyBudget(t *testing.T, ws, url string, burst int) string {
	p := filepath.Join(filepath.Dir(ws), "toolgate.yaml")
	src := fmt.Sprintf("limits:\n  tools:\n    \"*\": {per_second: 0.001, burst: %d}\n", burst)
	if url != "" {
		// A prefix per workspace: each test starts with an empty budget.
		src += fmt.Sprintf("state:\n  redis:\n    url: %s\n    prefix: \"%s:\"\n", url, filepath.Base(filepath.Dir(ws)))
	}
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCallsShareLimitsThroughRedis: every `toolgate call` is its own
// process; with state.redis they spend one budget, without it each has
// its own.
func TestCallsShareLimitsThroughRedis(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		url     string
		granted int
	}{{"", 4}, {srv.URL(), 2}} {
		ws := workspace(t)
		os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\nb\nc\nd\n"), 0o644)
		pol := sharedPolicy(t, ws, tc.url)
		granted := 0
		for i := range 4 {
			r := toolgate(t, ws, "", "call", "read_file", fmt.Sprintf(`{"path":"a.txt","offset":%d}`, i+1), "--policy", pol, "--audit", "off")
			out := parseCall(t, r)
			switch {
			case r.code == 0:
				granted++
			case out.Error == nil || out.Error.Type != "rate_limited" || !out.Error.Retryable:
				t.Errorf("call %d: %d %s %s", i+1, r.code, r.stdout, r.stderr)
			}
		}
		if granted != tc.granted {
			t.Errorf("state.redis %q: %d of 4 calls granted, want %d", tc.url, granted, tc.granted)
		}
	}
}

// TestIdempotentCallRunsOnceAcrossProcesses: two processes send the same
// edit (not idempotent by nature: a second run finds nothing to replace)
// with the same idempotency key at once; one runs it, the other gets its
// result.
func TestIdempotentCallRunsOnceAcrossProcesses(t *testing.T) {
	srv := redistest.Start(t)
	for round := range 4 {
		ws := workspace(t)
		os.WriteFile(filepath.Join(ws, "counter.txt"), []byte("counter 0\n"), 0o644)
		pol := sharedPolicy(t, ws, srv.URL())
		var wg sync.WaitGroup
		outs := make([]callOutput, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := toolgate(t, ws, "", "call", "edit_file", `{"path":"counter.txt","edits":[{"old_string":"counter 0","new_string":"counter 1"}]}`,
					"--policy", pol, "--audit", "off", "--idempotency-key", fmt.Sprint("deploy-", round))
				outs[i] = parseCall(t, r)
				if r.code != 0 {
					t.Errorf("round %d, process %d: %d %s %s", round, i, r.code, r.stdout, r.stderr)
				}
			}()
		}
		wg.Wait()
		if replays := btoi(outs[0].Meta["idempotent_replay"] == true) + btoi(outs[1].Meta["idempotent_replay"] == true); replays != 1 {
			t.Errorf("round %d: %d replays, want 1: %+v", round, replays, outs)
		}
		if len(outs[0].Content) == 0 || len(outs[1].Content) == 0 || outs[0].Content[0].Text != outs[1].Content[0].Text {
			t.Errorf("round %d: the replay differs from the result: %+v", round, outs)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "counter.txt")); string(b) != "counter 1\n" {
			t.Errorf("round %d: counter.txt holds %q", round, b)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRedisDownRefusesCalls: under on_error deny (the default) a call
// while Redis is down is refused as unavailable, and runs once it is back.
func TestRedisDownRefusesCalls(t *testing.T) {
	srv := redistest.Start(t)
	ws := workspace(t)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	pol := sharedPolicy(t, ws, srv.URL())
	srv.Kill()
	r := toolgate(t, ws, "", "call", "read_file", `{"path":"a.txt"}`, "--policy", pol, "--audit", "off")
	if out := parseCall(t, r); r.code != 1 || out.Error == nil || out.Error.Type != "unavailable" || !out.Error.Retryable {
		t.Errorf("Redis down: %d %s %s", r.code, r.stdout, r.stderr)
	}
	srv.Restart()
	if r := toolgate(t, ws, "", "call", "read_file", `{"path":"a.txt"}`, "--policy", pol, "--audit", "off"); r.code != 0 {
		t.Errorf("Redis back: %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// TestServeReplicasShareOneBudget: two `toolgate serve --http` replicas,
// each with its own audit log, share one Redis; 64 concurrent callers
// spread over both get exactly the budget, and every call is a record in
// the audit log of the replica that answered it.
func TestServeReplicasShareOneBudget(t *testing.T) {
	srv := redistest.Start(t)
	root, _ := serveWorkspace(t)
	const budget = 30
	pol := sharedPolicyBudget(t, filepath.Join(t.TempDir(), "ws"), srv.URL(), budget)
	var audits []string
	var sessions []*mcp.ClientSession
	ctx := context.Background()
	for r := range 2 {
		audits = append(audits, filepath.Join(t.TempDir(), fmt.Sprintf("audit-%d.jsonl", r)))
		u := startHTTP(t, "serve", "--root", root, "--policy", pol, "--audit", audits[r], "--http", "127.0.0.1:0")
		for range 4 { // clients per replica
			c := mcp.NewClient(&mcp.Implementation{Name: "replica-test", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			sessions = append(sessions, cs)
		}
	}
	var granted, limited atomic.Int64
	var wg sync.WaitGroup
	for c := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 4 {
				ctx, cancel := context.WithTimeout(ctx, time.Minute)
				res, err := sessions[(c+j)%len(sessions)].CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt", "limit": c*4 + j + 1}})
				cancel()
				switch {
				case err != nil:
					t.Errorf("caller %d: %v", c, err)
				case !res.IsError:
					granted.Add(1)
				case strings.Contains(text(res), "rate_limited"):
					limited.Add(1)
				default:
					t.Errorf("caller %d: %s", c, text(res))
				}
			}
		}()
	}
	wg.Wait()
	if granted.Load() != budget || limited.Load() != 64*4-budget {
		t.Errorf("granted %d, rate limited %d across two replicas; want exactly %d granted", granted.Load(), limited.Load(), budget)
	}
	records := 0
	for _, a := range audits {
		b, err := os.ReadFile(a)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var rec struct{ Tool string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Tool == "read_file" {
				records++
			}
		}
	}
	if records != 64*4 {
		t.Errorf("%d read_file records in the two audit logs, want %d", records, 64*4)
	}
}

// TestLoopAcrossProcessesThroughRedis: the same call repeated by
// processes in turn, in one conversation (--session), is caught on the
// sixth, as in one process; another conversation is not.
func TestLoopAcrossProcessesThroughRedis(t *testing.T) {
	srv := redistest.Start(t)
	ws := workspace(t)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	pol := sharedPolicyBudget(t, ws, srv.URL(), 100)
	for i := 1; i <= 6; i++ {
		r := toolgate(t, ws, "", "call", "read_file", `{"path":"a.txt"}`, "--policy", pol, "--audit", "off", "--session", "conv-1", "--principal", "agent")
		out := parseCall(t, r)
		switch {
		case i < 6 && r.code != 0:
			t.Fatalf("call %d refused: %s", i, r.stdout)
		case i == 6 && (out.Error == nil || out.Error.Type != "loop_detected"):
			t.Fatalf("call 6 not caught as a loop: %d %s", r.code, r.stdout)
		}
	}
	if r := toolgate(t, ws, "", "call", "read_file", `{"path":"a.txt"}`, "--policy", pol, "--audit", "off", "--session", "conv-2", "--principal", "agent"); r.code != 0 {
		t.Errorf("another conversation: %d %s", r.code, r.stdout)
	}
}

// TestRedisPasswordFromEnvironment: the password comes from the variable
// password_env names; unset, the command stops with a usage error naming
// it; a wrong one makes calls unavailable, never unguarded.
func TestRedisPasswordFromEnvironment(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "s3cret")
	ws := workspace(t)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	pol := filepath.Join(filepath.Dir(ws), "pw.yaml")
	os.WriteFile(pol, []byte(fmt.Sprintf("state:\n  redis:\n    url: %s\n    password_env: TG_TEST_REDIS_PW\n", srv.URL())), 0o644)
	os.Unsetenv("TG_TEST_REDIS_PW")
	r := toolgate(t, ws, "", "call", "read_file", `{"path":"a.txt"}`, "--policy", pol, "--audit", "off")
	if r.code != 2 || !strings.Contains(r.stderr, "TG_TEST_REDIS_PW") {
		t.Errorf("password variable unset: exit %d, %s", r.code, r.stderr)
	}
	t.Setenv("TG_TEST_REDIS_PW", "wrong")
	r = toolgate(t, ws, "", "call", "read_file", `{"path":"a.txt"}`, "--policy", pol, "--audit", "off")
	if out := parseCall(t, r); r.code != 1 || out.Error == nil || out.Error.Type != "unavailable" {
		t.Errorf("a refused password: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
	t.Setenv("TG_TEST_REDIS_PW", "s3cret")
	if r := toolgate(t, ws, "", "call", "read_file", `{"path":"a.txt"}`, "--policy", pol, "--audit", "off"); r.code != 0 {
		t.Errorf("the right password: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
}

// TestRedisOutageIsAudited: under on_error allow a replica whose Redis goes
// away keeps serving under its own limits, and its audit log says when
// that began and ended (once per outage, however many calls ran then).
func TestRedisOutageIsAudited(t *testing.T) {
	srv := redistest.Start(t)
	root, _ := serveWorkspace(t)
	pol := sharedPolicyBudget(t, filepath.Join(t.TempDir(), "ws"), srv.URL(), 100)
	b, _ := os.ReadFile(pol)
	os.WriteFile(pol, append(b, "    on_error: allow\n"...), 0o644)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	u := startHTTP(t, "serve", "--root", root, "--policy", pol, "--audit", log, "--http", "127.0.0.1:0")
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "outage-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(n int) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt", "limit": n}})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %s", n, err, text(res))
		}
	}
	call(1)
	srv.Kill()
	call(2) // Redis down: on_error allow runs it under local limits
	call(3)
	srv.Restart()
	call(4)

	var got []string
	data, _ := os.ReadFile(log)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec struct{ Tool, Outcome, Rule, Mode string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Tool == "sandbox" {
			continue // the sandbox's level, recorded at start
		}
		got = append(got, rec.Tool+":"+rec.Outcome)
		if rec.Tool == "state.redis" && (rec.Mode != "on_error: allow" || (rec.Outcome == "outage" && !strings.Contains(rec.Rule, "own limits"))) {
			t.Errorf("outage record: %s", line)
		}
	}
	want := "read_file:ok state.redis:outage read_file:ok read_file:ok state.redis:recovered read_file:ok"
	if strings.Join(got, " ") != want {
		t.Errorf("audit log holds\n %s\nwant\n %s", strings.Join(got, " "), want)
	}
	if r := toolgate(t, root, "", "audit", "verify", log); r.code != 0 {
		t.Errorf("verify: %s", r.stdout)
	}
}
