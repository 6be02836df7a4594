package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/tool"
)

// BenchmarkAnswer: what the gateway's server side does with a result an
// upstream gave (bench/proxy's answer, as the Node server writes it) once
// the engine is done: encode it (callResult, then the session's
// MarshalJSON), or check it is unchanged and take its bytes (Relay.For,
// callResult, the session's relayed). The tie (mcpclient's relayable scan
// and tool.NewRelay) is mcpclient's BenchmarkRelayTie.
func BenchmarkAnswer(b *testing.B) {
	var text strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&text, `line %d of a small file read by the MCP benchmark\n`, i)
	}
	raw := []byte(`{"content":[{"type":"text","text":"` + text.String() + `"}],"structuredContent":{"content":"` + text.String() + `"}}`)
	var r mcp.CallToolResult
	if err := r.UnmarshalJSON(raw); err != nil {
		b.Fatal(err)
	}
	res := tool.Result{Content: []tool.Content{tool.TextContent(r.Content[0].(*mcp.TextContent).Text)}, Structured: r.StructuredContent}
	res.Relay = tool.NewRelay(r.DecodedJSON(), nil, res)
	b.Run("encoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := callResult(context.Background(), res).MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("relayed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			data, ok := res.Relay.For(res)
			if !ok {
				b.Fatal("not relayed")
			}
			out := callResult(context.Background(), res)
			out.RelayJSON(data)
		}
	})
}

// TestRelayedIsEncoded: an upstream's result that a gateway relays says,
// as JSON, what the same result encoded says, which is what a gateway on
// upstream's go-sdk sends (it relays nothing: callResult's fallback,
// sdkEncoded); not byte for byte, since the relayed bytes keep the
// upstream's escapes and spacing.
func TestRelayedIsEncoded(t *testing.T) {
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"line 1\nline <2> & \"3\" \u00e9 \/"}]}`,
		` { "content" : [ { "type" : "text" , "text" : "b" } ] , "isError" : false } `,
		`{"content":[{"type":"text","text":"a"}],"structuredContent":{"content":"a","n":[1,-2,true,null],"m":{}}}`,
		`{"content":[],"structuredContent":"s"}`,
		`{"structuredContent":[{"k":"\u0041\t"}]}`,
		`{}`,
	} {
		var r mcp.CallToolResult
		if err := r.UnmarshalJSON([]byte(raw)); err != nil {
			t.Fatal(err)
		}
		res := tool.Result{Structured: r.StructuredContent}
		for _, c := range r.Content {
			res.Content = append(res.Content, tool.TextContent(c.(*mcp.TextContent).Text))
		}
		res.Relay = tool.NewRelay(r.DecodedJSON(), nil, res)
		relayed, ok := res.Relay.For(res)
		if !ok {
			t.Fatalf("%s: not relayed", raw)
		}
		ctx := tool.WithEncoded(context.Background())
		// MarshalJSON ignores what callResult relays.
		encoded, err := sdkEncoded(ctx, res, callResult(ctx, res)).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		da, db := json.NewDecoder(bytes.NewReader(relayed)), json.NewDecoder(bytes.NewReader(encoded))
		da.UseNumber()
		db.UseNumber()
		if da.Decode(&a) != nil || db.Decode(&b) != nil || !reflect.DeepEqual(normal(a), normal(b)) {
			t.Errorf("relayed %s\nencoded %s", relayed, encoded)
		}
	}
}

// normal drops what encoding a result leaves implicit: an empty content
// list and isError false (the SDK writes content always, isError when set).
func normal(v any) any {
	if m, ok := v.(map[string]any); ok {
		if c, ok := m["content"].([]any); ok && len(c) == 0 || m["content"] == nil {
			delete(m, "content")
		}
		if m["isError"] == false {
			delete(m, "isError")
		}
	}
	return v
}
