package trust

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/internal/benchcold"
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
		// connections, the engine, the audit log) and the upstream have
		// the caches between two checks (benchcold).
		b.Run(r.name+"-cold", func(b *testing.B) {
			benchcold.Run(b, func() { CheckResult(r.res) })
		})
	}
}

// BenchmarkResultIndex makes what the result check reads with from the
// generated data (theResultIndex): once per process, what a short-lived
// command (toolgate call) pays at its first check; and derives it from the
// cues' expressions (newPrefilter, newAnchor, buildResultIndex), what the
// data spares it.
func BenchmarkResultIndex(b *testing.B) {
	b.Run("data", func(b *testing.B) {
		for b.Loop() {
			resultIndexOnce = sync.Once{}
			theResultIndex()
		}
	})
	b.Run("build", func(b *testing.B) {
		var src []string
		for _, c := range resultCues() {
			src = append(src, c.re.src)
		}
		src = append(src, resultErrorWords.src)
		for b.Loop() {
			var pre []*prefilter
			var anchors []*anchor
			for _, s := range src {
				pre, anchors = append(pre, newPrefilter(s)), append(anchors, newAnchor(s))
			}
			buildResultIndex(pre, anchors)
		}
	})
}

// readFileText is what read_file shows of a 1 MB file (bench/resultcheck):
// its first 500 lines, each after its number and a bar, and the line
// saying how to go on.
func readFileText(b *testing.B, file string) string {
	var whole strings.Builder
	switch file {
	case "log":
		for i := 0; whole.Len() < 1<<20; i++ {
			fmt.Fprintf(&whole, "2026-12-01T10:%02d:%02dZ INFO request %d served in %dms path=/api/v1/items/%d status=200\n", i/60%60, i%60, i, i%97, i*7)
		}
	case "docs":
		for whole.Len() < 1<<20 {
			for _, glob := range []string{"../docs/*.md", "../engine/*.go"} {
				files, _ := filepath.Glob(glob)
				if len(files) == 0 {
					b.Fatalf("no %s: run in the package's folder", glob)
				}
				for _, f := range files {
					if filepath.Base(f) == "trust.md" {
						continue
					}
					data, err := os.ReadFile(f)
					if err != nil {
						b.Fatal(err)
					}
					whole.Write(data)
				}
			}
		}
	}
	lines := strings.Split(strings.TrimSuffix(whole.String()[:1<<20], "\n"), "\n")
	var out strings.Builder
	for i, l := range lines[:500] {
		fmt.Fprintf(&out, "%d|%s\n", i+1, l)
	}
	fmt.Fprintf(&out, "(showing lines 1-500 of %d; continue with offset=501)", len(lines))
	return out.String()
}

// BenchmarkCheckString checks what read_file shows of bench/resultcheck's
// two 1 MB files: a log (no cue can add up: one pass) and this
// repository's docs and engine source (prose, read sentence by sentence);
// the output a read_process gives in bench/processes (8 KiB of what `seq`
// wrote, from a cursor inside it); and the small file the MCP benchmarks
// read through a gateway (bench/proxy).
func BenchmarkCheckString(b *testing.B) {
	for _, file := range []string{"log", "docs", "seq", "small"} {
		var text string
		switch file {
		case "seq":
			var out strings.Builder
			for i := 1; out.Len() < 1<<20; i++ {
				fmt.Fprintf(&out, "%d\n", i)
			}
			text = out.String()[1<<19 : 1<<19+8<<10]
		case "small":
			var out strings.Builder
			for i := 1; i <= 20; i++ {
				fmt.Fprintf(&out, "line %d of a small file read by the MCP benchmark\n", i)
			}
			text = out.String()
		default:
			text = readFileText(b, file)
		}
		checkString(text) // the index and the patterns are built once per process
		b.Run(file, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			defer benchcpu.Report(b)()
			for b.Loop() {
				if hits := checkString(text); len(hits) > 0 {
					b.Fatal(hits)
				}
			}
		})
	}
}
