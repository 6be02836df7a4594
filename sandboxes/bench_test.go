package sandboxes

import (
	"context"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// BenchmarkForwardedRead is the second hop of a read_file through a
// runner, both sides in this process (the forwarder's call, HTTP on
// loopback, the runner's front and call endpoint, its ungoverned engine
// and the file tool): profile it with -cpuprofile, count its instructions
// with callgrind.
func BenchmarkForwardedRead(b *testing.B) {
	tr := startTestRunner(b, "", b.TempDir())
	s, err := New(Options{Backend: mustRunners(b, tr.url()), Secret: testSecret})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tools := toolsOf(b, s)
	ctx := context.Background()
	small := `{"path":"small.txt","content":"line 1 of a small file read by the remote sandbox benchmark\nline 2\nline 3\n"}`
	if res, _ := tools["write_file"].Run(ctx, tool.Call{Name: "write_file", Args: []byte(small), Principal: "p", Session: "s"}); res.Error != nil {
		b.Fatal(res.Error)
	}
	call := tool.Call{Name: "read_file", Args: []byte(`{"path":"small.txt"}`), Principal: "p", Session: "s"}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if res, _ := tools["read_file"].Run(ctx, call); res.Error != nil {
			b.Fatal(res.Error)
		}
	}
}

func mustRunners(b *testing.B, urls ...string) *Runners {
	r, err := NewRunners(urls, testSecret, nil)
	if err != nil {
		b.Fatal(err)
	}
	return r
}
