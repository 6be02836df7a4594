package exec

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// benchCall runs name with args as owner "p"/"b" and fails on an error.
func benchCall(b *testing.B, tools map[string]tool.Tool, name string, args any) tool.Result {
	raw, _ := json.Marshal(args)
	res, err := tools[name].Run(context.Background(), tool.Call{Name: name, Args: raw, Principal: "p", Session: "b"})
	if err != nil || res.Error != nil {
		b.Fatalf("%s: %v %v", name, err, res.Error)
	}
	return res
}

func benchTools(b *testing.B) map[string]tool.Tool {
	procs := NewProcesses(ProcessLimits{Dir: b.TempDir()})
	b.Cleanup(func() { procs.Close() })
	list, err := Tools(Options{Root: b.TempDir(), Processes: procs})
	if err != nil {
		b.Fatal(err)
	}
	m := map[string]tool.Tool{}
	for _, t := range list {
		m[t.Definition().Name] = t
	}
	return m
}

// BenchmarkReadProcess is one read_process with new output (8 KiB from a
// cursor inside what a process wrote): the server's work per read.
func BenchmarkReadProcess(b *testing.B) {
	tools := benchTools(b)
	res := benchCall(b, tools, StartProcess, map[string]any{"command": "seq 1 200000", "yield_ms": 20000})
	id := res.Structured.(ProcessAnswer).ID
	b.ResetTimer()
	for i := range b.N {
		benchCall(b, tools, ReadProcess, map[string]any{"id": id, "cursor": (i * 8192) % (1 << 20)})
	}
}

// BenchmarkStartTrue and BenchmarkExecuteTrue compare start_process and
// execute_command of `true` (wall time on a shared machine: compare the
// two, not the figures).
func BenchmarkStartTrue(b *testing.B) {
	tools := benchTools(b)
	for range b.N {
		benchCall(b, tools, StartProcess, map[string]any{"argv": []string{"true"}, "yield_ms": 20000})
	}
}

func BenchmarkExecuteTrue(b *testing.B) {
	tools := benchTools(b)
	for range b.N {
		benchCall(b, tools, ExecuteCommand, map[string]any{"argv": []string{"true"}})
	}
}
