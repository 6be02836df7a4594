package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/benchcold"
)

// BenchmarkRedact redacts bench/mcp's small file as the engine redacts a
// read_file result (no secret: the common case), the same text with one
// secret in it, and 64 KiB of text without one; and, as the engine redacts
// a structured value's encoding, bench/processes' read_process answers (8
// KiB of `seq` output each).
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
	// The windows bench/processes reads: 8 KiB of `seq 1 3000000`'s output
	// at each multiple of 8 KiB below 1 MiB, in a value encoded as
	// exec.ProcessAnswer is (the prefilter looks at every other byte, so
	// where a line starts matters).
	var seq strings.Builder
	for i := 1; seq.Len() < 1<<20; i++ {
		fmt.Fprintf(&seq, "%d\n", i)
	}
	var answers []string
	for at := 0; at < 1<<20; at += 8 << 10 {
		out, err := json.Marshal(seq.String()[at : at+8<<10])
		if err != nil {
			b.Fatal(err)
		}
		answers = append(answers, `{"state":"exited","reason":"exited","exit_code":0,"output":`+string(out)+
			fmt.Sprintf(`,"cursor":%d,"dropped_bytes":0,"more":true}`, at+8<<10))
	}
	b.Run("8KiB-seq-json", func(b *testing.B) {
		b.SetBytes(int64(len(answers[len(answers)/2])))
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, n, quiet := r.RedactJSON(answers[i%len(answers)]); n != 0 || !quiet {
				b.Fatal("seq's output holds no secret")
			}
			i++
		}
	})
}

// BenchmarkMayMatchJSON is what the engine's redaction does for bench/proxy's
// relayed answer (read_text_file of a 20-line file): Quiet on its text
// block, then MayMatchJSON on the bytes of its structured value
// ({"content": the same text}) with that text quiet.
func BenchmarkMayMatchJSON(b *testing.B) {
	r, err := NewRedactor(DefaultSecrets())
	if err != nil {
		b.Fatal(err)
	}
	var text strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&text, "line %d of a small file read by the MCP benchmark\n", i)
	}
	raw, err := json.Marshal(map[string]any{"content": text.String()})
	if err != nil {
		b.Fatal(err)
	}
	v := map[string]any{"content": text.String()}
	quiet := []string{text.String()}
	check := func() {
		if !r.Quiet(quiet[0]) || r.MayMatchJSON(raw, v, quiet) {
			b.Fatal("the text holds no secret")
		}
	}
	b.Run("warm", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			check()
		}
	})
	b.Run("cold", func(b *testing.B) { benchcold.Run(b, check) }) // as one call at a time finds it (benchcold)
}
