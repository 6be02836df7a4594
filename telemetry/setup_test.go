package telemetry_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/toolgate/toolgate/telemetry"
)

// otelVars are every variable Setup reads; each test starts with none set.
var otelVars = []string{
	"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
	"OTEL_EXPORTER_PROMETHEUS_HOST", "OTEL_EXPORTER_PROMETHEUS_PORT",
	"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_METRIC_EXPORT_INTERVAL",
	"TOOLGATE_TELEMETRY_ARGUMENT_NAMES",
}

func env(t *testing.T, kv ...string) {
	t.Helper()
	for _, k := range otelVars {
		t.Setenv(k, "")
	}
	for i := 0; i+1 < len(kv); i += 2 {
		t.Setenv(kv[i], kv[i+1])
	}
}

// TestSetupOff: unset, "none", or OTEL_SDK_DISABLED: no-op providers,
// which the engine and the MCP layer skip, and nothing to shut down.
func TestSetupOff(t *testing.T) {
	for _, kv := range [][]string{
		nil,
		{"OTEL_TRACES_EXPORTER", "none", "OTEL_METRICS_EXPORTER", "none"},
		{"OTEL_TRACES_EXPORTER", " none "},
		{"OTEL_SDK_DISABLED", "true", "OTEL_TRACES_EXPORTER", "console", "OTEL_METRICS_EXPORTER", "prometheus"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1"}, // an endpoint alone turns nothing on
		{"OTEL_SERVICE_NAME", "x", "OTEL_RESOURCE_ATTRIBUTES", "not a pair"},
	} {
		env(t, kv...)
		var out bytes.Buffer
		p, err := telemetry.Setup(context.Background(), telemetry.Options{Stderr: &out})
		if err != nil {
			t.Fatalf("%v: %v", kv, err)
		}
		if _, ok := p.Tracer.(tracenoop.TracerProvider); !ok {
			t.Errorf("%v: tracer provider %T, want the no-op one", kv, p.Tracer)
		}
		if _, ok := p.Meter.(metricnoop.MeterProvider); !ok {
			t.Errorf("%v: meter provider %T, want the no-op one", kv, p.Meter)
		}
		if err := p.Shutdown(context.Background()); err != nil || p.PrometheusAddr != "" || out.Len() > 0 {
			t.Errorf("%v: shutdown %v, prometheus %q, output %q", kv, err, p.PrometheusAddr, out.String())
		}
	}
}

// TestSetupRefuses: what toolgate cannot honour is an error naming the
// variable, never a silent fallback to no telemetry or to another exporter.
func TestSetupRefuses(t *testing.T) {
	for _, tc := range []struct {
		kv   []string
		want string
	}{
		{[]string{"OTEL_TRACES_EXPORTER", "jaeger"}, "OTEL_TRACES_EXPORTER"},
		{[]string{"OTEL_TRACES_EXPORTER", "zipkin"}, "OTEL_TRACES_EXPORTER"},
		{[]string{"OTEL_TRACES_EXPORTER", "OTLP"}, "OTEL_TRACES_EXPORTER"},
		{[]string{"OTEL_TRACES_EXPORTER", "otlp,console"}, "OTEL_TRACES_EXPORTER"},
		{[]string{"OTEL_TRACES_EXPORTER", "prometheus"}, "OTEL_TRACES_EXPORTER"},
		{[]string{"OTEL_METRICS_EXPORTER", "statsd"}, "OTEL_METRICS_EXPORTER"},
		{[]string{"OTEL_METRICS_EXPORTER", "logging"}, "OTEL_METRICS_EXPORTER"},
		{[]string{"OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}, "http/protobuf"},
		{[]string{"OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"}, "http/protobuf"},
		{[]string{"OTEL_METRICS_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc"}, "http/protobuf"},
		{[]string{"OTEL_METRICS_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"}, "http/protobuf"},
		{[]string{"OTEL_TRACES_EXPORTER", "console", "OTEL_RESOURCE_ATTRIBUTES", "team"}, "OTEL_RESOURCE_ATTRIBUTES"},
		{[]string{"OTEL_METRICS_EXPORTER", "prometheus", "OTEL_EXPORTER_PROMETHEUS_HOST", "127.0.0.1", "OTEL_EXPORTER_PROMETHEUS_PORT", "not-a-port"}, "OTEL_EXPORTER_PROMETHEUS"},
		// The traces start, the metrics fail: the traces are shut down too.
		{[]string{"OTEL_TRACES_EXPORTER", "console", "OTEL_METRICS_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc"}, "http/protobuf"},
	} {
		env(t, tc.kv...)
		p, err := telemetry.Setup(context.Background(), telemetry.Options{Stderr: io.Discard})
		if err == nil {
			p.Shutdown(context.Background())
			t.Errorf("%v: no error", tc.kv)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want it to name %s", tc.kv, err, tc.want)
		}
	}
}

// TestSetupConsole: the console exporters write to Options.Stderr, with the
// resource from OTEL_SERVICE_NAME (default toolgate), the version and
// OTEL_RESOURCE_ATTRIBUTES; a per-signal protocol wins over the general one.
func TestSetupConsole(t *testing.T) {
	for _, tc := range []struct {
		kv   []string
		want []string
	}{
		{[]string{"OTEL_TRACES_EXPORTER", "console"}, []string{`"Name":"execute_tool read_note"`, `"Value":"toolgate"`, `"Value":"1.2.3"`}},
		{[]string{"OTEL_TRACES_EXPORTER", "console", "OTEL_SERVICE_NAME", "gateway-eu", "OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod,team=tools"},
			[]string{`"Value":"gateway-eu"`, `"Key":"deployment.environment"`, `"Value":"prod"`, `"Key":"team"`}},
		{[]string{"OTEL_METRICS_EXPORTER", "console"}, []string{`"Name":"toolgate.calls"`, `"Value":"toolgate"`}},
		{[]string{"OTEL_TRACES_EXPORTER", "console", "OTEL_METRICS_EXPORTER", "console", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
			[]string{`"Name":"execute_tool read_note"`, `"Name":"toolgate.calls"`}},
	} {
		env(t, tc.kv...)
		var out bytes.Buffer
		p, err := telemetry.Setup(context.Background(), telemetry.Options{Stderr: &out, ServiceVersion: "1.2.3"})
		if err != nil {
			t.Fatalf("%v: %v", tc.kv, err)
		}
		_, span := p.Tracer.Tracer("test").Start(context.Background(), "execute_tool read_note")
		span.End()
		c, _ := p.Meter.Meter("test").Int64Counter(telemetry.MetricCalls)
		c.Add(context.Background(), 1)
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: the console output lacks %s:\n%s", tc.kv, w, out.String())
			}
		}
	}
}

// TestSetupPrometheus: /metrics on OTEL_EXPORTER_PROMETHEUS_HOST:_PORT in
// the text format, under the Prometheus names of the metrics; only GET;
// a port in use is an error; Shutdown closes the endpoint.
func TestSetupPrometheus(t *testing.T) {
	env(t, "OTEL_METRICS_EXPORTER", "prometheus", "OTEL_EXPORTER_PROMETHEUS_HOST", "127.0.0.1", "OTEL_EXPORTER_PROMETHEUS_PORT", "0")
	p, err := telemetry.Setup(context.Background(), telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Tracer.(tracenoop.TracerProvider); !ok {
		t.Errorf("traces are on: %T", p.Tracer)
	}
	m := p.Meter.Meter("test")
	calls, _ := m.Int64Counter(telemetry.MetricCalls, metric.WithUnit("{call}"))
	calls.Add(context.Background(), 3, metric.WithAttributes(telemetry.GenAIToolName.String("read_note"), telemetry.Decision.String("allow")))
	h, _ := m.Float64Histogram(telemetry.MetricServerOperationDuration, metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(telemetry.DurationBuckets()...))
	h.Record(context.Background(), 0.03, metric.WithAttributes(telemetry.MCPMethodName.String("tools/call")))

	resp, err := http.Get("http://" + p.PrometheusAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, ct)
	}
	for _, w := range []string{
		`toolgate_calls_total{gen_ai_tool_name="read_note",otel_scope_name="test",otel_scope_schema_url="",otel_scope_version="",toolgate_decision="allow"} 3`,
		`mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",otel_scope_name="test",otel_scope_schema_url="",otel_scope_version="",le="0.05"} 1`,
		`mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",otel_scope_name="test",otel_scope_schema_url="",otel_scope_version="",le="0.02"} 0`,
		`target_info{service_name="toolgate"`,
	} {
		if !strings.Contains(string(body), w) {
			t.Errorf("/metrics lacks %s:\n%s", w, body)
		}
	}
	if resp, err := http.Post("http://"+p.PrometheusAddr+"/metrics", "text/plain", nil); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %v %v", resp.Status, err)
	}

	// The same port again: refused, naming the variables.
	_, port, _ := net.SplitHostPort(p.PrometheusAddr)
	t.Setenv("OTEL_EXPORTER_PROMETHEUS_PORT", port)
	if q, err := telemetry.Setup(context.Background(), telemetry.Options{}); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_PROMETHEUS_HOST") {
		if q != nil {
			q.Shutdown(context.Background())
		}
		t.Errorf("a second endpoint on %s: %v", port, err)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + p.PrometheusAddr + "/metrics"); err == nil {
		t.Error("/metrics still answers after Shutdown")
	}
}

// TestSetupOTLP: otlp sends OTLP/HTTP protobuf to OTEL_EXPORTER_OTLP_ENDPOINT
// (/v1/traces, /v1/metrics), with the headers of OTEL_EXPORTER_OTLP_HEADERS;
// a per-signal endpoint wins for its signal.
func TestSetupOTLP(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{} // path → content type and header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		if len(body) > 0 {
			got[r.URL.Path] = r.Header.Get("Content-Type") + " " + r.Header.Get("X-Team")
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	env(t, "OTEL_TRACES_EXPORTER", "otlp", "OTEL_METRICS_EXPORTER", "otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", srv.URL+"/custom/metrics")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=tools")
	p, err := telemetry.Setup(context.Background(), telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, span := p.Tracer.Tracer("test").Start(context.Background(), "execute_tool read_note")
	span.End()
	c, _ := p.Meter.Meter("test").Int64Counter(telemetry.MetricCalls)
	c.Add(context.Background(), 1)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]string{"/v1/traces": "application/x-protobuf tools", "/custom/metrics": "application/x-protobuf tools"}
	for path, w := range want {
		if got[path] != w {
			t.Errorf("%s: got %q, want %q (all: %v)", path, got[path], w, got)
		}
	}
}

// TestArgumentNamesOptIn: argument names go on spans only when asked for,
// and a value that is not a boolean is refused, not read as off.
func TestArgumentNamesOptIn(t *testing.T) {
	for _, tc := range []struct {
		val      string
		want, ok bool
	}{{"", false, true}, {"true", true, true}, {"1", true, true}, {"false", false, true}, {"yes please", false, false}} {
		env(t, "TOOLGATE_TELEMETRY_ARGUMENT_NAMES", tc.val)
		p, err := telemetry.Setup(context.Background(), telemetry.Options{})
		if (err == nil) != tc.ok || (err == nil && p.ArgumentNames != tc.want) {
			t.Errorf("TOOLGATE_TELEMETRY_ARGUMENT_NAMES=%q: %v, %v", tc.val, p, err)
		}
		if err != nil && !strings.Contains(err.Error(), "TOOLGATE_TELEMETRY_ARGUMENT_NAMES") {
			t.Errorf("the refusal does not name the variable: %v", err)
		}
	}
}
