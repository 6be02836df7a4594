package benchcold

import (
	"sync"
	"testing"
	"time"
)

// sweepBytes is the size of the buffer each sweep writes a byte of every
// line of: larger than the last-level cache of the machines this runs on
// (32 MiB per group of cores on the AMD EPYC ones), so that nothing a
// function touched before the sweep is still cached after it.
const sweepBytes = 128 << 20

var (
	bufOnce sync.Once
	buf     []byte
)

// Evict writes a byte in every cache line of a buffer larger than the
// last-level cache: afterwards the caller's code and data are fetched
// from memory again.
func Evict() {
	bufOnce.Do(func() { buf = make([]byte, sweepBytes) })
	for i := 0; i < len(buf); i += 64 {
		buf[i]++
	}
}

// Run runs f once warm first (its first-call costs are not measured), then
// b.N times, each after Evict, and reports the mean time of f as ns/op
// (the sweeps are not in it; b's own timer, which counts them, is what
// picks b.N: a few dozen runs a second). b's other figures count the
// sweeps: SetBytes's MB/s would be the sweeps' too, and allocations are
// f's but are not reported unless b asks.
func Run(b *testing.B, f func()) {
	b.Helper()
	f()
	var spent time.Duration
	for i := 0; i < b.N; i++ {
		Evict()
		start := time.Now()
		f()
		spent += time.Since(start)
	}
	b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "ns/op")
}
