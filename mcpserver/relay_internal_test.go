package mcpserver

import (
	"context"
	"fmt"
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
