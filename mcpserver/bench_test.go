//go:build unix

package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/benchcpu"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolsets/fs"
)

// benchServer is a server governed as `toolgate serve` governs by default
// (the default policy with protected paths, secret redaction, the output
// budget, rate limits and the loop guard, a hash-chained audit log), over
// the real file tools in a temporary root holding bench/mcp's small file.
// As in bench/mcp, the loop guard lets identical calls through without
// bound (it still inspects every call).
func benchServer(b *testing.B) *mcpserver.Server {
	b.Helper()
	root := b.TempDir()
	var text strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&text, "line %d of a small file read by the MCP benchmark\n", i)
	}
	if err := os.WriteFile(filepath.Join(root, "small.txt"), []byte(text.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	roots, err := fs.OpenRoots(root)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { roots.Close() })
	tools, err := fs.Tools(roots, fs.Options{})
	if err != nil {
		b.Fatal(err)
	}
	reg := registry.New()
	if err := reg.Register(tools...); err != nil {
		b.Fatal(err)
	}
	pol, err := policy.Parse([]byte("limits:\n  loop:\n    max: 1000000\n"))
	if err != nil {
		b.Fatal(err)
	}
	pol.Roots = roots.Dirs()
	red, err := policy.NewRedactor(pol.Secrets.All())
	if err != nil {
		b.Fatal(err)
	}
	log, err := audit.Open(filepath.Join(b.TempDir(), "audit.jsonl"), audit.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { log.Close() })
	eng := engine.New(engine.Options{
		Registry: reg, Policy: pol, Auditor: log, Redactor: red,
		Limiter: engine.ChainLimiters(mcpserver.ClientRoots(nil, mcpserver.Opaque(mcpserver.DefaultPaths, "apply_patch")), policy.NewLimiter(pol.Limits.Config())),
		Breaker: &policy.Breaker{Threshold: pol.Approvals.DenialStreak},
		Spill:   engine.Spill{Root: root, Dir: ".toolgate/spill", ShowAs: ".toolgate/spill"},
	})
	srv, err := mcpserver.New(mcpserver.Options{Engine: eng, Roots: []string{root}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	return srv
}

const (
	benchInit        = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`
	benchInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	benchCallHead    = `{"jsonrpc":"2.0","id":`
	benchCallTail    = `,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"small.txt"}}}`
)

// checkAnswer fails unless line is the successful answer to call id.
func checkAnswer(b *testing.B, line []byte, id int) {
	if !bytes.Contains(line, []byte(`"id":`+strconv.Itoa(id)+`,`)) || !bytes.Contains(line, []byte("line 20 of a small file")) || bytes.Contains(line, []byte(`"isError":true`)) {
		b.Fatalf("answer to call %d: %.300s", id, line)
	}
}

// BenchmarkServeStdio measures the server's side of one governed
// tools/call read_file over the stdio transport (newline-delimited
// JSON-RPC over pipes), one call at a time. The client writes prepared
// bytes and reads the answer line, so the allocations reported are the
// server's. Over os.Pipe the server reads as `toolgate serve` reads a pipe
// (through the poller, on the goroutine that handles the messages: see
// third_party/go-sdk/PATCHES.md, patch 3), and the figures include the
// pipes' system calls, the client's too; over io.Pipe, a reader the poller
// does not know, the go-sdk reads through a goroutine of its own.
func BenchmarkServeStdio(b *testing.B) {
	for _, pipes := range []string{"os.Pipe", "io.Pipe"} {
		b.Run(pipes, func(b *testing.B) {
			var sr, cr io.ReadCloser // the server's and the client's read ends
			var sw, cw io.WriteCloser
			if pipes == "io.Pipe" {
				cr, sw = io.Pipe() // server → client
				sr, cw = io.Pipe() // client → server
			} else {
				var err error
				if cr, sw, err = os.Pipe(); err != nil {
					b.Fatal(err)
				}
				if sr, cw, err = os.Pipe(); err != nil {
					b.Fatal(err)
				}
			}
			benchStdio(b, sr, sw, cr, cw)
		})
	}
}

func benchStdio(b *testing.B, sr io.ReadCloser, sw io.WriteCloser, cr io.ReadCloser, cw io.WriteCloser) {
	srv := benchServer(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, &mcp.IOTransport{Reader: sr, Writer: sw}) }()
	b.Cleanup(func() {
		cw.Close()
		cancel()
		<-done
		cr.Close()
	})
	in := bufio.NewReaderSize(cr, 64<<10)
	send := func(msg []byte) {
		if _, err := cw.Write(msg); err != nil {
			b.Fatal(err)
		}
	}
	read := func() []byte {
		line, err := in.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		return line
	}
	send([]byte(benchInit + "\n"))
	read()
	send([]byte(benchInitialized + "\n"))
	msg := make([]byte, 0, 256)
	call := func(id int) {
		msg = append(strconv.AppendInt(append(msg[:0], benchCallHead...), int64(id), 10), benchCallTail+"\n"...)
		send(msg)
		checkAnswer(b, read(), id)
	}
	for i := range 50 { // warm-up: the session's first call asks for roots, pools fill
		call(1 + i)
	}
	measure(b, func(i int) { call(100 + i) })
}

// BenchmarkServeHTTP measures the server's side of one governed
// tools/call read_file over streamable HTTP, in a session, one call at a
// time: each call is a POST given straight to the handler (no network, no
// HTTP client), answered as the handler answers (an SSE stream). Building
// the request and the recorder counts in the figures too (about 10 KB and
// 27 allocations of them).
func BenchmarkServeHTTP(b *testing.B) {
	for _, stateless := range []bool{false, true} {
		b.Run(map[bool]string{false: "session", true: "stateless"}[stateless], func(b *testing.B) {
			h := benchServer(b).Handler(mcpserver.HTTPOptions{Loopback: true, Stateless: stateless})
			session := ""
			post := func(body string) *httptest.ResponseRecorder {
				r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
				r.Host = "localhost"
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Accept", "application/json, text/event-stream")
				r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
				if session != "" {
					r.Header.Set("Mcp-Session-Id", session)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code/100 != 2 {
					b.Fatalf("POST %.80s: %d %s", body, w.Code, w.Body)
				}
				return w
			}
			if !stateless {
				session = post(benchInit).Header().Get("Mcp-Session-Id")
				if session == "" {
					b.Fatal("initialize answered without Mcp-Session-Id")
				}
				post(benchInitialized)
			}
			call := func(id int) {
				checkAnswer(b, post(benchCallHead+strconv.Itoa(id)+benchCallTail).Body.Bytes(), id)
			}
			for i := range 50 {
				call(1 + i)
			}
			measure(b, func(i int) { call(100 + i) })
		})
	}
}

// measure runs call b.N times and reports, beside the time and allocations,
// the CPU time (user + system, every thread of the process) per call: on a
// busy machine a steadier figure than the wall-clock time.
func measure(b *testing.B, call func(i int)) {
	b.ReportAllocs()
	cpu0 := benchcpu.Now()
	b.ResetTimer()
	for i := range b.N {
		call(i)
	}
	b.StopTimer()
	b.ReportMetric(float64(benchcpu.Now()-cpu0)/float64(b.N), "cpu-ns/op")
}
