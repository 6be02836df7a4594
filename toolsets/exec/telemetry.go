package exec

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/sandbox"
)

// The names of package telemetry (a tool set does not import it).
const (
	scope              = "github.com/toolgate/toolgate/toolsets/exec"
	spanSandbox        = "toolgate.sandbox"
	attrBackend        = attribute.Key("toolgate.sandbox.backend")
	attrErrorType      = attribute.Key("error.type")
	metricSandboxTime  = "toolgate.sandbox.duration"
	sandboxUnavailable = "sandbox_unavailable"
)

// durationBuckets are the MCP conventions' boundaries for operation
// durations, in seconds (telemetry.DurationBuckets).
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// newSandboxTimer returns the histogram of sandboxed commands' durations,
// or nil when mp is nil or a no-op provider.
func newSandboxTimer(mp metric.MeterProvider) metric.Float64Histogram {
	if mp == nil {
		return nil
	}
	if _, noop := mp.(metricnoop.MeterProvider); noop {
		return nil
	}
	h, _ := mp.Meter(scope).Float64Histogram(metricSandboxTime, metric.WithUnit("s"),
		metric.WithDescription("sandboxed commands, from the sandbox's set-up to the command's end, by backend"),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	return h
}

// sandboxRun runs spec in the backend as a span "toolgate.sandbox", a child
// of the span in ctx (the engine's run of the tool) when that one records,
// and times it in toolgate.sandbox.duration. Neither carries the command.
func (s *set) sandboxRun(ctx context.Context, spec sandbox.Spec) (sandbox.Outcome, error) {
	var span trace.Span
	if parent := trace.SpanFromContext(ctx); parent.IsRecording() {
		ctx, span = parent.TracerProvider().Tracer(scope).Start(ctx, spanSandbox, trace.WithSpanKind(trace.SpanKindInternal))
	}
	if span == nil && s.sandboxTime == nil {
		return s.opts.Backend.Run(ctx, spec)
	}
	start := time.Now()
	o, err := s.opts.Backend.Run(ctx, spec)
	backend := attrBackend.String(o.Backend)
	if s.sandboxTime != nil {
		attrs := []attribute.KeyValue{backend}
		if err != nil {
			attrs = append(attrs, attrErrorType.String(sandboxUnavailable))
		}
		s.sandboxTime.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(attrs...))
	}
	if span != nil {
		span.SetAttributes(backend)
		if err != nil {
			span.SetAttributes(attrErrorType.String(sandboxUnavailable))
			span.SetStatus(codes.Error, sandboxUnavailable)
		}
		span.End()
	}
	return o, err
}
