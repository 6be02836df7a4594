// Package benchcpu measures what a benchmark costs in CPU time: the
// process's user and system time, every thread (the garbage collector
// too). Unlike ns/op it does not count the time other processes on a
// loaded machine took the CPU away, so figures taken on a shared machine
// stay comparable.
package benchcpu

import "testing"

// Report, deferred at the start of a benchmark's loop, reports the CPU
// time per operation as cpu-ns/op.
func Report(b *testing.B) func() {
	start := Now()
	return func() { b.ReportMetric(float64(Now()-start)/float64(b.N), "cpu-ns/op") }
}
