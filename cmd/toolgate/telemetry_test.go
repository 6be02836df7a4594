package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/toolgate/toolgate/telemetry"
)

// otlpReceiver is an OTLP/HTTP receiver on loopback: it decodes the
// protobuf payloads toolgate's exporters send (/v1/traces, /v1/metrics)
// with the official OTLP types and keeps what they hold.
type otlpReceiver struct {
	url string

	mu      sync.Mutex
	spans   []otlpSpan
	metrics []otlpMetric
	errs    []string
}

type otlpSpan struct {
	service string
	*tracepb.Span
}

type otlpMetric struct {
	service string
	*metricspb.Metric
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	hs := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(hs.Close)
	r.url = hs.URL
	return r
}

func (r *otlpReceiver) fail(format string, args ...any) {
	r.mu.Lock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *otlpReceiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/x-protobuf" {
		r.fail("%s %s with Content-Type %q: want POST application/x-protobuf", req.Method, req.URL.Path, req.Header.Get("Content-Type"))
		http.Error(w, "want POST application/x-protobuf", http.StatusUnsupportedMediaType)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var answer proto.Message
	switch req.URL.Path {
	case "/v1/traces":
		var m coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(data, &m); err != nil {
			r.fail("/v1/traces: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range m.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					r.spans = append(r.spans, otlpSpan{serviceName(rs.Resource), s})
				}
			}
		}
		r.mu.Unlock()
		answer = &coltracepb.ExportTraceServiceResponse{}
	case "/v1/metrics":
		var m colmetricspb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(data, &m); err != nil {
			r.fail("/v1/metrics: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rm := range m.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, mt := range sm.Metrics {
					r.metrics = append(r.metrics, otlpMetric{serviceName(rm.Resource), mt})
				}
			}
		}
		r.mu.Unlock()
		answer = &colmetricspb.ExportMetricsServiceResponse{}
	default:
		r.fail("POST %s: not an OTLP path", req.URL.Path)
		http.NotFound(w, req)
		return
	}
	out, _ := proto.Marshal(answer)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func serviceName(res *resourcepb.Resource) string {
	if res == nil {
		return ""
	}
	return attrValue(res.Attributes, "service.name")
}

// attrValue is the value of an attribute, as text ("" when absent).
func attrValue(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.Key != key {
			continue
		}
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			return v.StringValue
		case *commonpb.AnyValue_IntValue:
			return fmt.Sprint(v.IntValue)
		case *commonpb.AnyValue_BoolValue:
			return fmt.Sprint(v.BoolValue)
		default:
			return fmt.Sprint(kv.Value)
		}
	}
	return ""
}

// waitSpans waits until the receiver holds a span of each of want
// ("service: name"), and returns all it holds.
func (r *otlpReceiver) waitSpans(t *testing.T, want ...string) []otlpSpan {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r.mu.Lock()
		spans := slices.Clone(r.spans)
		errs := slices.Clone(r.errs)
		r.mu.Unlock()
		if len(errs) > 0 {
			t.Fatalf("the receiver refused payloads: %v", errs)
		}
		missing := slices.DeleteFunc(slices.Clone(want), func(w string) bool {
			return slices.ContainsFunc(spans, func(s otlpSpan) bool { return s.service+": "+s.Name == w })
		})
		if len(missing) == 0 {
			return spans
		}
		if time.Now().After(deadline) {
			var got []string
			for _, s := range spans {
				got = append(got, s.service+": "+s.Name)
			}
			t.Fatalf("no span %q reached the receiver; it has %q", missing, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// otlpEnv points toolgate's exporters at r and flushes them often, so the
// test sees spans while the processes run (a shutdown flushes the rest);
// service, when not empty, is OTEL_SERVICE_NAME.
func otlpEnv(t *testing.T, r *otlpReceiver, service string) {
	for k, v := range map[string]string{
		"OTEL_TRACES_EXPORTER":        "otlp",
		"OTEL_METRICS_EXPORTER":       "otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT": r.url,
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
		"OTEL_BSP_SCHEDULE_DELAY":     "50",
		"OTEL_METRIC_EXPORT_INTERVAL": "100",
	} {
		t.Setenv(k, v)
	}
	if service != "" {
		t.Setenv("OTEL_SERVICE_NAME", service)
	}
}

// traceContext is a client's trace: its traceparent and ids as hex.
type traceContext struct{ traceID, spanID string }

func newTraceContext(seed byte) traceContext {
	tid, sid := bytes.Repeat([]byte{seed}, 16), bytes.Repeat([]byte{seed + 1}, 8)
	return traceContext{hex.EncodeToString(tid), hex.EncodeToString(sid)}
}

func (c traceContext) traceparent() string { return "00-" + c.traceID + "-" + c.spanID + "-01" }

// findSpan returns the one span of that service and name.
func findSpan(t *testing.T, spans []otlpSpan, service, name string) otlpSpan {
	t.Helper()
	var found []otlpSpan
	for _, s := range spans {
		if s.service == service && s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans %q of service %q, want 1", len(found), name, service)
	}
	return found[0]
}

// childOf checks that span is in trace tid and a child of parent (hex).
func childOf(t *testing.T, span otlpSpan, tid, parent string) {
	t.Helper()
	if got := hex.EncodeToString(span.TraceId); got != tid {
		t.Errorf("%s %q: trace %s, want %s", span.service, span.Name, got, tid)
	}
	if got := hex.EncodeToString(span.ParentSpanId); got != parent {
		t.Errorf("%s %q: parent span %s, want %s", span.service, span.Name, got, parent)
	}
}

func checkAttrs(t *testing.T, span otlpSpan, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := attrValue(span.Attributes, k); got != v {
			t.Errorf("%s %q: %s = %q, want %q", span.service, span.Name, k, got, v)
		}
	}
}

func connectHTTP(t *testing.T, ctx context.Context, url string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "otel-test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestOTLPServeSpans runs `toolgate serve --http` exporting over OTLP/HTTP
// and checks, in the protobuf the receiver decodes, the SERVER span of each
// kind of call (its parent the client's traceparent from params._meta),
// the engine's execute_tool span under it, and the duration metric.
func TestOTLPServeSpans(t *testing.T) {
	recv := newOTLPReceiver(t)
	otlpEnv(t, recv, "") // the default service name: toolgate
	root, _ := serveWorkspace(t)
	url := startHTTP(t, "serve", "--root", root, "--audit", "off", "--http", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs := connectHTTP(t, ctx, url)

	client := newTraceContext(0x4b)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"traceparent": client.traceparent()}, Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
	if err != nil || res.IsError {
		t.Fatalf("read_file: %v %+v", err, res)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_directory", Arguments: map[string]any{"path": "no-such-folder"}}); err != nil || !res.IsError {
		t.Fatalf("list_directory of a missing folder: %v %+v", err, res)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}); err == nil {
		t.Fatal("an unknown tool was called")
	}

	spans := recv.waitSpans(t, "toolgate: tools/call read_file", "toolgate: execute_tool read_file", "toolgate: tools/call list_directory", "toolgate: tools/call")
	call := findSpan(t, spans, "toolgate", "tools/call read_file")
	childOf(t, call, client.traceID, client.spanID)
	if call.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("tools/call read_file: kind %v, want SERVER", call.Kind)
	}
	checkAttrs(t, call, map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "read_file", "gen_ai.operation.name": "execute_tool",
		"network.transport": "tcp", "mcp.protocol.version": "2025-11-25", "mcp.session.id": cs.ID(), "error.type": "",
		"toolgate.principal": "otel-test", "toolgate.decision": "allow", "toolgate.approval": "none",
	})
	if attrValue(call.Attributes, "toolgate.rule") == "" {
		t.Errorf("tools/call read_file: no toolgate.rule")
	}
	run := findSpan(t, spans, "toolgate", "execute_tool read_file")
	childOf(t, run, client.traceID, hex.EncodeToString(call.SpanId))
	if run.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("execute_tool read_file: kind %v, want INTERNAL", run.Kind)
	}
	if v := attrValue(run.Attributes, "toolgate.argument.names"); v != "" {
		t.Errorf("argument names on a span without the opt-in: %s", v)
	}

	failed := findSpan(t, spans, "toolgate", "tools/call list_directory")
	checkAttrs(t, failed, map[string]string{"error.type": "tool_error", "toolgate.error.type": "not_found"})
	if failed.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("tools/call list_directory: status %v, want ERROR", failed.Status)
	}
	if len(failed.ParentSpanId) != 0 {
		t.Errorf("a call without trace context has parent %x", failed.ParentSpanId)
	}
	unknown := findSpan(t, spans, "toolgate", "tools/call")
	checkAttrs(t, unknown, map[string]string{"error.type": "-32602", "rpc.response.status_code": "-32602", "gen_ai.tool.name": ""})

	// The duration histogram, with the conventions' bucket boundaries.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if h := recv.histogram("toolgate", "mcp.server.operation.duration"); h != nil {
			if h.Unit != "s" {
				t.Errorf("unit %q, want s", h.Unit)
			}
			n := map[string]uint64{}
			for _, dp := range h.GetHistogram().DataPoints {
				if !slices.Equal(dp.ExplicitBounds, []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}) {
					t.Errorf("bounds %v", dp.ExplicitBounds)
				}
				n[attrValue(dp.Attributes, "gen_ai.tool.name")+"|"+attrValue(dp.Attributes, "error.type")] += dp.Count
			}
			if n["read_file|"] == 1 && n["list_directory|tool_error"] == 1 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mcp.server.operation.duration never showed the calls")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// histogram returns the latest export of a histogram, or nil.
func (r *otlpReceiver) histogram(service, name string) *metricspb.Metric {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.metrics) - 1; i >= 0; i-- {
		if m := r.metrics[i]; m.service == service && m.Name == name && m.GetHistogram() != nil {
			return m.Metric
		}
	}
	return nil
}

// TestTraceContinuityThroughProxy: a client's call through `toolgate proxy`
// to an upstream `toolgate serve` (stdio) is one trace, in the spans both
// processes export to the receiver: client → proxy SERVER → proxy
// execute_tool → (the run) → proxy CLIENT → upstream SERVER → upstream
// execute_tool → (the run), each the parent of the next.
func TestTraceContinuityThroughProxy(t *testing.T) {
	recv := newOTLPReceiver(t)
	otlpEnv(t, recv, "toolgate-proxy")
	root, _ := serveWorkspace(t)
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	// Unboxed: the upstream exports its spans to the test's collector on
	// loopback, which the box would refuse.
	yaml := fmt.Sprintf("servers:\n  - name: up\n    command: %q\n    args: [serve, --root, %q, --audit, \"off\"]\n    env:\n      OTEL_SERVICE_NAME: toolgate-upstream\n    isolation:\n      mode: off\n", bin, root)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	url := startProxyHTTP(t, "--config", cfg, "--audit", "off", "--unisolated")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs := connectHTTP(t, ctx, url)
	client := newTraceContext(0x7a)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"traceparent": client.traceparent(), "baggage": "tenant=acme"},
		Name: "up__read_file", Arguments: map[string]any{"path": "a.txt"}})
	if err != nil || res.IsError || !strings.Contains(text(res), "hello from toolgate") {
		t.Fatalf("up__read_file: %v %+v", err, res)
	}

	chain := []struct {
		service, name string
		kind          tracepb.Span_SpanKind
		attrs         map[string]string
	}{
		{"toolgate-proxy", "tools/call up__read_file", tracepb.Span_SPAN_KIND_SERVER, map[string]string{"gen_ai.tool.name": "up__read_file", "network.transport": "tcp"}},
		{"toolgate-proxy", "execute_tool up__read_file", tracepb.Span_SPAN_KIND_INTERNAL, map[string]string{"gen_ai.tool.name": "up__read_file", "gen_ai.tool.type": "extension"}},
		{"toolgate-proxy", "toolgate.run", tracepb.Span_SPAN_KIND_INTERNAL, nil},
		{"toolgate-proxy", "tools/call read_file", tracepb.Span_SPAN_KIND_CLIENT, map[string]string{"gen_ai.tool.name": "read_file", "network.transport": "pipe"}},
		{"toolgate-upstream", "tools/call read_file", tracepb.Span_SPAN_KIND_SERVER, map[string]string{"gen_ai.tool.name": "read_file", "network.transport": "pipe", "mcp.session.id": ""}},
		{"toolgate-upstream", "execute_tool read_file", tracepb.Span_SPAN_KIND_INTERNAL, map[string]string{"gen_ai.tool.name": "read_file", "gen_ai.tool.type": "function"}},
		{"toolgate-upstream", "toolgate.run", tracepb.Span_SPAN_KIND_INTERNAL, nil},
	}
	var want []string
	for _, c := range chain {
		want = append(want, c.service+": "+c.name)
	}
	spans := recv.waitSpans(t, want...)
	parent := client.spanID
	for _, want := range chain {
		s := findSpan(t, spans, want.service, want.name)
		if s.Kind != want.kind {
			t.Errorf("%s %q: kind %v, want %v", want.service, want.name, s.Kind, want.kind)
		}
		childOf(t, s, client.traceID, parent)
		checkAttrs(t, s, want.attrs)
		parent = hex.EncodeToString(s.SpanId)
	}
}

// TestTelemetryConsoleOnStderr: over stdio the console exporter writes to
// standard error, never into the protocol on standard output; the spans of
// the session are flushed when the client leaves.
func TestTelemetryConsoleOnStderr(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	t.Setenv("OTEL_METRICS_EXPORTER", "console")
	root, _ := serveWorkspace(t)
	cmd := exec.Command(bin, "serve", "--root", root, "--audit", "off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "console-test", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Every line on stdout is a JSON-RPC message the client reads: a span
	// there would break the session (the call would fail).
	for range 3 {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}}); err != nil || res.IsError {
			t.Fatalf("read_file over stdio with the console exporter: %v %+v", err, res)
		}
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	cmd.Wait()
	out := stderr.String()
	for _, want := range []string{`"Name":"tools/call read_file"`, `"Name":"execute_tool read_file"`, `"mcp.server.operation.duration"`} {
		if !strings.Contains(out, want) {
			t.Errorf("standard error lacks %s after the session ended:\n%.2000s", want, out)
		}
	}
}

// TestTelemetryDocs keeps docs/observability.md true: its Go program
// builds, its metric table's Prometheus names follow from the OpenTelemetry
// names as the exporter makes them, and every metric and label its PromQL
// queries use is in what `toolgate proxy` (in front of `toolgate serve`)
// serves at /metrics after a few calls.
func TestTelemetryDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}

	// The Go program, built as a package of this module (an overlay: no file
	// is written into the repository).
	prog := regexp.MustCompile("(?s)```go\n(.*?)```").FindSubmatch(doc)
	if prog == nil {
		t.Fatal("docs/observability.md shows no Go program")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	os.WriteFile(src, prog[1], 0o644)
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(repoRoot(t), "internal", "docexample", "main.go"): src}})
	os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o644)
	build := exec.Command("go", "build", "-overlay", filepath.Join(dir, "overlay.json"), "-o", os.DevNull, "./internal/docexample")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Errorf("the Go program of docs/observability.md does not build: %v\n%s", err, out)
	}

	// The table: `otel.name` | histogram, s / counter | … | `prom_name…`.
	rows := regexp.MustCompile("(?m)^\\| `([a-z_.]+)` \\| (histogram, s|counter) \\|.*\\| `([a-z_]+)`").FindAllSubmatch(doc, -1)
	if len(rows) < 7 {
		t.Fatalf("the metrics table has %d rows, want the 7 metrics", len(rows))
	}
	for _, r := range rows {
		want := strings.ReplaceAll(string(r[1]), ".", "_")
		if string(r[2]) == "counter" {
			want += "_total"
		} else {
			want += "_seconds_bucket"
		}
		if string(r[3]) != want {
			t.Errorf("metrics table: %s is %s in Prometheus, not %s", r[1], want, r[3])
		}
	}
	if buckets := fmt.Sprint(telemetry.DurationBuckets()); !strings.Contains(strings.Join(strings.Fields(string(doc)), " "), strings.ReplaceAll(strings.Trim(buckets, "[]"), " ", ", ")) {
		t.Errorf("the doc does not list the bucket boundaries %s", buckets)
	}

	// A scrape of a gateway that has served a call, a failed call and a
	// refused one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	promAddr := ln.Addr().String()
	ln.Close()
	host, port, _ := net.SplitHostPort(promAddr)
	t.Setenv("OTEL_METRICS_EXPORTER", "prometheus")
	t.Setenv("OTEL_EXPORTER_PROMETHEUS_HOST", host)
	t.Setenv("OTEL_EXPORTER_PROMETHEUS_PORT", port)
	root, _ := serveWorkspace(t)
	pol, cfg := filepath.Join(t.TempDir(), "policy.yaml"), filepath.Join(t.TempDir(), "gateway.yaml")
	os.WriteFile(pol, []byte("deny: [\"up__list_directory\"]\n"), 0o644)
	// The upstream inherits the gateway's variables: it must not take the
	// same Prometheus port (the doc says so).
	yaml := fmt.Sprintf("servers:\n  - name: up\n    command: %q\n    args: [serve, --root, %q, --audit, \"off\"]\n    env:\n      OTEL_METRICS_EXPORTER: none\n    isolation:\n      write: [%q]\n", bin, root, root)
	os.WriteFile(cfg, []byte(yaml), 0o644)
	url := startProxyHTTP(t, "--config", cfg, "--policy", pol, "--audit", "off")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs := connectHTTP(t, ctx, url)
	for _, c := range []struct {
		tool, path string
	}{{"up__read_file", "a.txt"}, {"up__read_file", "missing.txt"}, {"up__list_directory", "."}} {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{"path": c.path}}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Get("http://" + promAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	scrape, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	queries := regexp.MustCompile("(?s)```promql\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(queries) < 3 {
		t.Fatalf("%d PromQL queries in the doc, want 3 or more", len(queries))
	}
	metricRE := regexp.MustCompile(`\b[a-z_]+_(total|bucket|count|sum)\b`)
	labelRE := regexp.MustCompile(`(?:by \(([a-z_, ]+)\)|[{,]\s*([a-z_]+)\s*!?=)`)
	for _, q := range queries {
		for _, m := range metricRE.FindAll(q[1], -1) {
			if !bytes.Contains(scrape, append(append([]byte("\n"), m...), '{')) {
				t.Errorf("query %s: no metric %s in /metrics", q[1], m)
			}
		}
		for _, l := range labelRE.FindAllSubmatch(q[1], -1) {
			for _, name := range strings.Split(string(l[1])+","+string(l[2]), ",") {
				if name = strings.TrimSpace(name); name != "" && !bytes.Contains(scrape, []byte(name+`="`)) {
					t.Errorf("query %s: no label %s in /metrics", q[1], name)
				}
			}
		}
	}
}

// TestOTLPArgumentNamesOptIn: with TOOLGATE_TELEMETRY_ARGUMENT_NAMES the
// execute_tool span names a call's arguments, and still holds no value.
func TestOTLPArgumentNamesOptIn(t *testing.T) {
	recv := newOTLPReceiver(t)
	otlpEnv(t, recv, "")
	t.Setenv("TOOLGATE_TELEMETRY_ARGUMENT_NAMES", "true")
	root, _ := serveWorkspace(t)
	url := startHTTP(t, "serve", "--root", root, "--audit", "off", "--http", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs := connectHTTP(t, ctx, url)
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt", "limit": 7}}); err != nil || res.IsError {
		t.Fatalf("read_file: %v %+v", err, res)
	}
	spans := recv.waitSpans(t, "toolgate: execute_tool read_file")
	names := attrValue(findSpan(t, spans, "toolgate", "execute_tool read_file").Attributes, "toolgate.argument.names")
	if !strings.Contains(names, "path") || !strings.Contains(names, "limit") || strings.Contains(names, "a.txt") || strings.Contains(names, "7") {
		t.Errorf("toolgate.argument.names = %s, want the names path and limit and no value", names)
	}
}
