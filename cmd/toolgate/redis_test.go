package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/internal/redistest"
)

// sharedPolicy writes a policy with a budget of two calls per tool and,
// unless url is "", state.redis at url.
func sharedPolicy(t *testing.T, ws, url string) string {
	p := filepath.Join(filepath.Dir(ws), "toolgate.yaml")
	src := "limits:\n  tools:\n    \"*\": {per_second: 0.001, burst: 2}\n"
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
