// Package telemetry sets up OpenTelemetry for toolgate from the standard
// OTEL_* environment variables and names the spans, attributes and metrics
// toolgate emits, in the MCP and GenAI semantic conventions' names plus
// toolgate's own (decision, rule, approval, principal, sandbox).
//
// Setup reads, with the semantics of
// go.opentelemetry.io/contrib/exporters/autoexport:
//
//	OTEL_TRACES_EXPORTER   otlp | console | none (default none: off)
//	OTEL_METRICS_EXPORTER  otlp | prometheus | console | none (default none: off)
//	OTEL_EXPORTER_OTLP_ENDPOINT, _PROTOCOL, _HEADERS, _TIMEOUT, … and the
//	    per-signal OTEL_EXPORTER_OTLP_TRACES_* / _METRICS_* variants (http/protobuf)
//	OTEL_EXPORTER_PROMETHEUS_HOST, _PORT (default localhost:9464): /metrics
//	OTEL_METRIC_EXPORT_INTERVAL, OTEL_SERVICE_NAME (default toolgate),
//	OTEL_RESOURCE_ATTRIBUTES, OTEL_SDK_DISABLED
//
// and toolgate's own TOOLGATE_TELEMETRY_ARGUMENT_NAMES (true: the names,
// never the values, of a call's arguments on its span; Providers.ArgumentNames).
//
// It differs from autoexport in three ways, on purpose. Unset exporters
// mean off, not otlp: telemetry is opt-in, and off costs nothing (no-op
// providers, which the engine skips). The console exporters write to
// Options.Stderr, never to standard output, where MCP's stdio transport and
// `toolgate call`'s result go. And OTLP is http/protobuf only: autoexport
// links the gRPC exporters (and the logs SDK) into every binary whether or
// not they are used. Measured on cmd/toolgate (39.5 MB before telemetry):
// autoexport added 10.7 MB and 2.8 ms of package initialisation to every
// start (`toolgate call` included), these exporters add 7.9 MB and 1.6 ms.
// OTEL_EXPORTER_OTLP_PROTOCOL=grpc is refused with an error that says to
// use http/protobuf (port 4318).
//
// The Prometheus endpoint is written by hand (prometheus.go), in the names
// and text of go.opentelemetry.io/otel/exporters/prometheus, checked byte
// for byte against it: that exporter links the Prometheus client, whose
// package initialisation (a default registry with Go and process
// collectors, procfs, expvar, its protobuf model) every toolgate process
// paid at start, metrics on or off: 1.4 MB and about 90 page faults.
//
// Nothing is registered globally (no otel.SetTracerProvider): the caller
// hands Providers to what it instruments — engine.Options, mcpserver,
// mcpclient — so two engines in one program can report to different places.
package telemetry
