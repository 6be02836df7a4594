package heapfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// Keep makes the collector, from its next cycle on, let at least floor
// bytes be allocated between cycles (GOGC = max(100, floor / live heap)).
func Keep(floor uint64) {
	if os.Getenv("GOGC") != "" || floor == 0 {
		return
	}
	k := &keeper{floor: floor, percent: 100, live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	k.adjust()
	k.arm()
}

type keeper struct {
	floor   uint64
	percent int
	live    []metrics.Sample
}

// sentinel is an object that the next cycle finds unreachable, which
// runs its finalizer after the cycle.
type sentinel struct{ k *keeper }

// arm adjusts GOGC after the next cycle, and arms again.
func (k *keeper) arm() {
	runtime.SetFinalizer(&sentinel{k}, func(s *sentinel) {
		s.k.adjust()
		s.k.arm()
	})
}

// adjust sets GOGC for what the last cycle left live.
func (k *keeper) adjust() {
	metrics.Read(k.live)
	p := percent(k.floor, k.live[0].Value.Uint64())
	if p != k.percent {
		debug.SetGCPercent(p)
		k.percent = p
	}
}

// percent is the GOGC that lets the heap grow by floor over live, rounded
// up to a multiple of 50 (few changes), and 100 at least.
func percent(floor, live uint64) int {
	if live == 0 || floor <= live {
		return 100
	}
	p := (floor*100/live + 49) / 50 * 50
	return int(min(p, 1<<20))
}
