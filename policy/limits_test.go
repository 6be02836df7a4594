package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

func lcall(name, args, session, principal string) tool.Call {
	return tool.Call{Name: name, Args: json.RawMessage(args), Session: session, Principal: principal}
}

func TestRateLimitGrantsExactlyTheBudget(t *testing.T) {
	l := policy.NewLimiter(policy.LimitConfig{
		Tools: map[string]policy.Rate{"search_*": {PerSecond: 0.001, Burst: 10}},
		Loop:  policy.LoopConfig{Off: true},
	})
	def := tool.Definition{Name: "search_files"}
	var granted, refused atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for j := 0; j < 4; j++ {
				release, err := l.Acquire(context.Background(), lcall("search_files", fmt.Sprintf(`{"q":%d}`, j), "", ""), def)
				if err != nil {
					if err.Type != tool.RateLimited || err.RetryAfter <= 0 || !err.Retryable {
						t.Errorf("refusal %+v: want rate_limited with retry_after", err)
					}
					refused.Add(1)
					continue
				}
				granted.Add(1)
				release(tool.TextResult("ok"))
			}
		}()
	}
	close(start)
	wg.Wait()
	if granted.Load() != 10 || refused.Load() != 64*4-10 {
		t.Errorf("granted %d, refused %d; want exactly 10 granted", granted.Load(), refused.Load())
	}
	// A tool no glob names is not limited.
	for i := 0; i < 50; i++ {
		if _, err := l.Acquire(context.Background(), lcall("read_file", `{}`, "", ""), tool.Definition{Name: "read_file"}); err != nil {
			t.Fatalf("unlimited tool refused: %v", err)
		}
	}
}

func TestPrincipalRateSpendsBothOrNeither(t *testing.T) {
	l := policy.NewLimiter(policy.LimitConfig{
		Tools:     map[string]policy.Rate{"*": {PerSecond: 0.001, Burst: 3}},
		Principal: policy.Rate{PerSecond: 0.001, Burst: 2},
		Loop:      policy.LoopConfig{Off: true},
	})
	def := tool.Definition{Name: "t"}
	ok := func(who string) bool {
		_, err := l.Acquire(context.Background(), lcall("t", `{}`, "", who), def)
		return err == nil
	}
	// alice spends 2 of her 2; her third is refused without spending the tool's third token.
	if !ok("alice") || !ok("alice") || ok("alice") {
		t.Fatal("alice's budget of 2 not enforced")
	}
	if !ok("bob") {
		t.Fatal("bob was refused: alice's refused call must not have spent the tool's token")
	}
	if ok("bob") {
		t.Fatal("the tool's budget of 3 was exceeded")
	}
}

func TestConcurrencyCap(t *testing.T) {
	l := policy.NewLimiter(policy.LimitConfig{Concurrency: 2, Loop: policy.LoopConfig{Off: true}})
	def := tool.Definition{Name: "slow"}
	r1, _ := l.Acquire(context.Background(), lcall("slow", `{}`, "", ""), def)
	r2, _ := l.Acquire(context.Background(), lcall("slow", `{}`, "", ""), def)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(ctx, lcall("slow", `{}`, "", ""), def); err == nil || err.Type != tool.RateLimited {
		t.Fatalf("a third concurrent call got %v, want rate_limited after waiting", err)
	}
	got := make(chan *tool.Error)
	go func() {
		_, err := l.Acquire(context.Background(), lcall("slow", `{}`, "", ""), def)
		got <- err
	}()
	r1(tool.TextResult("done"))
	if err := <-got; err != nil {
		t.Fatalf("a waiting call was not admitted when a slot freed: %v", err)
	}
	r2(tool.TextResult("done"))
}

func TestLoopGuard(t *testing.T) {
	ctx := context.Background()
	t.Run("same call too often", func(t *testing.T) {
		l := policy.NewLimiter(policy.LimitConfig{Loop: policy.LoopConfig{Max: 3}})
		def := tool.Definition{Name: "read_file"}
		for i := 0; i < 3; i++ {
			// Key order and spacing do not make a call different.
			args := []string{`{"path":"a","limit":5}`, `{"limit":5, "path":"a"}`, `{ "path" : "a" , "limit" : 5 }`}[i]
			release, err := l.Acquire(ctx, lcall("read_file", args, "s1", ""), def)
			if err != nil {
				t.Fatalf("call %d refused: %v", i+1, err)
			}
			release(tool.TextResult("x"))
		}
		_, err := l.Acquire(ctx, lcall("read_file", `{"path":"a","limit":5}`, "s1", ""), def)
		if err == nil || err.Type != tool.LoopDetected {
			t.Fatalf("4th identical call: %v, want loop_detected", err)
		}
		if _, err := l.Acquire(ctx, lcall("read_file", `{"path":"a","limit":5}`, "s2", ""), def); err != nil {
			t.Errorf("another session is not in the loop: %v", err)
		}
		if _, err := l.Acquire(ctx, lcall("read_file", `{"path":"b","limit":5}`, "s1", ""), def); err != nil {
			t.Errorf("different arguments are a different call: %v", err)
		}
	})
	t.Run("A-B-A-B cycle", func(t *testing.T) {
		l := policy.NewLimiter(policy.LimitConfig{Loop: policy.LoopConfig{Max: 100, Cycles: 3}})
		seq := []string{"a", "b", "a", "b", "a"}
		for i, name := range seq {
			release, err := l.Acquire(ctx, lcall(name, `{}`, "s", ""), tool.Definition{Name: name})
			if err != nil {
				t.Fatalf("call %d (%s) refused: %v", i+1, name, err)
			}
			release(tool.TextResult("x"))
		}
		_, err := l.Acquire(ctx, lcall("b", `{}`, "s", ""), tool.Definition{Name: "b"})
		if err == nil || err.Type != tool.LoopDetected {
			t.Fatalf("the third A-B round: %v, want loop_detected", err)
		}
	})
	t.Run("cycles beyond the history never fire", func(t *testing.T) {
		// 2^62 once overflowed the look back and panicked every call.
		for _, cycles := range []string{"129", "1000000", "4611686018427387904"} {
			p, err := policy.Parse([]byte("limits:\n  loop: {max: 1000, cycles: " + cycles + "}\n"))
			if err != nil {
				t.Fatal(err)
			}
			l := policy.NewLimiter(p.Limits.Config())
			for i := 0; i < 600; i++ { // a-b 300 times: more than the history holds
				name := string(rune('a' + i%2))
				release, err := l.Acquire(ctx, lcall(name, `{}`, "s", ""), tool.Definition{Name: name})
				if err != nil {
					t.Fatalf("cycles %s: call %d (%s) refused: %v", cycles, i+1, name, err)
				}
				release(tool.TextResult("x"))
			}
		}
	})
	t.Run("the most cycles that can fire", func(t *testing.T) {
		p, err := policy.Parse([]byte("limits:\n  loop: {max: 1000, cycles: 128}\n"))
		if err != nil {
			t.Fatal(err)
		}
		l := policy.NewLimiter(p.Limits.Config())
		for i := 0; i < 255; i++ { // a-b 127 times and a
			name := string(rune('a' + i%2))
			release, err := l.Acquire(ctx, lcall(name, `{}`, "s", ""), tool.Definition{Name: name})
			if err != nil {
				t.Fatalf("call %d (%s) refused: %v", i+1, name, err)
			}
			release(tool.TextResult("x"))
		}
		_, terr := l.Acquire(ctx, lcall("b", `{}`, "s", ""), tool.Definition{Name: "b"})
		if terr == nil || terr.Type != tool.LoopDetected {
			t.Fatalf("the 128th A-B round: %v, want loop_detected", terr)
		}
	})
	t.Run("repeat of a failed call", func(t *testing.T) {
		l := policy.NewLimiter(policy.LimitConfig{})
		def := tool.Definition{Name: "edit_file"}
		c := lcall("edit_file", `{"path":"a","old":"x"}`, "s", "")
		release, err := l.Acquire(ctx, c, def)
		if err != nil {
			t.Fatal(err)
		}
		release(tool.ErrorResult(tool.Errorf(tool.NotFound, "old_string not found")))
		_, err = l.Acquire(ctx, c, def)
		if err == nil || err.Type != tool.NotFound || err.Details["repeated_failure"] != true {
			t.Fatalf("the same failing call again: %+v, want the recorded not_found", err)
		}
		// A retryable failure may be retried.
		c2 := lcall("edit_file", `{"path":"b"}`, "s", "")
		release, _ = l.Acquire(ctx, c2, def)
		release(tool.ErrorResult(tool.Errorf(tool.Unavailable, "busy").WithRetry(0)))
		if _, err := l.Acquire(ctx, c2, def); err != nil {
			t.Errorf("retry after a retryable failure refused: %v", err)
		}
	})
}

// TestLoopGuardDefault: with the default configuration calls 1-5 of the
// same call run and the 6th is loop_detected (the attack corpus's rule).
func TestLoopGuardDefault(t *testing.T) {
	l := policy.NewLimiter(policy.LimitConfig{})
	def := tool.Definition{Name: "read_file"}
	for i := 1; i <= 6; i++ {
		release, err := l.Acquire(context.Background(), lcall("read_file", `{"path":"README.md"}`, "s", ""), def)
		if i <= 5 {
			if err != nil {
				t.Fatalf("call %d refused: %v", i, err)
			}
			release(tool.TextResult("x"))
			continue
		}
		if err == nil || err.Type != tool.LoopDetected {
			t.Fatalf("call 6: %v; want loop_detected", err)
		}
	}
}

// TestLoopGuardProgress: a call whose result says it made progress
// (tool.MetaProgress: a read that waited or got new output) is not a
// repeat, however often the same arguments come; one without it is.
func TestLoopGuardProgress(t *testing.T) {
	l := policy.NewLimiter(policy.LimitConfig{})
	def := tool.Definition{Name: "read_process"}
	args := `{"id":"p-1","cursor":10,"wait_ms":5000}`
	for i := 1; i <= 100; i++ {
		release, err := l.Acquire(context.Background(), lcall("read_process", args, "s", ""), def)
		if err != nil {
			t.Fatalf("waiting read %d refused: %v", i, err)
		}
		res := tool.TextResult("(no new output)")
		res.SetMeta(tool.MetaProgress, true)
		release(res)
	}
	for i := 1; i <= 6; i++ {
		release, err := l.Acquire(context.Background(), lcall("read_process", args, "s", ""), def)
		if i == 6 {
			if err == nil || err.Type != tool.LoopDetected {
				t.Fatalf("the sixth read without progress: %v", err)
			}
			break
		}
		if err != nil {
			t.Fatalf("read %d without progress refused: %v", i, err)
		}
		release(tool.TextResult("(no new output)"))
	}
}

// TestLoopGuardReplay: calls replayed from another process count as the
// session's history (keys canonical: the same arguments differently
// spaced are the same call); calls older than the window do not.
func TestLoopGuardReplay(t *testing.T) {
	l := policy.NewLimiter(policy.LimitConfig{})
	def := tool.Definition{Name: "read_file"}
	now := time.Now()
	l.Replay(lcall("read_file", `{"path":"README.md"}`, "s", ""), now.Add(-2*time.Minute)) // out of the window
	for i := 0; i < 5; i++ {
		l.Replay(lcall("read_file", `{ "path" : "README.md" }`, "s", ""), now.Add(time.Duration(i-10)*time.Second))
	}
	if _, err := l.Acquire(context.Background(), lcall("read_file", `{"path":"README.md"}`, "other", ""), def); err != nil {
		t.Fatalf("another session: %v", err)
	}
	if _, err := l.Acquire(context.Background(), lcall("read_file", `{"path":"README.md"}`, "s", ""), def); err == nil || err.Type != tool.LoopDetected {
		t.Fatalf("the sixth call after five replayed: %v; want loop_detected", err)
	}
	off := policy.NewLimiter(policy.LimitConfig{Loop: policy.LoopConfig{Off: true}})
	for i := 0; i < 6; i++ {
		off.Replay(lcall("read_file", `{"path":"README.md"}`, "s", ""), now)
	}
	if _, err := off.Acquire(context.Background(), lcall("read_file", `{"path":"README.md"}`, "s", ""), def); err != nil {
		t.Fatalf("loop guard off: %v", err)
	}
}

// TestLoopGuardNoArguments: a call without arguments is one call however
// it was sent (none, null, {}): replayed from the audit log (which records
// none as null), acquired raw or with the arguments the engine parsed ({}).
func TestLoopGuardNoArguments(t *testing.T) {
	forms := []string{``, `null`, ` null `, `{}`, " { }\n", "\t"}
	def := tool.Definition{Name: "list_roots"}
	for _, replayed := range forms {
		for _, sent := range forms {
			for _, parsed := range []bool{false, true} {
				l := policy.NewLimiter(policy.LimitConfig{})
				for i := 0; i < 5; i++ {
					l.Replay(lcall("list_roots", replayed, "s", ""), time.Now().Add(time.Duration(i-10)*time.Second))
				}
				call := lcall("list_roots", sent, "s", "")
				var err *tool.Error
				if parsed {
					_, err = l.AcquireArgs(context.Background(), call, def, map[string]any{})
				} else {
					_, err = l.Acquire(context.Background(), call, def)
				}
				if err == nil || err.Type != tool.LoopDetected {
					t.Errorf("replayed %q, sent %q (parsed %v): %v; want loop_detected", replayed, sent, parsed, err)
				}
			}
		}
	}
}

// TestLoopGuardCallers: the loop guard keeps one history per principal and
// session (tool.Call.Caller), whether the pair is short (looked up from
// the stack) or long; a failure is recorded in the history the call was
// counted in.
func TestLoopGuardCallers(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("p", 200)
	for _, who := range [][2]string{{"", "s1"}, {"alice", "s1"}, {long, "s1"}, {"alice", long}} {
		l := policy.NewLimiter(policy.LimitConfig{Loop: policy.LoopConfig{Max: 2}})
		def := tool.Definition{Name: "read_file"}
		for i := 0; i < 2; i++ {
			release, err := l.Acquire(ctx, lcall("read_file", `{"path":"a"}`, who[1], who[0]), def)
			if err != nil {
				t.Fatalf("%.10q: call %d refused: %v", who, i+1, err)
			}
			release(tool.TextResult("x"))
		}
		if _, err := l.Acquire(ctx, lcall("read_file", `{"path":"a"}`, who[1], who[0]), def); err == nil || err.Type != tool.LoopDetected {
			t.Errorf("%.10q: 3rd identical call: %v, want loop_detected", who, err)
		}
		if _, err := l.Acquire(ctx, lcall("read_file", `{"path":"a"}`, who[1], who[0]+"x"), def); err != nil {
			t.Errorf("%.10q: another principal is not in the loop: %v", who, err)
		}
		release, err := l.Acquire(ctx, lcall("read_file", `{"path":"f"}`, who[1], who[0]), def)
		if err != nil {
			t.Fatalf("%.10q: %v", who, err)
		}
		release(tool.ErrorResult(tool.Errorf(tool.NotFound, "no such file")))
		if _, err := l.Acquire(ctx, lcall("read_file", `{"path":"f"}`, who[1], who[0]), def); err == nil || err.Details["repeated_failure"] != true {
			t.Errorf("%.10q: a repeated failure: %v", who, err)
		}
	}
}
