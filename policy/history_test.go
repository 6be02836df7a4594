package policy

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"
)

// TestHistoryCount: the count of each key kept beside a session's calls is
// the count of those calls, whatever is added and forgotten (the loop guard
// reads it instead of counting the calls each time).
func TestHistoryCount(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		h := &history{count: map[string]int{}, failed: map[string]*past{}}
		keys := 1 + r.IntN(12)
		for op := range 2000 {
			if r.IntN(5) == 0 && len(h.calls) > 0 {
				h.forget(r.IntN(len(h.calls) + 1))
			} else {
				h.add(past{key: fmt.Sprint("k", r.IntN(keys)), at: time.Unix(int64(op), 0)})
			}
			want := map[string]int{}
			for _, c := range h.calls {
				want[c.key]++
			}
			if !maps.Equal(h.count, want) {
				t.Fatalf("round %d, op %d: count %v, want %v", round, op, h.count, want)
			}
			if len(h.calls) > maxHistory {
				t.Fatalf("round %d, op %d: %d calls kept, want at most %d", round, op, len(h.calls), maxHistory)
			}
		}
	}
}
