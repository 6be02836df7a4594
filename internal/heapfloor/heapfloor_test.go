package heapfloor

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		floor, live, scanned uint64
		want                 int
	}{
		{32 << 20, 4 << 20, 4 << 20, 800},
		{32 << 20, 16 << 20, 16 << 20, 200},
		{32 << 20, 20 << 20, 20 << 20, 200},   // 160 rounded up to a multiple of 50
		{32 << 20, 3 << 20, 3 << 20, 900},     // 875 (the minimum goal 35 MiB) rounded up; 1066 would make it 43
		{32 << 20, 1 << 20, 2 << 20, 850},     // serve's first cycle: 825 (1600 counting the heap alone: a goal of 64 MiB)
		{32 << 20, 16 << 20, 24 << 20, 150},   // stacks and globals count: 133 rounded up
		{32 << 20, 32 << 20, 32 << 20, 100},   // the floor reached: Go's default
		{32 << 20, 400 << 20, 400 << 20, 100}, // a large heap grows as without the floor
		{32 << 20, 0, 1 << 20, 100},           // no cycle yet
		{1 << 50, 1, 1, 1 << 20},              // bounded
	} {
		if got := percent(c.floor, c.live, c.scanned); got != c.want {
			t.Errorf("percent(%d, %d, %d) = %d, want %d", c.floor, c.live, c.scanned, got, c.want)
		}
	}
}

// garbage allocates n bytes that nothing keeps, in small objects, and
// returns how many cycles the collector ran meanwhile.
func garbage(n int) uint32 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var keep []byte
	for range n / 1024 {
		keep = make([]byte, 1024)
		keep[0] = 1
	}
	runtime.KeepAlive(keep)
	runtime.ReadMemStats(&after)
	return after.NumGC - before.NumGC
}

// TestKeep: with a floor of 64 MiB, 32 MiB of garbage runs the collector
// at most once (a cycle already started), where Go's default ran it
// several times (every 4 MiB at least, this test's heap being small).
// With GOGC set, Keep leaves the collector alone.
func TestKeep(t *testing.T) {
	runtime.GC()
	if n := garbage(32 << 20); n < 4 {
		t.Fatalf("without a floor 32 MiB of garbage ran %d cycles: the test shows nothing", n)
	}

	t.Setenv("GOGC", "100")
	Keep(64 << 20)
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("with GOGC set, Keep set GOGC to %d", p)
	}

	t.Setenv("GOGC", "")
	runtime.GC()
	Keep(64 << 20)
	defer debug.SetGCPercent(100)
	if n := garbage(32 << 20); n > 1 {
		t.Errorf("with a floor of 64 MiB, 32 MiB of garbage ran %d cycles", n)
	}
	runtime.GC() // the keeper adjusts after a cycle, and stays
	if n := garbage(32 << 20); n > 1 {
		t.Errorf("after a cycle, 32 MiB of garbage ran %d cycles", n)
	}
}

// TestKeepGoal: the collector's goal with the GOGC percent gives is about
// the live heap plus the floor, not a multiple of it: GOGC is a percent of
// the heap, stacks and globals together, and the goal is GOGC% of 4 MiB at
// least, so a GOGC computed from the heap alone made a small heap's goal
// several floors high (the scavenger then returned what the next cycles
// faulted in again). The keeper TestKeep armed may set GOGC after a cycle
// between the two steps: the check is taken again then.
func TestKeepGoal(t *testing.T) {
	defer debug.SetGCPercent(100)
	const floor = 32 << 20
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"},
		{Name: "/gc/scan/globals:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	var err string
	for range 5 {
		metrics.Read(s)
		live := s[0].Value.Uint64()
		scanned := live + s[1].Value.Uint64() + s[2].Value.Uint64()
		debug.SetGCPercent(percent(floor, live, scanned))
		metrics.Read(s[3:])
		goal := s[3].Value.Uint64()
		// GOGC rounds up to a multiple of 50: half of what was scanned, or
		// of heapMinimum, more.
		if most := live + floor + max(scanned, heapMinimum)/2; goal <= most && goal >= live+floor {
			return
		}
		err = fmt.Sprintf("with %d bytes live (%d scanned) and a floor of %d, the goal is %d, want %d to %d",
			live, scanned, floor, goal, live+floor, live+floor+max(scanned, heapMinimum)/2)
	}
	t.Error(err)
}
