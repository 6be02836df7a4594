// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import "sync"

// PATCH(toolgate): patch 31. frames holds the buffers of relayed results
// (CallToolResult.relayed lays a result with a head in one of getFrame's, a
// jsonrpc2.OwnFramed) that a stream connection has written as the jsonrpc2
// connection's own Writer (ioConn.WriteFree, called where the whole chain
// of Writes has returned and nothing holds the response any more): the
// next relayed result is laid in one of them, memory the last answers
// touched, rather than in a new allocation. At most maxFrames buffers of at
// most maxFrame bytes each are kept; a larger buffer, or one over the count,
// is left to the collector. A buffer is never put back when it is not
// getFrame's (RelayJSONRoom's, patch 27), when a Writer wraps the stream
// connection (LoggingTransport's encodes the response again after its
// delegate's Write), when the response waits for the rest of a batch, or
// when a connection of another kind writes it (streamable HTTP, which may
// keep it for a replay).
var frames struct {
	mu   sync.Mutex
	free [][]byte
}

const (
	maxFrames = 8
	maxFrame  = 64 << 10
)

// getFrame returns a buffer of length 0 and a capacity of at least n: a
// kept one whose capacity is enough, else a new one.
func getFrame(n int) []byte {
	frames.mu.Lock()
	for i := len(frames.free) - 1; i >= 0; i-- {
		if b := frames.free[i]; cap(b) >= n {
			last := len(frames.free) - 1
			frames.free[i] = frames.free[last]
			frames.free[last] = nil
			frames.free = frames.free[:last]
			frames.mu.Unlock()
			return b[:0]
		}
	}
	frames.mu.Unlock()
	return make([]byte, 0, n)
}

// putFrame keeps b, a buffer getFrame returned that nothing uses any
// more, for getFrame to return again; nil is ignored.
func putFrame(b []byte) {
	if b == nil || cap(b) > maxFrame {
		return
	}
	frames.mu.Lock()
	if len(frames.free) < maxFrames {
		frames.free = append(frames.free, b[:0])
	}
	frames.mu.Unlock()
}
