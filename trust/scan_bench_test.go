package trust

import (
	"path/filepath"
	"testing"
)

// BenchmarkScan scans LiveMCPBench's 527 real tools, each with its server's
// tools as context; ns/op divided by 527 is the cost of one tool.
func BenchmarkScan(b *testing.B) {
	servers, sets := liveTools(b)
	n := 0
	for _, s := range servers {
		n += len(sets[s])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, s := range servers {
			ScanSet(s, sets[s], servers)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n)/1000, "µs/tool")
}

// BenchmarkScanPoisoned scans the corpus's poisoned and clean definitions.
func BenchmarkScanPoisoned(b *testing.B) {
	var recs []corpusRecord
	loadJSON(b, filepath.Join("..", "testdata", "tool-poisoning", "dev.json"), &recs)
	b.ResetTimer()
	for b.Loop() {
		scanRecords(recs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(recs))/1000, "µs/tool")
}
