// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2"
)

// PATCH(toolgate): patch 31, a relayed result laid in a frame written
// before. A frame a stream connection has written is laid out again for
// the next relayed result; what a client reads is the bytes relayed lays
// in a new frame, whatever else is written at the same time.

// TestFrames: getFrame gives a kept frame back when it is large enough, and
// keeps no more than maxFrames frames of at most maxFrame bytes.
func TestFrames(t *testing.T) {
	frames.mu.Lock()
	frames.free = nil
	frames.mu.Unlock()
	a := getFrame(100)
	if len(a) != 0 || cap(a) < 100 {
		t.Fatalf("getFrame(100): len %d cap %d", len(a), cap(a))
	}
	a = append(a, "used"...)
	putFrame(a)
	if b := getFrame(200); cap(b) >= 200 && &b[:1][0] == &a[0] {
		t.Fatal("a frame too small given back")
	}
	if b := getFrame(50); len(b) != 0 || &b[:1][0] != &a[0] {
		t.Fatal("a kept frame not given back")
	}
	putFrame(nil)
	putFrame(make([]byte, maxFrame+1))
	for i := 0; i < 2*maxFrames; i++ {
		putFrame(make([]byte, 10))
	}
	frames.mu.Lock()
	n := len(frames.free)
	for _, f := range frames.free {
		if cap(f) > maxFrame {
			t.Errorf("a frame of %d bytes kept", cap(f))
		}
	}
	frames.free = nil
	frames.mu.Unlock()
	if n != maxFrames {
		t.Errorf("%d frames kept", n)
	}
}

// TestFramesRelayed: results of sizes from a few bytes to more than
// maxFrame, relayed with a head (the 2026-07-28 protocol's serverInfo) to
// clients calling at the same time over stream connections: each client
// decodes the bytes relayed lays in a new frame for its result, and frames
// are used again.
func TestFramesRelayed(t *testing.T) {
	ctx := context.Background()
	impl := &Implementation{Name: "test", Version: "v1"}
	server := NewServer(impl, nil)
	sizes := []int{0, 10, 1000, 3000, 20000, maxFrame + 100}
	body := func(size, n int) string {
		return fmt.Sprintf(`{"content":[{"type":"text","text":"%d %s"}]}`, n, strings.Repeat("x", size))
	}
	server.AddTool(&Tool{Name: "relay", InputSchema: &jsonschema.Schema{Type: "object"}}, func(_ context.Context, req *CallToolRequest) (*CallToolResult, error) {
		var args struct{ Size, N int }
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		var r CallToolResult
		r.RelayJSON([]byte(body(args.Size, args.N)))
		return &r, nil
	})
	want := func(size, n int) string {
		// What relayed lays in a new frame, after the head as
		// annotateServerInfo's Meta gives it.
		r := &CallToolResult{resultType: resultTypeComplete}
		r.RelayJSON([]byte(body(size, n)))
		annotateServerInfo(r, impl)
		head, err := relayHead(r.Meta, r.resultType)
		if err != nil {
			t.Fatal(err)
		}
		return string(head[:len(head)-1]) + "," + body(size, n)[1:]
	}
	var reused int
	var wg sync.WaitGroup
	for c := 0; c < 4; c++ {
		ct, st := NewInMemoryTransports()
		if _, err := server.Connect(ctx, st, nil); err != nil {
			t.Fatal(err)
		}
		cs, err := NewClient(&Implementation{Name: "c", Version: "v1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		for g := 0; g < 2; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; n < 60; n++ {
					size := sizes[(n+g+c)%len(sizes)]
					// A frame written over while it is read may leave the
					// client waiting for an answer it cannot read: a
					// deadline ends the test then.
					cctx, cancel := context.WithTimeout(ctx, time.Minute)
					got, err := cs.CallTool(cctx, &CallToolParams{Name: "relay", Arguments: map[string]any{"Size": size, "N": n}})
					cancel()
					if err != nil {
						t.Error(err)
						return
					}
					if w := want(size, n); string(got.DecodedJSON()) != w {
						t.Errorf("size %d, call %d: the client read\n%.200s\nwant\n%.200s", size, n, got.DecodedJSON(), w)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	frames.mu.Lock()
	reused = len(frames.free)
	frames.mu.Unlock()
	if reused == 0 {
		t.Error("no frame kept")
	}
	// A frame is given back only for a response whose result is still the
	// one NewResponse laid in it.
	// A Framed that is not the session's own (RelayJSONRoom's buffer,
	// patch 27) is never given back.
	f := jsonrpc2.Framed(make([]byte, jsonrpc2.FrameRoom+2, jsonrpc2.FrameRoom+10))
	copy(f[jsonrpc2.FrameRoom:], "{}")
	if resp, err := jsonrpc2.NewResponse(jsonrpc2.Int64ID(1), f, nil); err != nil || jsonrpc2.FrameOf(resp) != nil {
		t.Error("a Framed given back", err)
	}
	resp, err := jsonrpc2.NewResponse(jsonrpc2.Int64ID(1), jsonrpc2.OwnFramed(f), nil)
	if err != nil {
		t.Fatal(err)
	}
	if jsonrpc2.FrameOf(resp) == nil {
		t.Error("an OwnFramed response has no frame")
	}
	resp.Result = []byte("{}")
	if jsonrpc2.FrameOf(resp) != nil {
		t.Error("a frame for a replaced result")
	}
}

// takeFrames empties the pool and returns how many frames it held.
// settleFrames empties the free list once no frame of an earlier test's
// connection comes back into it late (a frame is given back just after
// its write, which may be after its client read the answer).
func settleFrames() {
	takeFrames()
	for i := 0; i < 100; i++ {
		time.Sleep(20 * time.Millisecond)
		if takeFrames() == 0 {
			return
		}
	}
}

func takeFrames() int {
	frames.mu.Lock()
	defer frames.mu.Unlock()
	n := len(frames.free)
	frames.free = nil
	return n
}

// framesTool relays {"content":[{"type":"text","text":TEXT}]}, TEXT the
// call's argument "Text", with a _meta (a head relayed writes in front):
// with RelayJSON when room < 0, else with RelayJSONRoom after room bytes
// and two spare.
func framesTool(room int) func(context.Context, *CallToolRequest) (*CallToolResult, error) {
	return func(_ context.Context, req *CallToolRequest) (*CallToolResult, error) {
		var args struct{ Text string }
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		body := `{"content":[{"type":"text","text":"` + args.Text + `"}]}`
		out := &CallToolResult{Meta: Meta{"k": "v"}}
		if room < 0 {
			out.RelayJSON([]byte(body))
		} else {
			buf := make([]byte, room, room+len(body)+2)
			out.RelayJSONRoom(append(buf, body...), room)
		}
		return out, nil
	}
}

func framesServer() *Server {
	server := NewServer(&Implementation{Name: "s", Version: "1"}, nil)
	for name, room := range map[string]int{"new": -1, "short": 0, "room": 600} {
		server.AddTool(&Tool{Name: name, InputSchema: &jsonschema.Schema{Type: "object"}}, framesTool(room))
	}
	return server
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestFramesLogged (review s44's R12): a server connected through a
// LoggingTransport over a stream connection, whose Write encodes each
// response again after its delegate's, answers 8 goroutines calling at
// once with results laid in frames of getFrame's: every write logged is
// the one written, and no frame is given back (ioConn's Write gives none
// back: only the jsonrpc2 connection, when the stream connection is its
// own Writer, has the whole chain of Writes behind it). Given back at the
// end of ioConn's Write (patch 31 before), a frame was read and written by
// loggingConn while another result was laid in it: -race reports it, and
// the pool is not empty.
func TestFramesLogged(t *testing.T) {
	ctx := context.Background()
	settleFrames()
	ct, st := NewInMemoryTransports()
	log := &lockedBuffer{}
	ss, err := framesServer().Connect(ctx, &LoggingTransport{Transport: st, Writer: log}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := NewClient(&Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	const size = 2000
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := strings.Repeat(fmt.Sprint(g), size)
			for i := 0; i < 200; i++ {
				res, err := cs.CallTool(ctx, &CallToolParams{Name: "new", Arguments: map[string]any{"Text": text}})
				if err != nil {
					t.Error(err)
					return
				}
				if tc, ok := res.Content[0].(*TextContent); !ok || tc.Text != text {
					t.Errorf("goroutine %d, call %d: the client read another text", g, i)
					return
				}
			}
		}()
	}
	wg.Wait()
	// Closed, the session has written (and logged) every answer.
	cs.Close()
	ss.Close()
	log.mu.Lock()
	logged := log.b.String()
	log.mu.Unlock()
	bad, results := 0, 0
	for _, line := range strings.Split(logged, "\n") {
		if !strings.HasPrefix(line, "write: ") || !strings.Contains(line, `"text":"`) {
			continue
		}
		results++
		i := strings.Index(line, `"text":"`) + len(`"text":"`)
		if txt := line[i:min(len(line), i+size)]; len(txt) != size || strings.Count(txt, txt[:1]) != size || !strings.HasPrefix(line, `write: {"jsonrpc":"2.0","id":`) {
			bad++
		}
	}
	if results != 8*200 || bad > 0 {
		t.Errorf("%d results logged (want %d), %d of them not what was written", results, 8*200, bad)
	}
	if n := takeFrames(); n != 0 {
		t.Errorf("%d frames given back through a LoggingTransport", n)
	}
}

// TestFramesNotOwned (review s44's R13 b): a frame is given back only when
// it is getFrame's and the stream connection wrote it alone: never a result
// laid in place in RelayJSONRoom's buffer (patch 27), nor results answered
// in a batch (kept by the connection until the batch is complete), nor
// results written over streamable HTTP. A result laid in a frame of
// getFrame's and written alone over a stream connection is given back (the
// control, with a room too short and with none).
func TestFramesNotOwned(t *testing.T) {
	ctx := context.Background()
	text := strings.Repeat("t", 300)
	want := `{"_meta":{"k":"v"},"content":[{"type":"text","text":"` + text + `"}]}`
	// A protocol before 2026-07-28: the session adds nothing to the head.
	opts := &ClientSessionOptions{ProtocolVersion: protocolVersion20251125}
	call := func(t *testing.T, cs *ClientSession, tool string) {
		for i := 0; i < 20; i++ {
			res, err := cs.CallTool(ctx, &CallToolParams{Name: tool, Arguments: map[string]any{"Text": text}})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(res.DecodedJSON()); got != want {
				t.Fatalf("%s: the client read %.200s, want %.200s", tool, got, want)
			}
		}
	}
	t.Run("stream", func(t *testing.T) {
		ct, st := NewInMemoryTransports()
		ss, err := framesServer().Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		cs, err := NewClient(&Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		// The server gives a frame back just after its write, which may be
		// after the client has read the answer: "room" goes first (no
		// frame of an earlier tool can come late into its count), and a
		// tool whose frames are kept is waited for (a bound, not a timing).
		for _, c := range []struct {
			tool string
			kept bool
		}{{"room", false}, {"new", true}, {"short", true}} {
			if c.tool == "room" {
				settleFrames()
			} else {
				takeFrames()
			}
			call(t, cs, c.tool)
			n := takeFrames()
			for deadline := time.Now().Add(5 * time.Second); c.kept && n == 0 && time.Now().Before(deadline); n = takeFrames() {
				time.Sleep(time.Millisecond)
			}
			if (n > 0) != c.kept {
				t.Errorf("%s: %d frames kept", c.tool, n)
			}
		}
	})
	t.Run("batch", func(t *testing.T) {
		c, s := NewInMemoryTransports()
		ss, err := framesServer().Connect(ctx, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		conn := c.rwc
		defer conn.Close()
		in := bufio.NewReader(conn)
		send := func(msg string) {
			if _, err := conn.Write([]byte(msg + "\n")); err != nil {
				t.Fatal(err)
			}
		}
		send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
		if line, err := in.ReadBytes('\n'); err != nil || !bytes.Contains(line, []byte(`"protocolVersion":"2025-03-26"`)) {
			t.Fatalf("initialize: %s %v", line, err)
		}
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		takeFrames()
		for i := 0; i < 20; i++ {
			var calls []string
			for id := 1; id <= 3; id++ {
				calls = append(calls, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"new","arguments":{"Text":%q}}}`, id, text))
			}
			send("[" + strings.Join(calls, ",") + "]")
			line, err := in.ReadBytes('\n')
			if err != nil {
				t.Fatal(err)
			}
			var answers []struct {
				ID     int64
				Result json.RawMessage
			}
			if err := json.Unmarshal(line, &answers); err != nil || len(answers) != 3 {
				t.Fatalf("batch %d: %.300s (%v)", i, line, err)
			}
			for _, a := range answers {
				if string(a.Result) != want {
					t.Fatalf("batch %d, call %d: %.200s, want %.200s", i, a.ID, a.Result, want)
				}
			}
		}
		if n := takeFrames(); n != 0 {
			t.Errorf("%d frames of batches kept", n)
		}
	})
	t.Run("http", func(t *testing.T) {
		server := framesServer()
		ts := httptest.NewServer(NewStreamableHTTPHandler(func(*http.Request) *Server { return server }, nil))
		defer ts.Close()
		cs, err := NewClient(&Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, &StreamableClientTransport{Endpoint: ts.URL}, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		takeFrames()
		call(t, cs, "new")
		if n := takeFrames(); n != 0 {
			t.Errorf("%d frames written over HTTP kept", n)
		}
	})
}

// BenchmarkRelayedCall: a client's call of a tool that relays bench/proxy's
// answer (read_text_file of its 20-line file, as the Node server writes
// it), over stream connections (InMemoryTransports), in protocol
// 2026-07-28 (the session writes a head with serverInfo in front of it):
// the time and allocations of both sides, those patches 29 (the client
// keeps the frame's bytes), 30 (the head from a cache) and 31 (the frame
// used again) take away among them. It uses the SDK's API only, so that the
// same file measures a copy without those patches:
//
//	go test -run '^$' -bench BenchmarkRelayedCall -benchmem -count 5 ./mcp/
//
// Its cases are named by the client's protocol version: 2026-07-28 (the
// figures given as BenchmarkRelayedCall's before the cases were added),
// 2025-11-25 (what toolgate's gateway asks of its upstreams) and 2025-06-18
// (an older client): without a head the result is plain, so patch 29 keeps
// its bytes.
func BenchmarkRelayedCall(b *testing.B) {
	for _, v := range []string{"2026-07-28", "2025-11-25", "2025-06-18"} {
		b.Run(v, func(b *testing.B) { benchmarkRelayedCall(b, v) })
	}
}

func benchmarkRelayedCall(b *testing.B, version string) {
	ctx := context.Background()
	var text strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&text, `line %d of a small file read by the MCP benchmark\n`, i)
	}
	raw := []byte(`{"content":[{"type":"text","text":"` + text.String() + `"}],"structuredContent":{"content":"` + text.String() + `"}}`)
	server := NewServer(&Implementation{Name: "s", Version: "1"}, nil)
	server.AddTool(&Tool{Name: "read", InputSchema: &jsonschema.Schema{Type: "object"}}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
		var r CallToolResult
		r.RelayJSON(raw)
		return &r, nil
	})
	ct, st := NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	cs, err := NewClient(&Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, &ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	params := &CallToolParams{Name: "read", Arguments: map[string]any{}}
	call := func() {
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError || len(res.Content) != 1 {
			b.Fatal(res, err)
		}
	}
	for range 100 {
		call()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		call()
	}
}
