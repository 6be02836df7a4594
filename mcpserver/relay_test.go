package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
)

const relaySecret = "AKIAIOSFODNN7EXAMPLE"

// relayCases are an upstream's results as bytes, and whether the gateway
// may send them on as they came.
var relayCases = []struct {
	name  string
	raw   string
	relay bool
}{
	{"text", `{"content":[{"type":"text","text":"line 1\nline <2> & \"3\" \u00e9"}]}`, true},
	{"structured", `{"content":[{"type":"text","text":"a"}],"structuredContent":{"content":"a","n":[1,-2,true,null]},"isError":false}`, true},
	{"spaced", ` { "content" : [ { "type" : "text" , "text" : "b" } ] } `, true},
	{"secret in text", `{"content":[{"type":"text","text":"key ` + relaySecret + ` here"}]}`, false},
	{"secret in structured", `{"content":[{"type":"text","text":"x"}],"structuredContent":{"k":"` + relaySecret + `"}}`, false},
	{"secret in a second text", `{"content":[{"type":"text","text":"x"},{"type":"text","text":"` + relaySecret + `"}]}`, false},
	{"over the budget", `{"content":[{"type":"text","text":"` + strings.Repeat("z", 300) + `"}]}`, false},
	{"secret behind a duplicate key", `{"content":[{"type":"text","text":"` + relaySecret + `","text":"clean"}]}`, false},
	// The structured value is searched in its bytes when they are as
	// compact JSON writes its strings (policy.Redactor.MayMatchJSON), else
	// encoded and searched: a secret behind an escape is found either way.
	{"structured with escapes", `{"content":[{"type":"text","text":"a\nb"}],"structuredContent":{"content":"a\nb \"q\" \\ \t","n":1e2}}`, false}, // 1e2: encoded again
	{"structured plain escapes", `{"content":[{"type":"text","text":"a\nb"}],"structuredContent":{"content":"a\nb \"q\" \\ \t"}}`, true},
	{"secret escaped in structured", `{"content":[],"structuredContent":{"k":"\u0041KIAIOSFODNN7EXAMPLE"}}`, false},
	{"secret spelt with an escape", `{"content":[],"structuredContent":{"k":"pass\u0077ord=hunter2hunter2"}}`, false},
	{"secret beside HTML", `{"content":[],"structuredContent":{"k":"a<b & AKIAIOSFODNN7EXAMPLE"}}`, false},
	{"secret in a URL in structured", `{"content":[],"structuredContent":{"u":"https://app:s3cr3tpass@db/x"}}`, false},
	{"duplicate structured key", `{"content":[],"structuredContent":{"k":"` + relaySecret + `","k":"clean"}}`, false},
	{"escaped key", `{"content":[{"type":"text","te\u0078t":"x"}]}`, false},
	{"unknown member", `{"content":[{"type":"text","text":"x"}],"note":"` + relaySecret + `"}`, false},
	{"annotations", `{"content":[{"type":"text","text":"x","annotations":{"audience":["user"]}}]}`, false},
	{"meta", `{"content":[{"type":"text","text":"x"}],"_meta":{"k":"` + relaySecret + `"}}`, false},
	{"lone surrogate", `{"content":[{"type":"text","text":"AKIA\ud800IOSFODNN7EXAMPLE"}]}`, false},
	{"large number", `{"content":[],"structuredContent":{"card":4111111111111111111}}`, false},
	{"fraction", `{"content":[],"structuredContent":{"n":1.50}}`, false}, // encoded again: 1.5
	{"resource link", `{"content":[{"type":"resource_link","uri":"file:///x","name":"x"}]}`, false},
	{"error", `{"content":[{"type":"text","text":"failed"}],"isError":true}`, false},
}

// TestRelay: through a gateway (mcpclient, the engine with the default
// redaction and a 200-byte budget, mcpserver), an upstream's result that
// nothing changes reaches the client byte for byte (after what the session
// adds in front), and one that a stage changes, or whose bytes could say
// more than the checks saw, never does.
func TestRelay(t *testing.T) {
	ctx := context.Background()
	results := map[string]string{}
	for _, c := range relayCases {
		results[strings.ReplaceAll(c.name, " ", "_")] = c.raw
	}
	cs := relayGateway(t, results)

	for _, c := range relayCases {
		t.Run(c.name, func(t *testing.T) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__" + strings.ReplaceAll(c.name, " ", "_"), Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			got := res.DecodedJSON()
			if strings.Contains(string(got), relaySecret) || strings.Contains(string(got), `IOSFODNN7EXAMPLE`) && strings.Contains(c.raw, relaySecret) {
				t.Errorf("the secret reached the client: %s", got)
			}
			var compact bytes.Buffer // relayed bytes are compacted on the way
			if err := json.Compact(&compact, []byte(c.raw)); err != nil {
				t.Fatal(err)
			}
			relayed := bytes.HasSuffix(got, compact.Bytes()[1:])
			if relayed != c.relay {
				t.Errorf("relayed %v, want %v: the client got %s", relayed, c.relay, got)
			}
			if relayed && !bytes.HasPrefix(got, []byte(`{"_meta":{"io.modelcontextprotocol/serverInfo":`)) {
				t.Errorf("the session's additions are not in front: %s", got)
			}
		})
	}
}

// relayGateway is a client of a gateway (mcpclient over HTTP, the engine
// with the default policy's redaction and a 200-byte output budget,
// mcpserver) in front of an upstream whose tools answer with the bytes
// results names.
func relayGateway(t testing.TB, results map[string]string) *mcp.ClientSession {
	ctx := context.Background()
	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	for name, raw := range results {
		if !json.Valid([]byte(raw)) {
			t.Fatalf("%s is not JSON", name)
		}
		up.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var r mcp.CallToolResult
				r.RelayJSON([]byte(raw)) // the upstream writes exactly these bytes
				return &r, nil
			})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, &mcp.StreamableHTTPOptions{JSONResponse: true})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	u, err := mcpclient.Connect(ctx, mcpclient.Config{Name: "up", URL: "http://" + ln.Addr().String() + "/mcp"}, mcpclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	reg := registry.New()
	if err := reg.Register(u.Tools()...); err != nil {
		t.Fatal(err)
	}
	pol := policy.Default()
	red, err := policy.NewRedactor(pol.Secrets.All())
	if err != nil {
		t.Fatal(err)
	}
	max := 200
	if _, ok := t.(*testing.B); ok {
		max = 1 << 20
	}
	eng := engine.New(engine.Options{Registry: reg, Policy: pol, Redactor: red, MaxResultBytes: max})
	srv, err := mcpserver.New(mcpserver.Options{Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ct, st := mcp.NewInMemoryTransports()
	go srv.Run(ctx, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// BenchmarkRelay: a call through the gateway (and the in-process upstream
// and client) of the answer of bench/proxy (read_text_file of its 20-line
// file, as the Node server writes it), relayed, and with a member that
// makes the gateway encode it again (annotations: the same decoding).
func BenchmarkRelay(b *testing.B) {
	text := ""
	for i := 1; i <= 20; i++ {
		text += fmt.Sprintf("line %d of a small file read by the MCP benchmark\\n", i)
	}
	cs := relayGateway(b, map[string]string{
		"relayed": `{"content":[{"type":"text","text":"` + text + `"}],"structuredContent":{"content":"` + text + `"}}`,
		"encoded": `{"content":[{"type":"text","text":"` + text + `","annotations":{}}],"structuredContent":{"content":"` + text + `"}}`,
	})
	for _, name := range []string{"relayed", "encoded"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "up__" + name, Arguments: map[string]any{}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
