package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/benchcold"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// BenchmarkDecide measures a decision on each kind of call under the
// default deny rules plus a few of each kind.
func BenchmarkDecide(b *testing.B) {
	p := pol([]string{"Bash(rm:*)", "WebFetch(domain:*.evil.test)"}, []string{"Bash(git push:*)"}, []string{"Bash(npm run test:*)", "Bash(git status)", "Edit(src/**)", "WebFetch(domain:example.com)"})
	for _, bc := range []struct {
		name string
		run  func()
	}{
		{"no-args-tool", func() { p.Decide(defGH, pcallRaw(defGH, `{"title":"x"}`)) }},
		{"read_file", func() { p.Decide(defRead, pcallRaw(defRead, `{"path":"src/main.go"}`)) }},
		{"write_file", func() { p.Decide(defWrite, pcallRaw(defWrite, `{"path":"src/main.go","content":"x"}`)) }},
		{"command", func() { p.Decide(defCmd, pcallRaw(defCmd, `{"command":"npm run test -- --watch && git status"}`)) }},
		{"http", func() { p.Decide(defHTTP, pcallRaw(defHTTP, `{"url":"https://example.com/a"}`)) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.run()
			}
		})
	}
}

// BenchmarkDecideGateway measures the decision toolgate proxy makes on
// each relayed call of bench/proxy: the default policy (protected paths,
// guarded CI files) judging read_text_file of a file given by its
// absolute path.
func BenchmarkDecideGateway(b *testing.B) {
	p, err := policy.Parse([]byte("limits:\n  loop:\n    max: 1000000\n"))
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
		if d := p.DecideParsed(def, call, args); d.Effect != policy.Allow {
			b.Fatal(d)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.DecideParsed(def, call, args)
			}
		})
		b.Run(tc.name+"-cold", func(b *testing.B) { // as one call at a time finds it (benchcold)
			benchcold.Run(b, func() { p.DecideParsed(def, call, args) })
		})
	}
}

// BenchmarkAcquireFullHistory measures the loop guard's admission of a call
// in a session whose history is full (maxHistory calls in the window), as
// in a busy gateway: half the calls identical to the one admitted.
func BenchmarkAcquireFullHistory(b *testing.B) {
	l := policy.NewLimiter(policy.LimitConfig{Loop: policy.LoopConfig{Max: 1 << 30, Window: time.Hour}})
	same := pcallRaw(defRead, `{"path":"src/main.go","offset":0,"limit":2000}`)
	for i := range 512 {
		c := same
		if i%2 == 1 { // each other call its own (no cycle)
			c = pcallRaw(defRead, fmt.Sprintf(`{"path":"src/other%d.go","offset":0,"limit":2000}`, i))
		}
		release, err := l.Acquire(context.Background(), c, defRead)
		if err != nil {
			b.Fatal(err)
		}
		release(tool.Result{})
	}
	b.ReportAllocs()
	for b.Loop() {
		release, err := l.Acquire(context.Background(), same, defRead)
		if err != nil {
			b.Fatal(err)
		}
		release(tool.Result{})
	}
}
