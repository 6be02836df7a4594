package policy

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkRedact redacts bench/mcp's small file as the engine redacts a
// read_file result (no secret: the common case), the same text with one
// secret in it, and 64 KiB of text without one.
func BenchmarkRedact(b *testing.B) {
	r, err := NewRedactor(DefaultSecrets())
	if err != nil {
		b.Fatal(err)
	}
	var small strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&small, "%d|line %d of a small file read by the MCP benchmark\n", i, i)
	}
	big := strings.Repeat("func (s *Set) readFile(ctx context.Context, in ReadFileIn) (tool.Result, error) {\n", 64<<10/84)
	for _, bc := range []struct{ name, text string }{
		{"small", small.String()},
		{"small-secret", small.String() + "AWS_SECRET=AKIAIOSFODNN7EXAMPLE\n"},
		{"64KiB-code", big},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.text)))
			b.ReportAllocs()
			for b.Loop() {
				r.Redact(bc.text)
			}
		})
	}
}
