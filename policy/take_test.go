package policy_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// TestLocalTakeIsAllOrNone: a call the principal's bucket refuses gives
// the tool's token back in full, however many callers take at once (a
// token given back while another caller reserves was partly lost: 15 of
// 16 granted, now and then).
func TestLocalTakeIsAllOrNone(t *testing.T) {
	slow := func(burst int) policy.Rate { return policy.Rate{PerSecond: 0.001, Burst: burst} }
	for round := range 300 {
		cfg := policy.LimitConfig{Tools: map[string]policy.Rate{"*": slow(16)}, Principal: slow(10)}
		cfg.Loop.Off = true
		got := spend(t, []*policy.Limiter{policy.NewLimiter(cfg)}, tool.Definition{Name: "x"}, func(i int) string { return fmt.Sprint("p", i%2) })
		if got != 16 {
			t.Fatalf("round %d: granted %d, want 16", round, got)
		}
	}
}

// spend has 64 callers make 4 calls each, spread over ls, and returns how
// many were granted.
func spend(t *testing.T, ls []*policy.Limiter, def tool.Definition, who func(int) string) int {
	var granted atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for j := range 4 {
				call := lcall(def.Name, fmt.Sprintf(`{"q":%d}`, j), fmt.Sprint("s", c), who(c))
				release, err := ls[(c+j)%len(ls)].Acquire(context.Background(), call, def)
				if err != nil {
					if err.Type != tool.RateLimited || !err.Retryable || err.RetryAfter <= 0 {
						t.Errorf("refusal %+v: want rate_limited with retry_after", err)
					}
					continue
				}
				granted.Add(1)
				release(tool.TextResult("ok"))
			}
		}()
	}
	close(start)
	wg.Wait()
	return int(granted.Load())
}
