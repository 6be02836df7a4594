package exec

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/telemetry"
)

// TestSandboxTelemetry: each command, in a real sandbox or a dry run, is a
// span toolgate.sandbox under the caller's span and one observation of
// toolgate.sandbox.duration by backend, in the conventions' buckets; the
// command itself appears in neither. Without a recording span in the
// context there is no span; without a meter provider, no histogram.
func TestSandboxTelemetry(t *testing.T) {
	for _, tc := range []struct {
		backend sandbox.Backend
		name    string
	}{{&sandbox.Native{}, "native"}, {sandbox.DryRun{}, "dry-run"}} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			rd := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
			tools := toolMap(t, Options{Root: t.TempDir(), Backend: tc.backend, MeterProvider: mp})
			ex := tools["execute_command"]

			ctx, parent := tp.Tracer("test").Start(context.Background(), "toolgate.run")
			if r := call(t, ex, ctx, map[string]any{"command": "echo secret-token-1"}); r.Error != nil {
				t.Fatal(r.Error.Text())
			}
			parent.End()
			call(t, ex, context.Background(), map[string]any{"command": "echo untraced"}) // timed, no span

			var sandboxSpans []sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.Name() == telemetry.SpanSandbox {
					sandboxSpans = append(sandboxSpans, s)
				}
			}
			if len(sandboxSpans) != 1 {
				t.Fatalf("%d sandbox spans, want 1 (the traced call)", len(sandboxSpans))
			}
			s := sandboxSpans[0]
			if s.Parent().SpanID() != parent.SpanContext().SpanID() {
				t.Errorf("the sandbox span's parent is not the caller's span")
			}
			if got := s.Attributes(); !slices.Equal(got, []attribute.KeyValue{telemetry.SandboxBackend.String(tc.name)}) {
				t.Errorf("attributes %v, want only %s=%s", got, telemetry.SandboxBackend, tc.name)
			}

			var rm metricdata.ResourceMetrics
			if err := rd.Collect(context.Background(), &rm); err != nil {
				t.Fatal(err)
			}
			if len(rm.ScopeMetrics) != 1 || len(rm.ScopeMetrics[0].Metrics) != 1 {
				t.Fatalf("metrics %+v", rm.ScopeMetrics)
			}
			m := rm.ScopeMetrics[0].Metrics[0]
			h, ok := m.Data.(metricdata.Histogram[float64])
			if m.Name != telemetry.MetricSandboxDuration || m.Unit != "s" || !ok || len(h.DataPoints) != 1 {
				t.Fatalf("metric %s (%s) %T %+v", m.Name, m.Unit, m.Data, m.Data)
			}
			dp := h.DataPoints[0]
			if dp.Count != 2 || !slices.Equal(dp.Bounds, telemetry.DurationBuckets()) || dp.Sum <= 0 {
				t.Errorf("data point: count %d, sum %g, bounds %v", dp.Count, dp.Sum, dp.Bounds)
			}
			if v, _ := dp.Attributes.Value(telemetry.SandboxBackend); v.AsString() != tc.name || dp.Attributes.Len() != 1 {
				t.Errorf("histogram attributes %v", dp.Attributes.ToSlice())
			}
			for _, kv := range append(s.Attributes(), dp.Attributes.ToSlice()...) {
				if strings.Contains(kv.Value.Emit(), "secret") {
					t.Errorf("the command is in the telemetry: %v", kv)
				}
			}
		})
	}
}

// TestSandboxTelemetryOff: no provider, or a no-op one, makes no histogram.
func TestSandboxTelemetryOff(t *testing.T) {
	if newSandboxTimer(nil) != nil || newSandboxTimer(metricnoop.NewMeterProvider()) != nil {
		t.Error("a histogram without a meter provider")
	}
}
