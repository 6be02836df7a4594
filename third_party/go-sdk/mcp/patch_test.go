// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// PATCH(toolgate): ServerSession.handle hands a tool's result to jsonrpc2
// already encoded (jsonrpc2.Compact, the output of CallToolResult.MarshalJSON),
// which the response carries as is. These tests check that this is what
// v1.8.0 wrote: the encoder's output for the result.

// encodeV180 is how v1.8.0 encoded a result (jsonrpc2's marshalToRaw).
func encodeV180(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

func patchResults() []*CallToolResult {
	return []*CallToolResult{
		{},
		{Content: []Content{}},
		{Content: []Content{&TextContent{Text: ""}}},
		{Content: []Content{&TextContent{Text: "1|line <b>&amp;</b>\n2|\t\"quoted\" \\ é ☕ \u2028 \x01"}}},
		{
			Meta:              Meta{"z": 1, "a": map[string]any{"end_line": 20, "truncated": false}},
			Content:           []Content{&TextContent{Text: "a"}, &ImageContent{Data: []byte{0, 1, 2}, MIMEType: "image/png"}, &AudioContent{Data: []byte("x"), MIMEType: "audio/wav"}},
			StructuredContent: map[string]any{"content": "a<b", "n": 1.5, "list": []any{nil, true}},
		},
		{Content: []Content{&TextContent{Text: "denied"}}, IsError: true, StructuredContent: json.RawMessage(` { "type" : "permission_denied" } `)},
		{Content: []Content{&EmbeddedResource{Resource: &ResourceContents{URI: "file:///a", MIMEType: "text/plain", Text: "x"}}, &ResourceLink{URI: "file:///b", Name: "b"}}},
	}
}

// TestCallToolResultMarshalIsCompact: CallToolResult.MarshalJSON returns the
// bytes the encoder writes for the result, so taking them as they are (no
// compaction) changes nothing on the wire.
func TestCallToolResultMarshalIsCompact(t *testing.T) {
	for i, r := range patchResults() {
		data, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if want := encodeV180(t, r); !bytes.Equal(data, want) {
			t.Errorf("result %d: MarshalJSON\n%s\nthe encoder\n%s", i, data, want)
		}
	}
}

// TestHandleEncodesToolResultOnce: a tools/call is answered with a
// jsonrpc2.Compact holding exactly the encoder's bytes for the result the
// session made of the tool's.
func TestHandleEncodesToolResultOnce(t *testing.T) {
	for i, want := range patchResults() {
		server := NewServer(&Implementation{Name: "test", Version: "v1"}, nil)
		server.AddTool(&Tool{Name: "tool", InputSchema: &jsonschema.Schema{Type: "object"}}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
			return want, nil
		})
		ss := &ServerSession{server: server}
		id, err := jsonrpc.MakeID(float64(i))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ss.handle(context.Background(), &jsonrpc.Request{ID: id, Method: methodCallTool, Params: mustMarshal(map[string]any{
			"_meta": map[string]any{
				MetaKeyProtocolVersion:    protocolVersion20260728,
				MetaKeyClientInfo:         map[string]any{"name": "c", "version": "1"},
				MetaKeyClientCapabilities: map[string]any{},
			},
			"name":      "tool",
			"arguments": map[string]any{},
		})})
		if err != nil {
			t.Fatal(err)
		}
		c, ok := got.(jsonrpc2.Compact)
		if !ok {
			t.Fatalf("result %d: handle returned %T, want jsonrpc2.Compact", i, got)
		}
		// The session adds _meta and resultType to (a copy of) the result:
		// decode what it returned and encode that as v1.8.0 did.
		var back CallToolResult
		if err := json.Unmarshal(c, &back); err != nil {
			t.Fatal(err)
		}
		if w := encodeV180(t, &back); !bytes.Equal(c, w) {
			t.Errorf("result %d: handle returned\n%s\nthe encoder writes\n%s", i, c, w)
		}
		if g, w := encodeV180(t, back.Content), encodeV180(t, want.Content); len(want.Content) > 0 && !bytes.Equal(g, w) {
			t.Errorf("result %d: handle returned the content\n%s\nnot the tool's\n%s", i, g, w)
		}
	}
}
