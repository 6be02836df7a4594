package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// telFixture is a server whose providers record into memory, with tools
// that succeed, fail and report the trace context they run in.
type telFixture struct {
	srv    *mcpserver.Server
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader

	mu   sync.Mutex
	seen map[string]probe // probe's "id" argument → what it saw
}

// probe is what the probe tool saw of its context.
type probe struct {
	span    trace.SpanContext
	baggage string // the value of the baggage member "tenant"
}

func newTelFixture(t *testing.T) *telFixture {
	t.Helper()
	f := &telFixture{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader(), seen: map[string]probe{}}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(f.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(f.reader))
	t.Cleanup(func() { tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
	reg := registry.New()
	type probeIn struct {
		ID     string `json:"id"`
		Secret string `json:"secret,omitempty"`
	}
	err := reg.Register(
		tool.New("probe", "Reports the trace context it runs in.", func(ctx context.Context, in probeIn) (string, error) {
			f.mu.Lock()
			f.seen[in.ID] = probe{span: trace.SpanContextFromContext(ctx), baggage: baggage.FromContext(ctx).Member("tenant").Value()}
			f.mu.Unlock()
			return "seen " + in.Secret, nil
		}, tool.ReadOnly()),
		tool.Func(tool.Definition{Name: "broken", Description: "Always fails.", Level: tool.LevelRead, Annotations: tool.Annotations{ReadOnly: true}},
			func(context.Context, tool.Call) (tool.Result, error) {
				return tool.Result{}, tool.Errorf(tool.NotFound, "the widget is gone")
			}),
	)
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(engine.Options{Registry: reg, TracerProvider: tp}) // as the CLI does: the engine's spans and its decision on the server span
	f.srv, err = mcpserver.New(mcpserver.Options{Engine: eng, TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.srv.Close() })
	return f
}

// transport connects a client to the server one way.
type transport struct {
	name string
	// connect returns a session; header, when not nil, is sent with every
	// HTTP request.
	connect func(t *testing.T, f *telFixture, header http.Header) *mcp.ClientSession
	pipe    bool // network.transport is pipe (else tcp), and there is no session id
}

var transports = []transport{
	{"in-memory", func(t *testing.T, f *telFixture, _ http.Header) *mcp.ClientSession {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := f.srv.MCP().Connect(ctxT(t), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		return connectClient(t, ct)
	}, true},
	{"streamable HTTP", func(t *testing.T, f *telFixture, header http.Header) *mcp.ClientSession {
		hs := httptest.NewServer(f.srv.Handler(mcpserver.HTTPOptions{Loopback: true}))
		t.Cleanup(hs.Close)
		hc := &http.Client{Transport: headerRT{http.DefaultTransport, header}}
		return connectClient(t, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: hc})
	}, false},
}

func connectClient(t *testing.T, ct mcp.Transport) *mcp.ClientSession {
	t.Helper()
	cs, err := client("tracer", nil).Connect(ctxT(t), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type headerRT struct {
	base   http.RoundTripper
	header http.Header
}

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header[k] = v
	}
	return h.base.RoundTrip(r)
}

// spanNamed returns the only ended span of that name.
func (f *telFixture) spanNamed(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range f.spans.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1; spans: %v", len(found), name, f.names())
	}
	return found[0]
}

func (f *telFixture) names() []string {
	var out []string
	for _, s := range f.spans.GetSpans() {
		out = append(out, s.Name)
	}
	return out
}

func attrs(s tracetest.SpanStub) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

// TestTelemetryServerSpans checks, over each transport, the SERVER span of
// every kind of request: name, kind, attributes, status, and that a tool
// runs inside it.
func TestTelemetryServerSpans(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			f := newTelFixture(t)
			cs := tr.connect(t, f, nil)
			ctx := ctxT(t)
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "probe", Arguments: map[string]any{"id": "ok"}}); err != nil || res.IsError {
				t.Fatalf("probe: %v %+v", err, res)
			}
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "broken", Arguments: map[string]any{}}); err != nil || !res.IsError {
				t.Fatalf("broken: %v %+v", err, res)
			}
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
			var rpc *jsonrpc.Error
			if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("unknown tool: %v, want JSON-RPC error %d", err, jsonrpc.CodeInvalidParams)
			}
			if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "code_review", Arguments: map[string]string{"language": "go", "code": "x"}}); err != nil {
				t.Fatal(err)
			}

			transport, session := "tcp", cs.ID()
			if tr.pipe {
				transport, session = "pipe", ""
			}
			for _, tc := range []struct {
				span      string
				want      map[attribute.Key]string // "" : must be absent
				errorType string
			}{
				{"initialize", map[attribute.Key]string{"mcp.method.name": "initialize", "gen_ai.operation.name": "", "gen_ai.tool.name": ""}, ""},
				{"tools/list", map[attribute.Key]string{"mcp.method.name": "tools/list", "gen_ai.tool.name": ""}, ""},
				{"tools/call probe", map[attribute.Key]string{"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "probe",
					"toolgate.decision": "allow", "toolgate.approval": "none", "toolgate.principal": "tracer", "toolgate.error.type": ""}, ""}, // the engine's decision (engine.AnnotateSpan)
				{"tools/call broken", map[attribute.Key]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "broken", "rpc.response.status_code": "",
					"toolgate.principal": "tracer", "toolgate.error.type": "not_found"}, "tool_error"},
				// A name the server does not serve stays out of the span name
				// and attributes (made-up names would be unbounded).
				{"tools/call", map[attribute.Key]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "", "rpc.response.status_code": "-32602", "toolgate.decision": ""}, "-32602"},
				{"prompts/get code_review", map[attribute.Key]string{"mcp.method.name": "prompts/get", "gen_ai.prompt.name": "code_review", "gen_ai.tool.name": ""}, ""},
			} {
				s := f.spanNamed(t, tc.span)
				got := attrs(s)
				want := map[attribute.Key]string{"network.transport": transport, "mcp.protocol.version": "2025-11-25", "mcp.session.id": session, "error.type": tc.errorType}
				for k, v := range tc.want {
					want[k] = v
				}
				for k, v := range want {
					if got[k] != v {
						t.Errorf("span %q: %s = %q, want %q (attributes %v)", tc.span, k, got[k], v, got)
					}
				}
				if s.SpanKind != trace.SpanKindServer {
					t.Errorf("span %q: kind %v, want server", tc.span, s.SpanKind)
				}
				wantStatus := codes.Unset
				if tc.errorType != "" {
					wantStatus = codes.Error
				}
				if s.Status.Code != wantStatus || s.Status.Description != tc.errorType {
					t.Errorf("span %q: status %v %q, want %v %q", tc.span, s.Status.Code, s.Status.Description, wantStatus, tc.errorType)
				}
				if s.Parent.IsValid() {
					t.Errorf("span %q has a parent %v though the client sent no trace context", tc.span, s.Parent)
				}
			}
			// The tool ran inside the server span (directly, or under the
			// engine's spans below it).
			call := f.spanNamed(t, "tools/call probe")
			if !f.descends(f.probe(t, "ok").span, call.SpanContext) {
				t.Errorf("the tool ran in span %v, not under the server span %v", f.probe(t, "ok").span, call.SpanContext)
			}
		})
	}
}

func (f *telFixture) probe(t *testing.T, id string) probe {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.seen[id]
	if !ok {
		t.Fatalf("probe %q did not run", id)
	}
	return p
}

// descends reports whether span is anc or, through the ended spans, one
// of its descendants.
func (f *telFixture) descends(span, anc trace.SpanContext) bool {
	parent := map[trace.SpanID]trace.SpanContext{}
	for _, s := range f.spans.GetSpans() {
		parent[s.SpanContext.SpanID()] = s.Parent
	}
	for i := 0; i < 64 && span.IsValid(); i++ {
		if span.TraceID() == anc.TraceID() && span.SpanID() == anc.SpanID() {
			return true
		}
		span = parent[span.SpanID()]
	}
	return false
}

// TestTelemetryTraceContext: a client's traceparent in params._meta is the
// parent of the server span (over HTTP, even when the HTTP request carries
// another), else the HTTP request's own; baggage reaches the tool; and a
// malformed traceparent starts a new trace instead of failing the call.
func TestTelemetryTraceContext(t *testing.T) {
	const (
		metaTrace   = "4bf92f3577b34da6a3ce929d0e0e4736"
		metaSpan    = "00f067aa0ba902b7"
		headerTrace = "0af7651916cd43dd8448eb211c80319c"
		headerSpan  = "b7ad6b7169203331"
	)
	metaParent := "00-" + metaTrace + "-" + metaSpan + "-01"
	headerParent := "00-" + headerTrace + "-" + headerSpan + "-01"
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			f := newTelFixture(t)
			var header http.Header
			if !tr.pipe {
				header = http.Header{"Traceparent": {headerParent}, "Baggage": {"tenant=from-header"}}
			}
			cs := tr.connect(t, f, header)
			type traceCase struct {
				id          string
				meta        mcp.Meta
				trace, span string // the parent wanted; "": the header's, or none
				baggage     string
				unsampled   bool
			}
			cases := []traceCase{
				{id: "meta", meta: mcp.Meta{"traceparent": metaParent, "tracestate": "rojo=00f067aa0ba902b7", "baggage": "tenant=acme"}, trace: metaTrace, span: metaSpan, baggage: "acme"},
				// The client's choice not to sample holds: no span is
				// exported, and the tool runs in the client's trace.
				{id: "meta-unsampled", meta: mcp.Meta{"traceparent": "00-" + metaTrace + "-" + metaSpan + "-00"}, trace: metaTrace, span: metaSpan, unsampled: true},
				{id: "none", meta: nil},
				{id: "other-keys", meta: mcp.Meta{"toolgate/conversation": "c1", "progressToken": "p"}},
			}
			// Malformed values are ignored: the call runs, with a new trace
			// (or the HTTP request's).
			for i, bad := range []any{
				"", "garbage", "00-" + metaTrace + "-" + metaSpan, "ff-" + metaTrace + "-" + metaSpan + "-01",
				"00-00000000000000000000000000000000-" + metaSpan + "-01", "00-" + metaTrace + "-0000000000000000-01",
				"00-" + metaTrace[:30] + "-" + metaSpan + "-01", "00-" + strings.Repeat("g", 32) + "-" + metaSpan + "-01",
				"00-" + metaTrace + "-" + metaSpan + "-01-extra", " 00-" + metaTrace + "-" + metaSpan + "-01",
				"00_" + metaTrace + "_" + metaSpan + "_01", strings.Repeat("0", 4096), 42, true, map[string]any{"traceparent": metaParent}, []any{metaParent},
			} {
				cases = append(cases, traceCase{id: fmt.Sprintf("bad-%d", i), meta: mcp.Meta{"traceparent": bad}})
			}
			ctx := ctxT(t)
			for _, tc := range cases {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: tc.meta, Name: "probe", Arguments: map[string]any{"id": tc.id}})
				if err != nil || res.IsError {
					t.Errorf("%s: %v %+v", tc.id, err, res)
					continue
				}
			}
			var calls []tracetest.SpanStub
			for _, s := range f.spans.GetSpans() {
				if s.Name == "tools/call probe" {
					calls = append(calls, s)
				}
			}
			if len(calls) != len(cases)-1 {
				t.Fatalf("%d tools/call spans for %d sampled calls: %v", len(calls), len(cases)-1, f.names())
			}
			for _, tc := range cases {
				p := f.probe(t, tc.id)
				if tc.unsampled {
					if p.span.TraceID().String() != tc.trace || p.span.IsSampled() {
						t.Errorf("%s: the tool ran in %v, want trace %s, not sampled", tc.id, p.span, tc.trace)
					}
					continue
				}
				s := calls[0] // the calls were made one after the other
				calls = calls[1:]
				wantTrace, wantSpan, wantBaggage := tc.trace, tc.span, tc.baggage
				if wantTrace == "" && header != nil {
					wantTrace, wantSpan, wantBaggage = headerTrace, headerSpan, "from-header"
				}
				switch {
				case wantTrace == "" && s.Parent.IsValid():
					t.Errorf("%s: the server span has parent %v, want none", tc.id, s.Parent)
				case wantTrace != "" && (s.Parent.TraceID().String() != wantTrace || s.Parent.SpanID().String() != wantSpan || !s.Parent.IsRemote()):
					t.Errorf("%s: the server span's parent is %v, want trace %s span %s (remote)", tc.id, s.Parent, wantTrace, wantSpan)
				case wantTrace != "" && s.SpanContext.TraceID().String() != wantTrace:
					t.Errorf("%s: the server span is in trace %s, want %s", tc.id, s.SpanContext.TraceID(), wantTrace)
				}
				if !f.descends(p.span, s.SpanContext) {
					t.Errorf("%s: the tool ran in %v, not under the server span %v", tc.id, p.span, s.SpanContext)
				}
				if p.baggage != wantBaggage {
					t.Errorf("%s: the tool saw baggage tenant=%q, want %q", tc.id, p.baggage, wantBaggage)
				}
			}
		})
	}
}

// TestTelemetryServerMetric checks mcp.server.operation.duration: a
// histogram in seconds with the conventions' boundaries, one series per
// method, tool and outcome, and no per-session attribute.
func TestTelemetryServerMetric(t *testing.T) {
	f := newTelFixture(t)
	cs := transports[1].connect(t, f, nil)
	ctx := ctxT(t)
	for range 3 {
		cs.CallTool(ctx, &mcp.CallToolParams{Name: "probe", Arguments: map[string]any{"id": "m"}})
	}
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "broken", Arguments: map[string]any{}})
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
	var rm metricdata.ResourceMetrics
	if err := f.reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	var h *metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		for i, m := range sm.Metrics {
			if m.Name == "mcp.server.operation.duration" {
				h = &sm.Metrics[i]
			}
		}
	}
	if h == nil {
		t.Fatalf("no mcp.server.operation.duration in %+v", rm)
	}
	if h.Unit != "s" {
		t.Errorf("unit %q, want s", h.Unit)
	}
	data, ok := h.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("mcp.server.operation.duration is a %T, want a float64 histogram", h.Data)
	}
	counts := map[string]uint64{}
	for _, dp := range data.DataPoints {
		if !slices.Equal(dp.Bounds, []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}) {
			t.Errorf("bounds %v, want the conventions'", dp.Bounds)
		}
		key := ""
		for _, k := range []attribute.Key{"mcp.method.name", "gen_ai.tool.name", "error.type"} {
			v, _ := dp.Attributes.Value(k)
			key += v.Emit() + "|"
		}
		for _, k := range []attribute.Key{"mcp.session.id", "mcp.resource.uri"} {
			if dp.Attributes.HasValue(k) {
				t.Errorf("series %s has %s: unbounded cardinality", key, k)
			}
		}
		if v, _ := dp.Attributes.Value("network.transport"); v.Emit() != "tcp" {
			t.Errorf("series %s: network.transport %q", key, v.Emit())
		}
		counts[key] += dp.Count
	}
	for key, n := range map[string]uint64{"tools/call|probe||": 3, "tools/call|broken|tool_error|": 1, "tools/call||-32602|": 1, "initialize|||": 1} {
		if counts[key] != n {
			t.Errorf("series %s: count %d, want %d (all: %v)", key, counts[key], n, counts)
		}
	}
}

// TestTelemetryKeepsArgumentsOut: no argument value, result or tool error
// message reaches a span (attributes, status, events), whatever the tool.
func TestTelemetryKeepsArgumentsOut(t *testing.T) {
	f := newTelFixture(t)
	cs := transports[1].connect(t, f, nil)
	ctx := ctxT(t)
	secrets := []string{"hunter2-pass", "sk-live-0123456789", "/etc/shadow"}
	for i, s := range secrets {
		cs.CallTool(ctx, &mcp.CallToolParams{Name: "probe", Arguments: map[string]any{"id": string(rune('a' + i)), "secret": s}})
		cs.CallTool(ctx, &mcp.CallToolParams{Name: "broken", Arguments: map[string]any{"x": s}})
		cs.CallTool(ctx, &mcp.CallToolParams{Name: "missing_" + string(rune('a'+i)), Arguments: map[string]any{"x": s}})
	}
	all, _ := json.Marshal(f.spans.GetSpans())
	for _, s := range append(secrets, "seen", "widget is gone") {
		if strings.Contains(string(all), s) {
			t.Errorf("the spans contain %q", s)
		}
	}
}

// BenchmarkTelemetryToolCall measures a tools/call over in-memory
// transports with telemetry off, with no-op providers (what Setup gives
// when OTEL_* asks for nothing) and with the SDK recording into memory.
func BenchmarkTelemetryToolCall(b *testing.B) {
	recording := func() (trace.TracerProvider, metric.MeterProvider) {
		return sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter())),
			sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	}
	for _, bc := range []struct {
		name      string
		providers func() (trace.TracerProvider, metric.MeterProvider)
	}{
		{"off", func() (trace.TracerProvider, metric.MeterProvider) { return nil, nil }},
		{"noop", func() (trace.TracerProvider, metric.MeterProvider) {
			return tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider()
		}},
		{"sdk", recording},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tp, mp := bc.providers()
			reg := registry.New()
			reg.Register(tool.New("echo", "Echoes.", func(_ context.Context, in echoIn) (echoOut, error) {
				return echoOut{Echo: in.Text}, nil
			}, tool.ReadOnly()))
			srv, err := mcpserver.New(mcpserver.Options{Engine: engine.New(engine.Options{Registry: reg, TracerProvider: tp, MeterProvider: mp}),
				TracerProvider: tp, MeterProvider: mp})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			ctx := context.Background()
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.MCP().Connect(ctx, st, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer ss.Close()
			cs, err := client("bench", nil).Connect(ctx, ct, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Meta: mcp.Meta{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
				Name: "echo", Arguments: map[string]any{"text": "hi"}}
			b.ReportAllocs()
			for b.Loop() {
				if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}
