package policy

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestMemoryLimitsForgets: what expired is dropped as the store grows, so
// that callers passing through leave a bounded store behind, and what is
// live is kept.
func TestMemoryLimitsForgets(t *testing.T) {
	m := &MemoryLimits{}
	ctx := context.Background()
	live := Take{Key: "rate:live", Every: time.Hour, Burst: 1}
	if v, _ := m.Admit(ctx, Admission{Buckets: []Take{live}}); v.Outcome != Admitted {
		t.Fatalf("first call: %+v", v)
	}
	for i := range 100_000 {
		id := fmt.Sprint(i)
		// Each caller's history, failure, bucket and streak are over
		// before the next caller comes (a window and a refill of 1 ns).
		a := Admission{Calls: "loop:" + id, Failure: "failed:" + id, Key: "k", Max: 5, Window: time.Nanosecond, Cycles: 3, History: 256,
			Buckets: []Take{{Key: "rate:" + id, Every: time.Nanosecond, Burst: 1}}}
		if v, err := m.Admit(ctx, a); err != nil || v.Outcome != Admitted {
			t.Fatalf("caller %d: %+v, %v", i, v, err)
		}
		m.Failed(ctx, "failed:"+id, []byte("{}"), time.Nanosecond)
		m.Refused(ctx, "breaker:"+id, time.Now().Add(-48*time.Hour), time.Nanosecond)
	}
	if n := m.len(); n > 4*maxSessions {
		t.Errorf("%d entries kept after 100000 callers that expired, want at most %d", n, 4*maxSessions)
	}
	if v, _ := m.Admit(ctx, Admission{Buckets: []Take{live}}); v.Outcome != Limited {
		t.Errorf("a live bucket was forgotten: %+v", v)
	}
}
