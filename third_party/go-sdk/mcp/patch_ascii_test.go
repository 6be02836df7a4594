// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

//go:build unix

package mcp

import (
	"context"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2"
)

// PATCH(toolgate): patch 39. A response read from a stdio stream, its
// frame marked all ASCII by the Skip that found its end, is decoded into a
// CallToolResult as v1.8.0 decodes it: the same values, or the same
// refusal, for every result of patch 11's tests (non-ASCII and invalid
// UTF-8 texts, escapes, escaped surrogates, control bytes, invalid JSON)
// and for large ones, read by the reader goroutine and inline (in turn).

// asciiResults are patch 11's results and large ones around the first and
// the largest read (4 KiB, 1 MiB), ASCII or not.
func asciiResults() []string {
	big := func(n int, tail string) string {
		return `{"content":[{"type":"text","text":"` + strings.Repeat(`line of text\n`, n/14) + tail + `"}],"structuredContent":{"content":"x"}}`
	}
	in := append(plainInputs(), plainInvalid...)
	for _, n := range []int{4 << 10, 300 << 10, 2 << 20} {
		in = append(in, big(n, ""), big(n, "caf\xc3\xa9"), big(n, "\xff"), big(n, "\x01"), big(n, `\ud800`), big(n, `\x`))
	}
	return in
}

// readResult reads the frame of a response with result in from a
// connection (newIOConn, or v1.8.0's newIOConnV180; a reader goroutine
// either way) and decodes it as a call's Await does, or v1.8.0's
// UnmarshalJSON.
func readResult(t *testing.T, frame string, v180, inline bool) (m jsonrpc2.Message, r CallToolResult, readErr, resultErr error) {
	t.Helper()
	stream := rwc{io.NopCloser(strings.NewReader(frame)), nopCloserWriter{io.Discard}}
	var c *ioConn
	switch {
	case v180:
		c = newIOConnV180(stream, 0)
	case inline: // a polled pipe, read by Read itself
		r, w := pipe(t)
		go func() { w.Write([]byte(frame)); w.Close() }()
		c = newIOConn(rwc{r, nopCloserWriter{io.Discard}})
		if c.incoming != nil {
			t.Fatal("a reader goroutine")
		}
	default:
		c = newIOConn(stream)
	}
	defer c.Close()
	m, readErr = c.Read(context.Background())
	if readErr != nil {
		return nil, r, readErr, nil
	}
	if resp, ok := m.(*jsonrpc2.Response); ok && resp.Error == nil {
		if v180 {
			resultErr = unmarshalV180(&r, append([]byte(nil), resp.Result...))
		} else {
			resultErr = jsonrpc2.UnmarshalResult(resp, &r)
		}
	}
	return m, r, nil, resultErr
}

func TestASCIIFramesMatchV180(t *testing.T) {
	decoded := 0
	for _, in := range asciiResults() {
		frame := `{"jsonrpc":"2.0","id":7,"result":` + in + "}\n"
		m, got, readErr, gotErr := readResult(t, frame, false, decoded%2 == 1)
		want, v180, wantReadErr, v180Err := readResult(t, frame, true, false)
		if (readErr == nil) != (wantReadErr == nil) || readErr != nil && readErr.Error() != wantReadErr.Error() {
			t.Fatalf("%.200q (%d bytes, valid %v): Read %v, v1.8.0 %v", frame, len(frame), json.Valid([]byte(frame)), readErr, wantReadErr)
		}
		if readErr != nil {
			continue
		}
		resp, wresp := m.(*jsonrpc2.Response), want.(*jsonrpc2.Response)
		if resp.ID != wresp.ID || string(resp.Result) != string(wresp.Result) {
			t.Fatalf("%.200q: %v %.200q; v1.8.0 %v %.200q", frame, resp.ID, resp.Result, wresp.ID, wresp.Result)
		}
		if (gotErr == nil) != (v180Err == nil) || gotErr != nil && gotErr.Error() != v180Err.Error() {
			t.Fatalf("%.200q: error %v, v1.8.0 %v", frame, gotErr, v180Err)
		}
		if gotErr != nil {
			continue
		}
		if got.DecodedPlain() {
			decoded++
		}
		if string(got.DecodedJSON()) != strings.Trim(string(wresp.Result), " \t\r\n") {
			t.Fatalf("%.200q: DecodedJSON %.200q", frame, got.DecodedJSON())
		}
		got.decoded, got.plain = nil, false
		if !reflect.DeepEqual(got, v180) {
			t.Fatalf("%.200q:\n%.2000s\nv1.8.0\n%.2000s", frame, dump(got), dump(v180))
		}
	}
	if decoded < 300 {
		t.Errorf("%d decoded plain", decoded)
	}
}
