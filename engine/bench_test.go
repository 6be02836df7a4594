package engine_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/benchcold"
	"github.com/toolgate/toolgate/internal/benchcpu"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

type noopIn struct {
	Query string `json:"query" jsonschema:"what to look up"`
	Limit int    `json:"limit,omitempty" default:"10"`
}

type noopPathIn struct {
	Path  string `json:"path" jsonschema:"a path"`
	Limit int    `json:"limit,omitempty" default:"10"`
}

func benchEngine(b *testing.B, withAudit bool) *engine.Engine {
	reg := registry.New()
	err := reg.Register(tool.New("noop", "Does nothing.", func(context.Context, noopIn) (string, error) {
		return "ok", nil
	}, tool.ReadOnly()), tool.New("noop_path", "Does nothing with a path.", func(context.Context, noopPathIn) (string, error) {
		return "ok", nil
	}, tool.ReadOnly()))
	if err != nil {
		b.Fatal(err)
	}
	o := engine.Options{Registry: reg}
	if withAudit {
		log, err := audit.Open(filepath.Join(b.TempDir(), "audit.jsonl"), audit.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { log.Close() })
		o.Auditor = log
	}
	return engine.New(o)
}

// BenchmarkExecute runs a no-op tool through the whole chain (lookup,
// arguments, validation, policy, run, budget, and audit to a real file when
// asked). Goal: ≤ 2 µs/op without audit, ≤ 10 µs/op with it, on one core
// (-cpu 1). The path variant adds the policy's protected-path rules, which
// every call carrying a path argument is checked against.
func BenchmarkExecute(b *testing.B) {
	for _, c := range []tool.Call{
		{ID: "c1", Name: "noop", Args: json.RawMessage(`{"query":"a/b.txt","limit":5}`)},
		{ID: "c2", Name: "noop_path", Args: json.RawMessage(`{"path":"a/b.txt","limit":5}`)},
	} {
		b.Run(c.Name, func(b *testing.B) { benchExecute(b, c) })
	}
}

func benchExecute(b *testing.B, c tool.Call) {
	for _, withAudit := range []bool{false, true} {
		name := "no-audit"
		if withAudit {
			name = "audit"
		}
		b.Run(name, func(b *testing.B) {
			e := benchEngine(b, withAudit)
			ctx := context.Background()
			b.ReportAllocs()
			defer benchcpu.Report(b)()
			for b.Loop() {
				if res := e.Execute(ctx, c); res.IsError() {
					b.Fatal(res.Text())
				}
			}
		})
		b.Run(name+"/cold", func(b *testing.B) { // one call at a time, as a gateway's (benchcold)
			e := benchEngine(b, withAudit)
			ctx := context.Background()
			benchcold.Run(b, func() {
				if res := e.Execute(ctx, c); res.IsError() {
					b.Fatal(res.Text())
				}
			})
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			e := benchEngine(b, withAudit)
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if res := e.Execute(ctx, c); res.IsError() {
						b.Fatal(res.Text())
					}
				}
			})
		})
	}
}

// BenchmarkTelemetry runs the no-op tool through the chain (no audit) with
// telemetry off (no providers), with the no-op providers (which the engine
// treats as none), and with the SDK recording every span to an in-memory
// exporter and every counter to a manual reader: the cost of each per call.
func BenchmarkTelemetry(b *testing.B) {
	call := tool.Call{ID: "c1", Name: "noop", Args: json.RawMessage(`{"query":"a/b.txt","limit":5}`)}
	for _, v := range []struct {
		name string
		set  func(*engine.Options) func() // returns what to do now and then (drop recorded spans)
	}{
		{"off", func(*engine.Options) func() { return func() {} }},
		{"noop", func(o *engine.Options) func() {
			o.TracerProvider, o.MeterProvider = tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider()
			return func() {}
		}},
		{"sdk", func(o *engine.Options) func() {
			exp := tracetest.NewInMemoryExporter()
			o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			return exp.Reset
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			reg := registry.New()
			reg.Register(tool.New("noop", "Does nothing.", func(context.Context, noopIn) (string, error) { return "ok", nil }, tool.ReadOnly()))
			o := engine.Options{Registry: reg}
			drop := v.set(&o)
			e := engine.New(o)
			ctx := context.Background()
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if res := e.Execute(ctx, call); res.IsError() {
					b.Fatal(res.Text())
				}
				if n++; n%4096 == 0 {
					drop()
				}
			}
		})
	}
}
