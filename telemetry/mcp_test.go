package telemetry_test

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/baggage"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/toolgate/toolgate/telemetry"
)

const (
	metaParent   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	headerParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
)

// TestExtract: params._meta wins when its traceparent is valid, else the
// HTTP header, else nothing; baggage comes with the trace context chosen.
func TestExtract(t *testing.T) {
	header := http.Header{"Traceparent": {headerParent}, "Baggage": {"tenant=header"}}
	for _, tc := range []struct {
		name        string
		meta        map[string]any
		header      http.Header
		wantParent  string // "" : none
		wantBaggage string
	}{
		{"meta", map[string]any{"traceparent": metaParent, "baggage": "tenant=meta"}, nil, metaParent, "meta"},
		{"meta over header", map[string]any{"traceparent": metaParent}, header, metaParent, ""},
		{"header", nil, header, headerParent, "header"},
		{"meta without traceparent", map[string]any{"progressToken": "x", "baggage": "tenant=meta"}, header, headerParent, "header"},
		{"invalid meta falls back", map[string]any{"traceparent": "00-zz-00f067aa0ba902b7-01"}, header, headerParent, "header"},
		{"non-string traceparent", map[string]any{"traceparent": 7}, header, headerParent, "header"},
		{"invalid meta, no header", map[string]any{"traceparent": "nonsense"}, nil, "", ""},
		{"nothing", nil, nil, "", ""},
		{"header without baggage", nil, http.Header{"Traceparent": {headerParent}}, headerParent, ""},
		{"invalid header", nil, http.Header{"Traceparent": {"00-" + "0af7651916cd43dd8448eb211c80319c"}}, "", ""},
	} {
		ctx := telemetry.Extract(context.Background(), tc.meta, tc.header)
		sc := trace.SpanContextFromContext(ctx)
		got := ""
		if sc.IsValid() {
			got = "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
			if !sc.IsRemote() {
				t.Errorf("%s: the extracted span context is not remote", tc.name)
			}
		}
		if got != tc.wantParent {
			t.Errorf("%s: parent %q, want %q", tc.name, got, tc.wantParent)
		}
		if b := baggage.FromContext(ctx).Member("tenant").Value(); b != tc.wantBaggage {
			t.Errorf("%s: baggage tenant=%q, want %q", tc.name, b, tc.wantBaggage)
		}
	}
}

// TestInject: the outgoing _meta gets ctx's trace context and baggage, in a
// copy; a traceparent passed through from elsewhere never survives.
func TestInject(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	spanCtx, span := tp.Tracer("t").Start(context.Background(), "s")
	defer span.End()
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	m, _ := baggage.NewMember("tenant", "acme")
	b, _ := baggage.New(m)

	for _, tc := range []struct {
		name                      string
		ctx                       context.Context
		meta                      map[string]any
		traceparent, baggageValue string // "" : absent
	}{
		{"span into nil", spanCtx, nil, want, ""},
		{"span and baggage", baggage.ContextWithBaggage(spanCtx, b), map[string]any{"progressToken": "p"}, want, "tenant=acme"},
		{"stale traceparent replaced", spanCtx, map[string]any{"traceparent": metaParent, "tracestate": "a=b"}, want, ""},
		{"stale traceparent dropped", context.Background(), map[string]any{"traceparent": metaParent, "baggage": "x=y"}, "", ""},
		{"nothing to inject", context.Background(), map[string]any{"k": 1}, "", ""},
	} {
		before := map[string]any{}
		for k, v := range tc.meta {
			before[k] = v
		}
		out := telemetry.Inject(tc.ctx, tc.meta)
		if got, _ := out["traceparent"].(string); got != tc.traceparent {
			t.Errorf("%s: traceparent %q, want %q", tc.name, got, tc.traceparent)
		}
		if got, _ := out["baggage"].(string); got != tc.baggageValue {
			t.Errorf("%s: baggage %q, want %q", tc.name, got, tc.baggageValue)
		}
		if _, ok := out["tracestate"]; ok && tc.traceparent == "" {
			t.Errorf("%s: a tracestate without a traceparent", tc.name)
		}
		for k, v := range before {
			if k == "traceparent" || k == "tracestate" || k == "baggage" {
				continue
			}
			if out[k] != v {
				t.Errorf("%s: %s = %v, want it kept (%v)", tc.name, k, out[k], v)
			}
		}
		if len(tc.meta) != len(before) || (tc.meta != nil && tc.meta["traceparent"] != before["traceparent"]) {
			t.Errorf("%s: Inject wrote to the caller's map: %v", tc.name, tc.meta)
		}
	}
}

// TestMCPOffCostsNothing: without providers, or with the no-op ones Setup
// gives for signals that are off, there is no recorder, and a nil one is
// safe to use.
func TestMCPOffCostsNothing(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	for _, tc := range []struct {
		name string
		on   bool
		new  func() (*telemetry.MCP, error)
	}{
		{"nil server", false, func() (*telemetry.MCP, error) { return telemetry.NewMCPServer(nil, nil) }},
		{"nil client", false, func() (*telemetry.MCP, error) { return telemetry.NewMCPClient(nil, nil) }},
		{"no-op", false, func() (*telemetry.MCP, error) {
			return telemetry.NewMCPServer(tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider())
		}},
		{"traces on", true, func() (*telemetry.MCP, error) { return telemetry.NewMCPServer(tp, metricnoop.NewMeterProvider()) }},
		{"metrics on", true, func() (*telemetry.MCP, error) { return telemetry.NewMCPClient(nil, sdkMeterProvider(t)) }},
	} {
		m, err := tc.new()
		if err != nil {
			t.Fatal(err)
		}
		if (m != nil) != tc.on {
			t.Errorf("%s: recorder %v, want on=%v", tc.name, m, tc.on)
		}
		ctx, op := m.Start(context.Background(), telemetry.MCPRequest{Method: "tools/call", Tool: "x"})
		op.SetProtocolVersion("2025-11-25")
		op.End(telemetry.RPCError(-32602))
		if !tc.on && (op != nil || trace.SpanContextFromContext(ctx).IsValid()) {
			t.Errorf("%s: an operation was recorded", tc.name)
		}
	}
}

func sdkMeterProvider(t *testing.T) *sdkmetric.MeterProvider {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	return mp
}
