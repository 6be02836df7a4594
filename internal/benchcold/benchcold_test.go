package benchcold

import (
	"math/rand/v2"
	"testing"
)

// TestRunReports: Run calls f once warm and then once per iteration, and
// its ns/op is f's own time, not the sweeps' (each ~10 ms: a run of
// empty calls that counted them would report millions of ns).
func TestRunReports(t *testing.T) {
	calls, n := 0, 0
	r := testing.Benchmark(func(b *testing.B) {
		calls, n = 0, b.N
		Run(b, func() { calls++ })
	})
	if calls != n+1 {
		t.Errorf("f ran %d times in a run of b.N = %d, want b.N + 1", calls, n)
	}
	ns, ok := r.Extra["ns/op"]
	if !ok || ns <= 0 || ns > 1e6 {
		t.Errorf("ns/op = %v (reported: %v): want the time of an empty f, well under a millisecond", ns, ok)
	}
}

// BenchmarkChase chases through the lines of a 256 KiB table in a random
// order (each load's address is what the one before it read: no prefetch
// hides a miss), warm (the table in the core's own cache) and after each
// Evict: the ratio is what a line costs from memory against from cache
// on this machine (measured here: ~4 and ~110 ns a line).
func BenchmarkChase(b *testing.B) {
	const lines = 256 << 10 / 64
	next := make([]uint32, lines*16) // a line holds 16; its first says where to go next
	order := rand.New(rand.NewPCG(1, 2)).Perm(lines)
	for i, l := range order {
		next[l*16] = uint32(order[(i+1)%lines] * 16)
	}
	var sink uint32
	chase := func() {
		at := uint32(0)
		for range lines {
			at = next[at]
		}
		sink += at
	}
	b.Run("warm", func(b *testing.B) {
		chase()
		for b.Loop() {
			chase()
		}
	})
	b.Run("cold", func(b *testing.B) { Run(b, chase) })
}
