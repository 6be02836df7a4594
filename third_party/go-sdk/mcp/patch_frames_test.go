// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"context"
	"encoding/json"
	"fmt"
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
