package policy_test

import (
	"fmt"
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
