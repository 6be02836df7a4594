package selection

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/benchcpu"
	"github.com/toolgate/toolgate/selection/eval"
	"github.com/toolgate/toolgate/tool"
)

// liveMCPBenchDir is LiveMCPBench in the repository's testdata.
var liveMCPBenchDir = filepath.Join("..", "testdata", "livemcpbench")

// vendors prefix the names of synthetic variants, as a gateway in front of
// many servers namespaces their tools.
var vendors = strings.Fields(`acme globex initech umbrella hooli stark wayne wonka tyrell cyberdyne
soylent massive aperture oscorp vandelay pied gringotts monarch duff nakatomi`)

// syntheticTools returns n definitions made deterministically from the
// LiveMCPBench tools: the originals, then variants whose names carry a
// vendor prefix and whose descriptions gain a vendor sentence and a few
// words drawn from the corpus vocabulary.
func syntheticTools(tb testing.TB, n int) ([]tool.Definition, []string) {
	tb.Helper()
	b, err := eval.LoadLiveMCPBench(liveMCPBenchDir)
	if err != nil {
		tb.Fatal(err)
	}
	base := b.Definitions()
	var vocab []string
	for _, d := range base {
		vocab = append(vocab, strings.Fields(d.Description)...)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	defs := make([]tool.Definition, n)
	for i := range defs {
		d := base[i%len(base)]
		if v := i / len(base); v > 0 {
			vendor := vendors[(v-1)%len(vendors)]
			d.Name = fmt.Sprintf("%s_%s", vendor, d.Name)
			extra := make([]string, 3)
			for j := range extra {
				extra[j] = vocab[rng.IntN(len(vocab))]
			}
			d.Description = fmt.Sprintf("%s Provided by the %s %d service; %s.", d.Description, vendor, v, strings.Join(extra, " "))
		}
		defs[i] = d
	}
	queries := make([]string, len(b.Tasks))
	for i, t := range b.Tasks {
		queries[i] = t.Query
	}
	return defs, queries
}

// BenchmarkNew10k builds an index over 10,000 tools. Besides wall time
// (ns/op) it reports the process's CPU time per build (cpu-ms/op, GC
// included), which other processes on a shared machine disturb less.
func BenchmarkNew10k(b *testing.B) {
	defs, _ := syntheticTools(b, 10000)
	b.ReportAllocs()
	cpu0 := benchcpu.Now()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		New(defs, Options{})
		n++
	}
	b.StopTimer()
	b.ReportMetric(float64((benchcpu.Now()-cpu0).Microseconds())/1000/float64(n), "cpu-ms/op")
}

// BenchmarkSelect10k runs LiveMCPBench's task queries against 10,000 tools,
// k = 10; besides the mean (ns/op) it reports the median and the 99th
// percentile of single queries.
func BenchmarkSelect10k(b *testing.B) {
	defs, queries := syntheticTools(b, 10000)
	x := New(defs, Options{})
	var took []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		start := time.Now()
		x.Select(queries[i%len(queries)], 10)
		took = append(took, time.Since(start))
		i++
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
}
