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
	k := &keeper{floor: floor, percent: 100, live: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"},
	}}
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
	var v [3]uint64 // live heap, stacks and globals scanned
	for i, s := range k.live {
		if s.Value.Kind() == metrics.KindUint64 {
			v[i] = s.Value.Uint64()
		}
	}
	p := percent(k.floor, v[0], v[0]+v[1]+v[2])
	if p != k.percent {
		debug.SetGCPercent(p)
		k.percent = p
	}
}

// heapMinimum is the least goal the collector sets with GOGC 100 (the
// runtime's defaultHeapMinimum); with GOGC p, it is p% of it.
const heapMinimum = 4 << 20

// percent is the GOGC that lets the heap grow by floor over live, rounded
// up to a multiple of 50 (few changes), and 100 at least. The collector's
// goal is the live heap plus GOGC% of what the cycle scanned (the live
// heap, stacks and globals), and GOGC% of heapMinimum at least: percent
// is the smaller of the GOGCs that make either live + floor. Counting the
// heap alone, a small heap (a program's first cycles: toolgate serve's 1
// MB) got a GOGC whose minimum goal was several floors (102 MB), and the
// scavenger then returned what the next cycles, with the goal at the floor
// again, faulted back in.
func percent(floor, live, scanned uint64) int {
	if live == 0 || floor <= scanned {
		return 100 // no cycle yet, or the floor reached: Go's default
	}
	p := min(floor*100/scanned, (live+floor)*100/heapMinimum)
	return int(min(max((p+49)/50*50, 100), 1<<20))
}
