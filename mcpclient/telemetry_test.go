package mcpclient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/tool"
)

// metaServer is an HTTP upstream whose tool "where" answers with the
// params._meta it received, and whose tool "oops" fails (isError).
func metaServer(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "meta", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	s.AddTool(&mcp.Tool{Name: "where", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			meta, _ := json.Marshal(r.Params.Meta)
			return text(string(meta)), nil
		})
	s.AddTool(&mcp.Tool{Name: "oops", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res := text("it broke")
			res.IsError = true
			return res, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// recording returns providers that record into memory.
func recording(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter, *sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	spans, reader := tracetest.NewInMemoryExporter(), sdkmetric.NewManualReader()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
	return tp, spans, mp, reader
}

func spanAttrs(s tracetest.SpanStub) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

func spansNamed(spans *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// TestTelemetryClientSpans: every request to an upstream is a CLIENT span,
// a child of the caller's span, whose trace context and baggage the
// upstream receives in params._meta; a tool call names its tool; isError
// is tool_error; the duration lands in mcp.client.operation.duration.
func TestTelemetryClientSpans(t *testing.T) {
	tp, spans, mp, reader := recording(t)
	endpoint := metaServer(t)
	ctx := context.Background()
	u, err := mcpclient.Connect(ctx, mcpclient.Config{Name: "up", URL: endpoint}, mcpclient.Options{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	port := must(url.Parse(endpoint)).Port()

	// A call made inside a span of the caller's (the engine's execute_tool),
	// with baggage, and one made outside any span.
	member, _ := baggage.NewMember("tenant", "acme")
	bag, _ := baggage.New(member)
	parentCtx, parent := tp.Tracer("test").Start(baggage.ContextWithBaggage(ctx, bag), "execute_tool up__where")
	where := find(t, u.Tools(), "up__where")
	inside, err := where.Run(parentCtx, tool.Call{Name: "up__where", Args: json.RawMessage(`{}`)})
	parent.End()
	if err != nil || inside.Error != nil {
		t.Fatalf("where: %v %+v", err, inside.Error)
	}
	outside, _ := where.Run(ctx, tool.Call{Name: "up__where", Args: json.RawMessage(`{}`)})
	oops, _ := find(t, u.Tools(), "up__oops").Run(ctx, tool.Call{Name: "up__oops", Args: json.RawMessage(`{}`)})
	if oops.Error == nil {
		t.Fatalf("oops did not fail: %+v", oops)
	}

	calls := spansNamed(spans, "tools/call where")
	if len(calls) != 2 {
		t.Fatalf("%d spans named tools/call where, want 2", len(calls))
	}
	for i, tc := range []struct {
		res     tool.Result
		parent  trace.SpanContext
		baggage string
	}{
		{inside, parent.SpanContext(), "tenant=acme"},
		{outside, trace.SpanContext{}, ""},
	} {
		s := calls[i]
		if s.SpanKind != trace.SpanKindClient {
			t.Errorf("call %d: kind %v, want client", i, s.SpanKind)
		}
		if s.Parent.SpanID() != tc.parent.SpanID() || s.Parent.TraceID() != tc.parent.TraceID() {
			t.Errorf("call %d: parent %v, want %v", i, s.Parent, tc.parent)
		}
		var meta map[string]any
		if err := json.Unmarshal([]byte(tc.res.Text()), &meta); err != nil {
			t.Fatalf("call %d: %v in %q", i, err, tc.res.Text())
		}
		want := "00-" + s.SpanContext.TraceID().String() + "-" + s.SpanContext.SpanID().String() + "-01"
		if meta["traceparent"] != want {
			t.Errorf("call %d: the upstream got traceparent %v, want the client span's %s", i, meta["traceparent"], want)
		}
		if got, _ := meta["baggage"].(string); got != tc.baggage {
			t.Errorf("call %d: the upstream got baggage %q, want %q", i, got, tc.baggage)
		}
		if meta["progressToken"] == nil {
			t.Errorf("call %d: the progress token is gone from _meta: %v", i, meta)
		}
		got := spanAttrs(s)
		for k, v := range map[attribute.Key]string{
			"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "where",
			"network.transport": "tcp", "server.address": "127.0.0.1", "server.port": port,
			"mcp.protocol.version": mcpclient.DefaultProtocolVersion, "error.type": "",
		} {
			if got[k] != v {
				t.Errorf("call %d: %s = %q, want %q", i, k, got[k], v)
			}
		}
		if got["mcp.session.id"] == "" {
			t.Errorf("call %d: no mcp.session.id over streamable HTTP", i)
		}
	}

	failed := spansNamed(spans, "tools/call oops")
	if len(failed) != 1 || spanAttrs(failed[0])["error.type"] != "tool_error" || failed[0].Status.Code != codes.Error {
		t.Errorf("tools/call oops: %+v, want error.type tool_error and status Error", failed)
	}
	for _, name := range []string{"initialize", "notifications/initialized", "tools/list"} {
		got := spansNamed(spans, name)
		if len(got) == 0 || got[0].SpanKind != trace.SpanKindClient || spanAttrs(got[0])["mcp.method.name"] != name {
			t.Errorf("%s: spans %+v, want a CLIENT span", name, got)
		}
	}
	if v := spanAttrs(spansNamed(spans, "initialize")[0])["mcp.protocol.version"]; v != mcpclient.DefaultProtocolVersion {
		t.Errorf("initialize: mcp.protocol.version %q, want the negotiated %s", v, mcpclient.DefaultProtocolVersion)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "mcp.client.operation.duration" {
				continue
			}
			if m.Unit != "s" {
				t.Errorf("unit %q, want s", m.Unit)
			}
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				if !slices.Equal(dp.Bounds, []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}) {
					t.Errorf("bounds %v", dp.Bounds)
				}
				if dp.Attributes.HasValue("mcp.session.id") {
					t.Errorf("a series has mcp.session.id")
				}
				tl, _ := dp.Attributes.Value("gen_ai.tool.name")
				et, _ := dp.Attributes.Value("error.type")
				counts[tl.Emit()+"|"+et.Emit()] += dp.Count
			}
		}
	}
	if counts["where|"] != 2 || counts["oops|tool_error"] != 1 {
		t.Errorf("mcp.client.operation.duration counts %v, want where|: 2, oops|tool_error: 1", counts)
	}
}

// TestTelemetryClientStdio: a command upstream's spans say pipe and name
// no server address or session.
func TestTelemetryClientStdio(t *testing.T) {
	tp, spans, _, _ := recording(t)
	ctx := context.Background()
	u, err := mcpclient.Connect(ctx, stdio(t, "cmd"), mcpclient.Options{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if res := run(t, find(t, u.Tools(), "cmd__echo"), `{"text":"hi"}`); res.Error != nil {
		t.Fatal(res.Error)
	}
	if res := run(t, find(t, u.Tools(), "cmd__missing"), `{}`); res.Error == nil {
		t.Fatal("missing did not fail")
	}
	for name, errType := range map[string]string{"tools/call echo": "", "tools/call missing": "tool_error"} {
		got := spansNamed(spans, name)
		if len(got) != 1 {
			t.Fatalf("%d spans named %s", len(got), name)
		}
		a := spanAttrs(got[0])
		if a["network.transport"] != "pipe" || a["server.address"] != "" || a["mcp.session.id"] != "" || a["error.type"] != errType {
			t.Errorf("%s: attributes %v, want pipe, no address, no session, error.type %q", name, a, errType)
		}
	}

}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
