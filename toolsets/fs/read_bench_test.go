package fs

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkReadFile is one read_file call of bench/mcp's small file (20
// short lines) through the tool's Run, as the engine calls it: by a
// relative path, by an absolute one, and one folder down.
func BenchmarkReadFile(b *testing.B) {
	e := newEnv(b, Options{})
	var text strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&text, "line %d of a small file read by the MCP benchmark\n", i)
	}
	mustWrite(b, filepath.Join(e.ws, "small.txt"), text.String())
	mustWrite(b, filepath.Join(e.ws, "src", "pkg", "small.txt"), text.String())
	for _, bc := range []struct{ name, path string }{
		{"relative", "small.txt"},
		{"absolute", filepath.Join(e.ws, "small.txt")},
		{"nested", "src/pkg/small.txt"},
	} {
		args := fmt.Sprintf(`{"path":%q}`, bc.path)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res, err := e.call("read_file", args); err != nil || !strings.Contains(res.Text(), "20|line 20 ") {
					b.Fatalf("%v %.100q", err, res.Text())
				}
			}
		})
	}
}
