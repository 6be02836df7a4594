// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

//go:build unix

package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2"
)

// PATCH(toolgate): an ioConn over a stream that Close interrupts (a polled
// *os.File) is read by Read itself (readsInline), not by a reader goroutine
// through a channel. These tests check which streams are read so, that such
// a connection reads every stream as the reader goroutine reads it (the same
// messages, the same errors, in the same order), and that Close still ends a
// Read in progress.

// pipe returns the ends of an os.Pipe, which the poller waits on.
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func TestReadsInline(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream func(t *testing.T) io.ReadWriteCloser
		inline bool
	}{
		{"polled pipe", func(t *testing.T) io.ReadWriteCloser {
			r, _ := pipe(t)
			return rwc{r, nopCloserWriter{io.Discard}}
		}, true},
		{"blocking pipe", func(t *testing.T) io.ReadWriteCloser {
			r, _ := pipe(t)
			b := os.NewFile(r.Fd(), "r") // Fd puts the pipe in blocking mode: NewFile does not poll it
			t.Cleanup(func() { b.Close() })
			return rwc{b, nopCloserWriter{io.Discard}}
		}, false},
		{"regular file", func(t *testing.T) io.ReadWriteCloser {
			f, err := os.Create(filepath.Join(t.TempDir(), "f"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return rwc{f, nopCloserWriter{io.Discard}}
		}, false},
		{"polled pipe behind NopCloser (Close would not interrupt)", func(t *testing.T) io.ReadWriteCloser {
			r, _ := pipe(t)
			return rwc{io.NopCloser(r), nopCloserWriter{io.Discard}}
		}, false},
		{"in-memory reader", func(t *testing.T) io.ReadWriteCloser {
			return rwc{io.NopCloser(strings.NewReader("{}\n")), nopCloserWriter{io.Discard}}
		}, false},
		{"net.Pipe (InMemoryTransport)", func(t *testing.T) io.ReadWriteCloser {
			c1, c2 := net.Pipe()
			t.Cleanup(func() { c1.Close(); c2.Close() })
			return c1
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newIOConn(tc.stream(t))
			defer c.Close()
			if got := c.incoming == nil; got != tc.inline {
				t.Errorf("read inline = %v, want %v", got, tc.inline)
			}
		})
	}
}

// readAll reads c until an error and returns what it read, one line per
// message or error.
func readAll(t *testing.T, c *ioConn) []string {
	t.Helper()
	var out []string
	for {
		msg, err := c.Read(context.Background())
		if err != nil {
			return append(out, "error: "+err.Error())
		}
		data, err := jsonrpc2.EncodeMessage(msg)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(data))
		if len(out) > 1000 {
			t.Fatal("more than 1000 messages")
		}
	}
}

// newIOConnV180 is newIOConnLimited as released in v1.8.0, word for word:
// the reader goroutine the patch replaces.
func newIOConnV180(rwc io.ReadWriteCloser, maxLineLength int) *ioConn {
	limit := maxLineLength
	if limit == 0 {
		limit = DefaultMaxLineLength
	}
	var (
		incoming = make(chan msgOrErr)
		closed   = make(chan struct{})
	)
	// Start a goroutine for reads, so that we can select on the incoming channel
	// in [ioConn.Read] and unblock the read as soon as Close is called (see #224).
	//
	// This leaks a goroutine if rwc.Read does not unblock after it is closed,
	// but that is unavoidable since AFAIK there is no (easy and portable) way to
	// guarantee that reads of stdin are unblocked when closed.
	go func() {
		var (
			reader  io.Reader = rwc
			limiter *frameLimitReader
		)
		if limit > 0 {
			limiter = &frameLimitReader{r: rwc, limit: limit}
			reader = limiter
		}
		dec := json.NewDecoder(reader)
		for {
			var raw json.RawMessage
			err := dec.Decode(&raw)
			// If decoding was successful, check for trailing data at the end of the stream.
			if err == nil {
				// Read the next byte to check if there is trailing data.
				var tr [1]byte
				if n, readErr := dec.Buffered().Read(tr[:]); n > 0 {
					// If read byte is not a newline, it is an error.
					// Support both Unix (\n) and Windows (\r\n) line endings.
					if tr[0] != '\n' && tr[0] != '\r' {
						err = fmt.Errorf("invalid trailing data at the end of stream")
					}
				} else if readErr != nil && readErr != io.EOF {
					err = readErr
				}
			}
			select {
			case incoming <- msgOrErr{msg: raw, err: err}:
			case <-closed:
				return
			}
			if err != nil {
				return
			}
			if limiter != nil {
				limiter.resetFrame()
			}
		}
	}()
	return &ioConn{
		rwc:      rwc,
		incoming: incoming,
		closed:   closed,
	}
}

func TestInlineReadMatchesReaderGoroutine(t *testing.T) {
	long := strings.Repeat("é\\\"x", 40000) // a line far longer than the decoder's first buffer and the pipe's
	ping := func(id int) string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id) }
	for _, tc := range []struct {
		name, stream string
		wellFormed   bool // the same messages however the bytes arrive
	}{
		{"empty", "", true},
		{"only whitespace", " \n\r\n\t", true},
		{"one request", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{}}}` + "\n", true},
		{"without a final newline", ping(1), true},
		{"requests, notification, responses", ping(1) + "\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
			`{"jsonrpc":"2.0","id":"a","result":{"x":[1,2]}}` + "\n" + `{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}` + "\n", true},
		{"CRLF and blank lines", ping(1) + "\r\n\r\n\n" + ping(2) + "\r\n", true},
		{"a value over lines", "{\n \"jsonrpc\": \"2.0\",\n \"id\": 1,\n \"method\": \"ping\"\n}\n" + ping(2) + "\n", true},
		{"a batch", "[" + ping(1) + `,{"jsonrpc":"2.0","method":"notifications/initialized"},` + ping(2) + "]\n" + ping(3) + "\n", true},
		{"an empty batch", "[]\n" + ping(1) + "\n", true},
		{"a batch, duplicate ids", "[" + ping(1) + "," + ping(1) + "]\n", true},
		{"a long line", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"s":"` + long + `"}}}` + "\n" + ping(2) + "\n", true},
		{"frames under the limit", strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"`+strings.Repeat("y", 150)+`"}}`+"\n", 5), true},
		{"not JSON", ping(1) + "\nhello\n", true},
		{"not a message", ping(1) + "\n" + `{"jsonrpc":"1.0"}` + "\n", true},
		{"a number", "42\n", true},
		{"truncated", ping(1) + "\n" + `{"jsonrpc":"2.0","id":2,"meth`, true},
		// v1.8.0 finds these errors only in the bytes its decoder has read
		// so far: what they give depends on how the bytes arrive.
		{"two values on a line", ping(1) + " " + ping(2) + "\n", false},
		{"trailing garbage", ping(1) + "x\n", false},
		{"over the frame limit", ping(1) + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"s":"` + strings.Repeat("x", 300) + `"}}` + "\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The patched connection (reading inline) and v1.8.0's (its
			// reader goroutine) each read a pipe holding the whole stream
			// (written at once, unless it is longer than a pipe holds):
			// the same bytes in the same reads.
			write := func(w *os.File, chunk int) {
				defer w.Close()
				for b := []byte(tc.stream); len(b) > 0; {
					n := min(chunk, len(b))
					if _, err := w.Write(b[:n]); err != nil {
						return
					}
					b = b[n:]
				}
			}
			open := func(v180 bool, chunk int) *ioConn {
				r, w := pipe(t)
				if len(tc.stream) < 32<<10 && chunk == len(tc.stream) {
					write(w, chunk)
				} else {
					go write(w, chunk)
				}
				limit := 0 // the default
				if strings.Contains(tc.name, "limit") {
					limit = 256
				}
				newConn := newIOConnLimited
				if v180 {
					newConn = newIOConnV180
				}
				c := newConn(rwc{r, nopCloserWriter{io.Discard}}, limit)
				t.Cleanup(func() { c.Close() })
				if got := c.incoming == nil; got == v180 {
					t.Fatalf("v1.8.0 %v: reads inline %v", v180, got)
				}
				if !v180 && runtime.GOOS == "linux" {
					if _, raw := c.limiter.r.(*rawFile); !raw {
						t.Fatal("the patched connection does not read with raw system calls (patch 7)")
					}
				}
				return c
			}
			want := strings.Join(readAll(t, open(true, len(tc.stream))), "\n")
			if got := strings.Join(readAll(t, open(false, len(tc.stream))), "\n"); got != want {
				t.Errorf("read inline:\n%s\nwith a reader goroutine:\n%s", got, want)
			}
			if !tc.wellFormed {
				return
			}
			for _, chunk := range []int{7, 1} {
				if got := strings.Join(readAll(t, open(false, chunk)), "\n"); got != want {
					t.Errorf("written %d bytes at a time, read inline:\n%s\nwant\n%s", chunk, got, want)
				}
			}
		})
	}
}

// TestInlineReadClose: Close ends a Read waiting for input (io.EOF, as
// with the reader goroutine), and every Read after it.
func TestInlineReadClose(t *testing.T) {
	r, w := pipe(t)
	c := newIOConn(rwc{r, nopCloserWriter{io.Discard}})
	if c.incoming != nil {
		t.Fatal("a connection over a polled pipe has a reader goroutine")
	}
	if _, err := w.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(context.Background()) // nothing more written: waits
		done <- err
	}()
	// Close while the Read waits, or before it starts: either way it ends.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, io.EOF) {
		t.Errorf("Read interrupted by Close: %v, want io.EOF", err)
	}
	if _, err := c.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Errorf("Read after Close: %v, want io.EOF", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Read(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Read with a done context: %v, want context.Canceled", err)
	}
}

// TestInlineServerSession: a server on a polled pipe pair answers calls,
// sees a client's cancellation, and ends when its session is closed while
// it waits for input, or when the client goes.
func TestInlineServerSession(t *testing.T) {
	sr, cw := pipe(t) // client → server
	cr, sw := pipe(t) // server → client
	server := NewServer(&Implementation{Name: "s", Version: "1"}, nil)
	started := make(chan struct{}, 1)
	AddTool(server, &Tool{Name: "wait"}, func(ctx context.Context, _ *CallToolRequest, in struct{ Block bool }) (*CallToolResult, any, error) {
		if !in.Block {
			return &CallToolResult{Content: []Content{&TextContent{Text: "done"}}}, nil, nil
		}
		started <- struct{}{}
		<-ctx.Done() // until the client cancels
		return nil, nil, ctx.Err()
	})
	ss, err := server.Connect(context.Background(), &IOTransport{Reader: sr, Writer: sw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ss.mcpConn.(*ioConn).incoming != nil {
		t.Fatal("the server's connection over a polled pipe has a reader goroutine")
	}
	client := NewClient(&Implementation{Name: "c", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		res, err := cs.CallTool(context.Background(), &CallToolParams{Name: "wait", Arguments: map[string]any{"Block": false}})
		if err != nil || len(res.Content) != 1 || res.Content[0].(*TextContent).Text != "done" {
			t.Fatalf("call %d: %v, %v", i, res, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &CallToolParams{Name: "wait", Arguments: map[string]any{"Block": true}})
		errc <- err
	}()
	<-started
	cancel() // notifications/cancelled: the handler's context ends
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	// The server still answers after the cancellation.
	if _, err := cs.CallTool(context.Background(), &CallToolParams{Name: "wait", Arguments: map[string]any{"Block": false}}); err != nil {
		t.Fatal(err)
	}
	// Closing the server's session while it waits for input ends it (its
	// Read is interrupted), and the client then sees the end of its stream.
	closed := make(chan error, 1)
	go func() { closed <- ss.Wait() }()
	if err := ss.Close(); err != nil {
		t.Errorf("closing the server session: %v", err)
	}
	<-closed
	cs.Wait() // the server's Close closed its end of the pipe: the client's stream ends
}

// TestInlineServerEOF: when the client goes (its end of the pipe closes),
// a server reading inline ends, as Server.Run does at io.EOF.
func TestInlineServerEOF(t *testing.T) {
	sr, cw := pipe(t)
	_, sw := pipe(t)
	server := NewServer(&Implementation{Name: "s", Version: "1"}, nil)
	done := make(chan error, 1)
	go func() { done <- server.Run(context.Background(), &IOTransport{Reader: sr, Writer: sw}) }()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}` + "\n"
	if _, err := cw.Write([]byte(init)); err != nil {
		t.Fatal(err)
	}
	cw.Close()
	if err := <-done; err != nil && !errors.Is(err, io.EOF) {
		t.Errorf("Run after the client went: %v", err)
	}
}
