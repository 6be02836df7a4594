// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

//go:build unix

package mcp

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// PATCH(toolgate): patch 13, a frame read whole is taken without a
// json.Decoder. patch 3's TestInlineReadMatchesReaderGoroutine compares
// the frames of many streams with v1.8.0's over pipes written at once, 7
// and 1 bytes at a time; these tests cut streams anywhere.

// chunkReader returns data in reads of the sizes given (cycling), then
// io.EOF.
type chunkReader struct {
	data  []byte
	sizes []byte
	n     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	size := len(r.data)
	if len(r.sizes) > 0 {
		size = int(r.sizes[r.n%len(r.sizes)])%64 + 1
		r.n++
	}
	n := copy(p, r.data[:min(size, len(r.data))])
	r.data = r.data[n:]
	return n, nil
}

// framesOf reads stream through a connection (the patched one or v1.8.0's)
// receiving it in reads of the sizes given (nil: at once).
func framesOf(t *testing.T, v180 bool, stream string, sizes []byte, limit int) string {
	newConn := newIOConnLimited
	if v180 {
		newConn = newIOConnV180
	}
	c := newConn(rwc{io.NopCloser(&chunkReader{data: []byte(stream), sizes: sizes}), nopCloserWriter{io.Discard}}, limit)
	defer c.Close()
	return strings.Join(readAll(t, c), "\n")
}

// frameStreams are streams of frames, plain and not.
func frameStreams() []string {
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	answer := `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"` + strings.Repeat(`line \"a\"\n`, 300) + `"}]}}`
	return []string{
		"", "\n", ping, ping + "\n", ping + "\r\n" + answer + "\n", " \t" + ping + "\n\n" + ping, answer + "\n" + answer + "\n",
		"[" + ping + "," + ping + "]\n", "[]\n", ping + " " + ping + "\n", ping + "x\n", ping + "\rx\n", ping + "\n42\n",
		"42\n" + ping, "true\n", ping + "\n{\"jsonrpc\":\"2.0\",\"id\":3,\"meth", "{\n\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"\n}\n" + ping,
		ping + "\nhello\n", `{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + "}\n" + ping + "\n",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\"}\n", `{"a":1,}` + "\n", ping + "\n" + `{"jsonrpc":"1.0"}` + "\n", "\n\n" + ping + "\n\n",
		inFlight(), inFlight() + `{"a":1,}` + "\n" + ping + "\n", inFlight() + "{\"jsonrpc\":\"2.0\",\"id\":3,\"meth",
		strings.Repeat(" ", 4090) + ping + "\n" + ping, inFlight()[:9000] + "x" + inFlight()[9000:],
		strings.Replace(answer, "line", strings.Repeat("line ", 40000), 1) + "\n" + ping + "\n", // 200 KB, read in parts
	}
}

// inFlight is answers of many sizes written back to back (as calls in
// flight are answered), so that reads which fill the buffer cut them
// anywhere.
func inFlight() string {
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s"}]}}`+"\n", i, strings.Repeat(`line \"a\"\n`, i*i*7%900))
	}
	return b.String()
}

// TestPlainFramesMatchV180: where v1.8.0's frames (messages and the error
// that ends them) are the same whether the stream arrives at once or a
// byte at a time, the patched connection reads the same in reads of any
// sizes; and it reads plain frames without a Decoder.
func TestPlainFramesMatchV180(t *testing.T) {
	for _, stream := range frameStreams() {
		want := framesOf(t, true, stream, nil, 0)
		if framesOf(t, true, stream, []byte{0}, 0) != want {
			continue // v1.8.0's own frames depend on how the bytes arrive
		}
		for _, sizes := range [][]byte{nil, {0}, {6}, {63}, {2, 40, 0, 17}, {63, 63, 5}} {
			if got := framesOf(t, false, stream, sizes, 0); got != want {
				t.Errorf("%q in reads of %v:\n%s\nv1.8.0:\n%s", stream, sizes, got, want)
			}
		}
	}
	// A value whose end the next byte decides (a number, a literal) is
	// never taken plain, even at the end of what was read; one cut short
	// neither.
	for _, data := range []string{"4", "42", "tru", "true", `"a"`, `{"a":1`, `{"a":1} `, "[1,2]x"} {
		c := &ioConn{in: []byte(data), inErr: io.EOF}
		if raw, ok := c.readPlainFrame(); ok {
			t.Errorf("%q: taken plain as %s", data, raw)
		}
	}
	// Answers written back to back are taken plain, each, though reads cut
	// them; and each of two answers in one read.
	for _, c := range []struct {
		stream string
		frames int
	}{{inFlight(), 30}, {frameStreams()[6], 2}} {
		r, w := pipe(t)
		go func() { w.Write([]byte(c.stream)); w.Close() }()
		conn := newIOConn(rwc{r, nopCloserWriter{io.Discard}})
		for range c.frames {
			if _, err := conn.readFrame(); err != nil || conn.dec != nil {
				t.Fatalf("readFrame: %v, decoder %v", err, conn.dec != nil)
			}
		}
		conn.Close()
	}
}

// FuzzPlainFrames: TestPlainFramesMatchV180's comparison on any stream
// cut anywhere (under a frame limit too: v1.8.0's frames with a limit
// depend on its reads, and a stream that gives the same at once and a
// byte at a time must give the same in any reads).
//
//	go test -run '^$' -fuzz FuzzPlainFrames -fuzztime 60s ./mcp/
func FuzzPlainFrames(f *testing.F) {
	for _, s := range frameStreams() {
		f.Add(s, []byte{3, 60, 1}, false)
	}
	f.Fuzz(func(t *testing.T, stream string, sizes []byte, limited bool) {
		limit := 0
		if limited {
			limit = 200
		}
		want := framesOf(t, true, stream, nil, limit)
		if framesOf(t, true, stream, []byte{0}, limit) != want {
			return
		}
		if got := framesOf(t, false, stream, sizes, limit); got != want {
			t.Errorf("%q in reads of %v (limit %d):\n%s\nv1.8.0:\n%s", stream, sizes, limit, got, want)
		}
	})
}
