package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	promexporter "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// TestPrometheusTextMatchesExporter feeds the same instruments to the
// hand-written /metrics (prometheus.go) and to the OpenTelemetry
// Prometheus exporter, the one toolgate used before, and wants the same
// text byte for byte: every kind of instrument, units the names are built
// from, names, descriptions, attribute keys and values that need escaping
// or renaming, several scopes, a name shared between scopes.
func TestPrometheusTextMatchesExporter(t *testing.T) {
	res, err := resource.New(context.Background(), resource.WithAttributes(
		attribute.String("service.name", "toolgate-test"), attribute.String("service.version", "v1.2.3"),
		attribute.String("host.name", `a "quoted" \ host`), attribute.Int("process.pid", 42)))
	if err != nil {
		t.Fatal(err)
	}
	mine := sdkmetric.NewManualReader()
	reg := prometheus.NewRegistry()
	theirs, err := promexporter.New(promexporter.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(mine), sdkmetric.WithReader(theirs), sdkmetric.WithResource(res))
	defer mp.Shutdown(context.Background())
	ctx := context.Background()

	attrSets := [][]attribute.KeyValue{
		nil,
		{attribute.String("gen_ai.tool.name", "read_file"), attribute.String("toolgate.decision", "allow")},
		{attribute.String("gen_ai.tool.name", "write_file"), attribute.String("toolgate.decision", "deny"), attribute.String("toolgate.error.type", "permission_denied")},
		{attribute.String("quote", `say "hi"`), attribute.String("back", `C:\tmp\`), attribute.String("nl", "two\nlines")},
		{attribute.String("a.b", "dot"), attribute.String("a-b", "dash"), attribute.String("a/b", "slash")}, // one label: values joined
		{attribute.String("9lives", "digit first"), attribute.String("__private", "underscores"), attribute.String("ÜberKey", "unicode"), attribute.String("emoji", "🙂")},
		{attribute.Bool("ok", true), attribute.Int64("n", -7), attribute.Float64("f", 0.25), attribute.StringSlice("list", []string{"x", "y"})},
		{attribute.String("empty", "")},
	}
	units := []string{"", "1", "s", "ms", "us", "By", "KiBy", "MBy", "By/s", "{call}", "{request}/s", "%", "m/s", "Cel", "d", "h", "min"}
	names := []string{"toolgate.calls", "mcp.server.operation.duration", "http-requests", "Weird Name!", "already_total", "bytes.in", "a..b__c", "_leading", "9starts"}
	for i, u := range units {
		m := mp.Meter(fmt.Sprintf("scope/%d", i%3), metric.WithInstrumentationVersion(fmt.Sprint("v0.", i%2)),
			metric.WithSchemaURL([]string{"", "https://opentelemetry.io/schemas/1.26.0"}[i%2]),
			metric.WithInstrumentationAttributes(attribute.String("lib.kind", "test"), attribute.String("name", "reserved")))
		for j, n := range names {
			name := fmt.Sprintf("%s.%d", n, i)
			desc := []string{"", "plain", "has \\ back\nand newline", `says "quoted"`}[(i+j)%4]
			attrs := metric.WithAttributes(attrSets[(i+j)%len(attrSets)]...)
			other := metric.WithAttributes(attrSets[(i+j+3)%len(attrSets)]...)
			switch j % 8 {
			case 0:
				c, _ := m.Int64Counter(name, metric.WithUnit(u), metric.WithDescription(desc))
				c.Add(ctx, int64(i*j+1), attrs)
				c.Add(ctx, 5, other)
			case 1:
				c, _ := m.Float64Counter(name, metric.WithUnit(u), metric.WithDescription(desc))
				c.Add(ctx, 0.1*float64(i+1), attrs)
				c.Add(ctx, 1e21, other)
			case 2:
				c, _ := m.Int64UpDownCounter(name, metric.WithUnit(u), metric.WithDescription(desc))
				c.Add(ctx, -int64(i+j), attrs)
			case 3:
				c, _ := m.Float64UpDownCounter(name, metric.WithUnit(u), metric.WithDescription(desc))
				c.Add(ctx, 1.5, attrs)
				c.Add(ctx, -1.5, other)
			case 4:
				g, _ := m.Int64Gauge(name, metric.WithUnit(u), metric.WithDescription(desc))
				g.Record(ctx, int64(j-i), attrs)
			case 5:
				g, _ := m.Float64Gauge(name, metric.WithUnit(u), metric.WithDescription(desc))
				g.Record(ctx, math.Pi*float64(i), attrs)
				g.Record(ctx, -0.000001, other)
			case 6:
				h, _ := m.Float64Histogram(name, metric.WithUnit(u), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(DurationBuckets()...))
				for _, v := range []float64{0.001, 0.03, 0.5, 7, 1000} {
					h.Record(ctx, v*float64(i+1), attrs)
				}
				h.Record(ctx, 0.2, other)
			case 7:
				h, _ := m.Int64Histogram(name, metric.WithUnit(u), metric.WithDescription(desc)) // the default bounds
				for _, v := range []int64{0, 1, 5, 10, 11, 250, 1 << 40} {
					h.Record(ctx, v+int64(i), attrs)
				}
			}
		}
	}
	// One name in two scopes: one family. (Which of two descriptions it
	// gets is the first scope's collected, in an order neither fixes.)
	for _, scope := range []string{"first", "second"} {
		c, _ := mp.Meter(scope).Int64Counter("shared.calls", metric.WithUnit("{call}"), metric.WithDescription("shared"))
		c.Add(ctx, 2, metric.WithAttributes(attribute.String("tool", "x")))
	}
	// An instrument never recorded: no family.
	mp.Meter("empty").Float64Histogram("never.recorded", metric.WithUnit("s"))

	want := scrape(t, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	got := scrape(t, prometheusHandler(mine))
	if got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := range max(len(gl), len(wl)) {
			g, w := "", ""
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("line %d differs (of %d and %d lines):\n got %q\nwant %q", i+1, len(gl), len(wl), g, w)
			}
		}
	}
	if n := strings.Count(want, "\n"); n < 500 {
		t.Fatalf("only %d lines compared", n)
	}
}

// TestPrometheusTextInvalidUTF8: a value that is not UTF-8 is written with
// U+FFFD in its place (the exporter refused the whole scrape).
func TestPrometheusTextInvalidUTF8(t *testing.T) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	c, _ := mp.Meter("s").Int64Counter("c", metric.WithDescription("bad \xff help"))
	c.Add(context.Background(), 1, metric.WithAttributes(attribute.String("k", "bad \xfe value")))
	out := scrape(t, prometheusHandler(r))
	if !strings.Contains(out, `k="bad `+"\uFFFD"+` value"`) || !strings.Contains(out, "# HELP c_total bad \uFFFD help\n") {
		t.Errorf("output:\n%s", out)
	}
}

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Result().Body)
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("status %d, content type %q: %s", rec.Code, rec.Header().Get("Content-Type"), body)
	}
	return string(body)
}

// TestPrometheusGzip: /metrics is gzipped when the scraper accepts it (as
// Prometheus does), to the same text; plain otherwise.
func TestPrometheusGzip(t *testing.T) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	c, _ := mp.Meter("s").Int64Counter("toolgate.calls", metric.WithUnit("{call}"))
	c.Add(context.Background(), 3, metric.WithAttributes(attribute.String("gen_ai.tool.name", "read_file")))
	plain := scrape(t, prometheusHandler(r))
	for header, gzipped := range map[string]bool{
		"": false, "gzip": true, "GZIP": true, "deflate, gzip": true, "gzip;q=1.0, identity": true, "br;q=1, gzip; q=0.5": true,
		"gzip;q=0": false, "gzip;q=0.000": false, "identity": false, "deflate": false, "x-gzip": false, "gzipx": false,
	} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Accept-Encoding", header)
		rec := httptest.NewRecorder()
		prometheusHandler(r).ServeHTTP(rec, req)
		body := rec.Body.Bytes()
		if got := rec.Header().Get("Content-Encoding") == "gzip"; got != gzipped {
			t.Errorf("Accept-Encoding %q: gzipped %v, want %v", header, got, gzipped)
			continue
		}
		if gzipped {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("Accept-Encoding %q: %v", header, err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatalf("Accept-Encoding %q: %v", header, err)
			}
		}
		if string(body) != plain || !strings.Contains(plain, "toolgate_calls_total") {
			t.Errorf("Accept-Encoding %q: body %q, want %q", header, body, plain)
		}
	}
}

// TestGzipAccepted: gzip is used when the scraper lists it with a quality
// above zero, wherever the quality stands among its parameters.
func TestGzipAccepted(t *testing.T) {
	for header, want := range map[string]bool{
		"":                            false,
		"gzip":                        true,
		"GZIP":                        true,
		"identity, gzip":              true,
		"deflate":                     false,
		"gzip;q=0":                    false,
		"gzip; q=0.000":               false,
		"gzip;q=0.5":                  true,
		"gzip;q=1":                    true,
		"gzip;level=1;q=0":            false,
		"gzip; level=1; q=0.1":        true,
		"gzip;level=1":                true,
		"x-gzip":                      false,
		"br;q=1.0, gzip;q=0, *;q=0.1": false,
	} {
		if got := gzipAccepted(header); got != want {
			t.Errorf("gzipAccepted(%q) = %v, want %v", header, got, want)
		}
	}
}
