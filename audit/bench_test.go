package audit

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/internal/benchcold"
	"github.com/toolgate/toolgate/internal/benchcpu"
)

// BenchmarkAppend appends records of a typical size to a real file (no fsync
// on this path: allow decisions, the background sync every second).
func BenchmarkAppend(b *testing.B) {
	appendOne := benchAppender(b, Options{})
	b.ReportAllocs()
	defer benchcpu.Report(b)()
	for b.Loop() {
		appendOne()
	}
}

// BenchmarkAppendCold appends as a gateway does one call at a time: each
// append finds the caches cold (benchcold) and comes a few milliseconds
// after the one before (the sweep's time), so the Log keeps its lock and
// looks for a waiting writer on each.
func BenchmarkAppendCold(b *testing.B) {
	benchcold.Run(b, benchAppender(b, Options{}))
}

// benchAppender opens a Log with o on a new file, closed when b ends, and
// returns what appends a record of a typical size to it.
func benchAppender(b *testing.B, o Options) func() {
	l, err := Open(filepath.Join(b.TempDir(), "audit.jsonl"), o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	rec := testRecord(1)
	ctx := context.Background()
	return func() {
		if err := l.Append(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendParallel appends from GOMAXPROCS goroutines to one Log.
func BenchmarkAppendParallel(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "audit.jsonl"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	rec := testRecord(1)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := l.Append(context.Background(), rec); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkVerify verifies a log of 10,000 records held in memory.
func BenchmarkVerify(b *testing.B) {
	path := filepath.Join(b.TempDir(), "audit.jsonl")
	l, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10000 {
		rec := testRecord(i)
		rec.Decision = DecisionAllow // no fsync while building
		if err := l.Append(context.Background(), rec); err != nil {
			b.Fatal(err)
		}
	}
	l.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		rep, err := Verify(bytes.NewReader(data))
		if err != nil || !rep.OK {
			b.Fatal(rep, err)
		}
	}
}

// BenchmarkAppendExclusive is BenchmarkAppend with Options.Exclusive: one
// write(2) per record.
func BenchmarkAppendExclusive(b *testing.B) {
	appendOne := benchAppender(b, Options{Exclusive: true})
	b.ReportAllocs()
	defer benchcpu.Report(b)()
	for b.Loop() {
		appendOne()
	}
}

// BenchmarkWriteFloor is the floor under BenchmarkAppend on this machine: a
// bare write(2) of a record-sized line to an O_APPEND file.
func BenchmarkWriteFloor(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "floor"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line := append(bytes.Repeat([]byte{'x'}, 419), '\n')
	defer benchcpu.Report(b)()
	for b.Loop() {
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
	}
}
