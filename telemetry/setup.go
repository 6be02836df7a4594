package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Options configure Setup.
type Options struct {
	// Stderr is where the console exporters write: standard error, so that
	// nothing ever lands in the standard output MCP speaks over (or that
	// `toolgate call` prints its result on). nil: os.Stderr.
	Stderr io.Writer
	// ServiceVersion is the resource's service.version (the build's version).
	ServiceVersion string
}

// Providers are the tracer and meter providers Setup made from the
// environment. Both are always usable: a signal that is off has a no-op
// provider (trace/noop, metric/noop), which the engine treats as none.
type Providers struct {
	Tracer trace.TracerProvider
	Meter  metric.MeterProvider
	// PrometheusAddr is the address /metrics is served on
	// (OTEL_METRICS_EXPORTER=prometheus), else empty.
	PrometheusAddr string
	// ArgumentNames is TOOLGATE_TELEMETRY_ARGUMENT_NAMES: put the names
	// (never the values) of a call's arguments on its execute_tool span
	// (engine.Options.TelemetryArgumentNames). Off by default.
	ArgumentNames bool

	shutdown []func(context.Context) error
}

// Shutdown flushes what the exporters hold and stops them (and the
// Prometheus endpoint). Call it once, before the program exits.
func (p *Providers) Shutdown(ctx context.Context) error {
	var errs []error
	for i := len(p.shutdown) - 1; i >= 0; i-- {
		errs = append(errs, p.shutdown[i](ctx))
	}
	p.shutdown = nil
	return errors.Join(errs...)
}

// Setup builds the providers from the standard OTEL_* variables, with the
// semantics of go.opentelemetry.io/contrib/exporters/autoexport (see the
// package doc for what is taken and what is refused). Nothing is set
// globally: the caller hands the providers to what it instruments.
func Setup(ctx context.Context, o Options) (*Providers, error) {
	p := &Providers{
		Tracer: tracenoop.NewTracerProvider(),
		Meter:  metricnoop.NewMeterProvider(),
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if on, _ := strconv.ParseBool(os.Getenv("OTEL_SDK_DISABLED")); on {
		return p, nil
	}
	if v := strings.TrimSpace(os.Getenv("TOOLGATE_TELEMETRY_ARGUMENT_NAMES")); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("TOOLGATE_TELEMETRY_ARGUMENT_NAMES=%q: want true or false", v)
		}
		p.ArgumentNames = on
	}
	traces, err := exporterName("OTEL_TRACES_EXPORTER", "otlp", "console", "none")
	if err != nil {
		return nil, err
	}
	metrics, err := exporterName("OTEL_METRICS_EXPORTER", "otlp", "prometheus", "console", "none")
	if err != nil {
		return nil, err
	}
	if traces == "none" && metrics == "none" {
		return p, nil // off: no resource, no exporter, nothing to shut down
	}
	res, err := newResource(ctx, o.ServiceVersion)
	if err != nil {
		return nil, err
	}
	if err := p.setupTraces(ctx, traces, res, o.Stderr); err != nil {
		return nil, err
	}
	if err := p.setupMetrics(ctx, metrics, res, o.Stderr); err != nil {
		return nil, errors.Join(err, p.Shutdown(ctx))
	}
	return p, nil
}

// exporterName reads one OTEL_*_EXPORTER variable: one of allowed, "none"
// when unset (toolgate's telemetry is off by default, where autoexport's
// fallback is otlp). An unknown name is an error, not silence: an operator
// who asked for telemetry and gets none would not notice.
func exporterName(env string, allowed ...string) (string, error) {
	v := strings.TrimSpace(os.Getenv(env))
	if v == "" {
		return "none", nil
	}
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s=%q: toolgate knows %s", env, v, strings.Join(allowed, ", "))
}

// otlpProtocol is the OTLP protocol for one signal: the signal's variable,
// else the general one, else http/protobuf. Only http/protobuf is built in.
func otlpProtocol(signal string) error {
	proto := os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL")
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch proto {
	case "", "http/protobuf":
		return nil
	case "grpc":
		return fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not built into toolgate (it would double the gRPC code in every start); " +
			"use http/protobuf, which every OTLP collector also accepts (port 4318)")
	}
	return fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: toolgate knows http/protobuf", proto)
}

// newResource describes this process: service.name toolgate and the
// service.version, then what OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
// say (they win).
func newResource(ctx context.Context, version string) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{semconv.ServiceName("toolgate")}
	if version != "" {
		attrs = append(attrs, semconv.ServiceVersion(version))
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...), resource.WithFromEnv())
	if err != nil { // a malformed pair in OTEL_RESOURCE_ATTRIBUTES, say
		return nil, fmt.Errorf("the telemetry resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	return res, nil
}

func (p *Providers) setupTraces(ctx context.Context, name string, res *resource.Resource, stderr io.Writer) error {
	var exp sdktrace.SpanExporter
	switch name {
	case "none":
		return nil
	case "otlp":
		if err := otlpProtocol("TRACES"); err != nil {
			return err
		}
		e, err := otlptracehttp.New(ctx) // endpoint, headers, timeout, TLS: its own OTEL_EXPORTER_OTLP_* variables
		if err != nil {
			return fmt.Errorf("OTLP trace exporter: %w", err)
		}
		exp = e
	case "console":
		e, err := stdouttrace.New(stdouttrace.WithWriter(stderr))
		if err != nil {
			return fmt.Errorf("console trace exporter: %w", err)
		}
		exp = e
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	p.Tracer = tp
	p.shutdown = append(p.shutdown, tp.Shutdown)
	return nil
}

func (p *Providers) setupMetrics(ctx context.Context, name string, res *resource.Resource, stderr io.Writer) error {
	var reader sdkmetric.Reader
	switch name {
	case "none":
		return nil
	case "otlp":
		if err := otlpProtocol("METRICS"); err != nil {
			return err
		}
		e, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return fmt.Errorf("OTLP metric exporter: %w", err)
		}
		reader = sdkmetric.NewPeriodicReader(e) // OTEL_METRIC_EXPORT_INTERVAL, _TIMEOUT
	case "console":
		e, err := stdoutmetric.New(stdoutmetric.WithWriter(stderr))
		if err != nil {
			return fmt.Errorf("console metric exporter: %w", err)
		}
		reader = sdkmetric.NewPeriodicReader(e)
	case "prometheus":
		r, err := p.servePrometheus()
		if err != nil {
			return err
		}
		reader = r
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
	p.Meter = mp
	p.shutdown = append(p.shutdown, mp.Shutdown)
	return nil
}

// servePrometheus serves /metrics, in the Prometheus text format, on
// OTEL_EXPORTER_PROMETHEUS_HOST:OTEL_EXPORTER_PROMETHEUS_PORT (default
// localhost:9464), toolgate's metrics only (no Go runtime collectors mixed
// in; prometheus.go), and returns the reader the meter provider feeds.
func (p *Providers) servePrometheus() (sdkmetric.Reader, error) {
	reader := sdkmetric.NewManualReader()
	addr := net.JoinHostPort(envOr("OTEL_EXPORTER_PROMETHEUS_HOST", "localhost"), envOr("OTEL_EXPORTER_PROMETHEUS_PORT", "9464"))
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("the Prometheus endpoint (OTEL_EXPORTER_PROMETHEUS_HOST/_PORT): %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", prometheusHandler(reader))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go srv.Serve(lis) // returns http.ErrServerClosed at Shutdown
	p.PrometheusAddr = lis.Addr().String()
	p.shutdown = append(p.shutdown, srv.Shutdown)
	return reader, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
