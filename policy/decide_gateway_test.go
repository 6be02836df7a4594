package policy

import (
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// BenchmarkDecideGateway measures the decision toolgate proxy makes on
// each relayed call of bench/proxy: the default policy (protected paths,
// guarded CI files) judging read_text_file of a file given by its
// absolute path.
func BenchmarkDecideGateway(b *testing.B) {
	p, err := Parse([]byte("limits:\n  loop:\n    max: 1000000\n"))
	if err != nil {
		b.Fatal(err)
	}
	p.Roots = []string{p.Sandbox.WorkspaceDir()}
	def := tool.Definition{Name: "bare__read_text_file", Level: tool.LevelRead,
		Annotations: tool.Annotations{ReadOnly: true},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"tail":{"type":"number"},"head":{"type":"number"}},"required":["path"]}`)}
	for _, tc := range []struct{ name, path string }{{"outside", "/tmp/proxybench.123/dir/small.txt"}, {"inside", "/workspace/src/small.txt"}} {
		raw := []byte(`{"path":"` + tc.path + `"}`)
		var args map[string]any
		if err := json.Unmarshal(raw, &args); err != nil {
			b.Fatal(err)
		}
		call := tool.Call{Name: def.Name, Args: raw}
		if d := p.DecideParsed(def, call, args); d.Effect != Allow {
			b.Fatal(d)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.DecideParsed(def, call, args)
			}
		})
	}
}
