package trust

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/internal/benchcpu"
	"github.com/toolgate/toolgate/tool"
)

// BenchmarkCheckResult checks results as a gateway gets them: a small file
// as the reference filesystem server returns it (the text twice: a text
// block and structuredContent), and pieces of the repository's docs.
func BenchmarkCheckResult(b *testing.B) {
	var small strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&small, "line %d of a small file read by the MCP benchmark\n", i)
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		b.Fatal(err)
	}
	doc := string(readme)
	results := []struct {
		name string
		res  tool.Result
	}{
		{"small-file", tool.Result{Content: []tool.Content{tool.TextContent(small.String())}, Structured: map[string]any{"content": small.String()}}},
		{"doc-4KiB", tool.TextResult(chunks(doc, 4<<10)[0])},
		{"doc-whole", tool.TextResult(doc)},
	}
	for _, r := range results {
		n := 0
		for _, c := range r.res.Content {
			n += len(c.Text)
		}
		b.Run(r.name, func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			cpu := benchcpu.Now()
			for b.Loop() {
				CheckResult(r.res)
			}
			if cpu > 0 {
				b.ReportMetric(float64((benchcpu.Now()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
			}
		})
		if r.name != "small-file" {
			continue
		}
		// As in a gateway, where the rest of a call (two JSON-RPC
		// connections, the engine, the audit log) has the caches between
		// two checks: they are filled with other data before each.
		other := make([]byte, 16<<20)
		b.Run(r.name+"-cold", func(b *testing.B) {
			b.SetBytes(int64(n))
			for range b.N {
				b.StopTimer()
				for i := 0; i < len(other); i += 64 {
					other[i]++
				}
				b.StartTimer()
				CheckResult(r.res)
			}
		})
	}
}

// BenchmarkResultIndex builds what the result check reads with: once per
// process, what a short-lived command (toolgate call) pays at its first
// check.
func BenchmarkResultIndex(b *testing.B) {
	for b.Loop() {
		resultIndexOnce = sync.Once{}
		theResultIndex()
	}
}
