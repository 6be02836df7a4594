package telemetry

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// prometheusHandler serves what reader collects in the Prometheus text
// format (version 0.0.4), under the names and labels that
// go.opentelemetry.io/otel/exporters/prometheus gives them (the naming is
// otlptranslator's, the one that exporter uses): dots as underscores, the
// unit and _total appended, the instrumentation scope as otel_scope_*
// labels, the resource as target_info. Written by hand because that
// exporter links the Prometheus client, whose package initialisation (a
// default registry with Go and process collectors) every toolgate process
// paid at start, metrics on or off; TestPrometheusTextMatchesExporter
// checks the output byte for byte against that exporter's.
func prometheusHandler(reader *sdkmetric.ManualReader) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(r.Context(), &rm); err != nil {
			http.Error(w, "collecting metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		var out io.Writer = w
		if gzipAccepted(r.Header.Get("Accept-Encoding")) { // as the Prometheus client's handler does
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			defer gz.Close()
			out = gz
		}
		bw := bufio.NewWriter(out)
		writePrometheusText(bw, &rm)
		bw.Flush()
	})
}

// values and histograms hand each data point of a sum, a gauge or a
// histogram to each as a sample.
func values[N int64 | float64](dps []metricdata.DataPoint[N], each func(attribute.Set, promMetric)) {
	for _, dp := range dps {
		each(dp.Attributes, promMetric{value: float64(dp.Value)})
	}
}

func histograms[N int64 | float64](dps []metricdata.HistogramDataPoint[N], each func(attribute.Set, promMetric)) {
	for _, dp := range dps {
		each(dp.Attributes, histogram(dp.Bounds, dp.BucketCounts, dp.Count, float64(dp.Sum)))
	}
}

// gzipAccepted reports whether an Accept-Encoding header lists gzip (with
// a quality above zero).
func gzipAccepted(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			for _, p := range strings.Split(params, ";") {
				if q, ok := strings.CutPrefix(strings.TrimSpace(p), "q="); ok {
					return strings.Trim(strings.TrimSpace(q), "0.") != ""
				}
			}
			return true
		}
	}
	return false
}

// A promFamily is the metrics of one Prometheus name.
type promFamily struct {
	name, help, typ string
	metrics         []promMetric
}

// A promMetric is one series, or a histogram's series of one label set:
// its labels sorted by name.
type promMetric struct {
	labels    []promLabel
	value     float64 // a histogram's: the sum of its observations
	histogram bool
	bounds    []float64 // upper bounds, +Inf left out
	counts    []uint64  // cumulative counts, per bound
	count     uint64    // observations
}

type promLabel struct{ name, value string }

var (
	promMetricNamer = otlptranslator.NewMetricNamer("", otlptranslator.UnderscoreEscapingWithSuffixes)
	promLabelNamer  = otlptranslator.LabelNamer{}
)

// writePrometheusText writes rm's metrics: families sorted by name, the
// series of a family by their label values; a name seen again with
// another type is left out, with another description takes the first.
func writePrometheusText(w *bufio.Writer, rm *metricdata.ResourceMetrics) {
	families := map[string]*promFamily{}
	add := func(name, help, typ string, m promMetric) {
		f := families[name]
		if f == nil {
			f = &promFamily{name: name, help: help, typ: typ}
			families[name] = f
		}
		if f.typ == typ {
			f.metrics = append(f.metrics, m)
		}
	}
	add("target_info", "Target metadata", "gauge", promMetric{labels: promLabels(rm.Resource.Set(), nil), value: 1})
	for _, sm := range rm.ScopeMetrics {
		scope := []promLabel{
			{"otel_scope_name", sm.Scope.Name},
			{"otel_scope_version", sm.Scope.Version},
			{"otel_scope_schema_url", sm.Scope.SchemaURL},
		}
		for _, l := range promLabels(&sm.Scope.Attributes, nil) {
			switch l.name {
			case "name", "version", "schema_url":
			default:
				scope = append(scope, promLabel{"otel_scope_" + l.name, l.value})
			}
		}
		for _, m := range sm.Metrics {
			typ, kind := promType(m.Data)
			if typ == "" {
				continue
			}
			name, err := promMetricNamer.Build(otlptranslator.Metric{Name: m.Name, Unit: m.Unit, Type: kind})
			if err != nil {
				continue
			}
			each := func(attrs attribute.Set, pm promMetric) {
				pm.labels = promLabels(&attrs, scope)
				add(name, m.Description, typ, pm)
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				values(d.DataPoints, each)
			case metricdata.Sum[float64]:
				values(d.DataPoints, each)
			case metricdata.Gauge[int64]:
				values(d.DataPoints, each)
			case metricdata.Gauge[float64]:
				values(d.DataPoints, each)
			case metricdata.Histogram[int64]:
				histograms(d.DataPoints, each)
			case metricdata.Histogram[float64]:
				histograms(d.DataPoints, each)
			}
		}
	}
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		f := families[n]
		slices.SortStableFunc(f.metrics, compareLabelValues)
		w.WriteString("# HELP " + f.name + " " + promEscape(f.help, false) + "\n")
		w.WriteString("# TYPE " + f.name + " " + f.typ + "\n")
		for _, m := range f.metrics {
			if !m.histogram {
				writeSample(w, f.name, m.labels, "", m.value)
				continue
			}
			for i, b := range m.bounds {
				writeSample(w, f.name+"_bucket", m.labels, promFloat(b), float64(m.counts[i]))
			}
			writeSample(w, f.name+"_bucket", m.labels, "+Inf", float64(m.count))
			writeSample(w, f.name+"_sum", m.labels, "", m.value)
			writeSample(w, f.name+"_count", m.labels, "", float64(m.count))
		}
	}
}

// promType is the Prometheus type of a metric's data and the kind its name
// is built for; "" for data the text format has no place for (exponential
// histograms, summaries).
func promType(data metricdata.Aggregation) (string, otlptranslator.MetricType) {
	switch d := data.(type) {
	case metricdata.Sum[int64]:
		return sumType(d.IsMonotonic)
	case metricdata.Sum[float64]:
		return sumType(d.IsMonotonic)
	case metricdata.Gauge[int64], metricdata.Gauge[float64]:
		return "gauge", otlptranslator.MetricTypeGauge
	case metricdata.Histogram[int64], metricdata.Histogram[float64]:
		return "histogram", otlptranslator.MetricTypeHistogram
	}
	return "", otlptranslator.MetricTypeUnknown
}

func sumType(monotonic bool) (string, otlptranslator.MetricType) {
	if monotonic {
		return "counter", otlptranslator.MetricTypeMonotonicCounter
	}
	return "gauge", otlptranslator.MetricTypeNonMonotonicCounter
}

// histogram makes the cumulative buckets of one histogram data point; a
// bound given twice counts once (the last count), as a map of bounds would.
func histogram(bounds []float64, counts []uint64, count uint64, sum float64) promMetric {
	m := promMetric{histogram: true, count: count, value: sum}
	total := uint64(0)
	cum := map[float64]uint64{}
	for i, b := range bounds {
		total += counts[i]
		cum[b] = total
	}
	for b := range cum {
		if !math.IsInf(b, +1) {
			m.bounds = append(m.bounds, b)
		}
	}
	slices.Sort(m.bounds)
	for _, b := range m.bounds {
		m.counts = append(m.counts, cum[b])
	}
	return m
}

// promLabels are attrs as labels (names made valid; values of names that
// became the same joined by ";", sorted) after extra, sorted by name.
func promLabels(attrs *attribute.Set, extra []promLabel) []promLabel {
	out := slices.Clone(extra)
	values := map[string][]string{}
	var order []string
	for it := attrs.Iter(); it.Next(); {
		kv := it.Attribute()
		name, err := promLabelNamer.Build(string(kv.Key))
		if err != nil {
			continue
		}
		if _, ok := values[name]; !ok {
			order = append(order, name)
		}
		values[name] = append(values[name], kv.Value.String())
	}
	for _, n := range order {
		v := values[n]
		slices.Sort(v)
		out = append(out, promLabel{n, strings.Join(v, ";")})
	}
	slices.SortStableFunc(out, func(a, b promLabel) int { return cmp.Compare(a.name, b.name) })
	return out
}

// compareLabelValues orders the series of a family as the Prometheus
// client does: fewer labels first, then by the values in name order.
func compareLabelValues(a, b promMetric) int {
	if c := cmp.Compare(len(a.labels), len(b.labels)); c != 0 {
		return c
	}
	for i := range a.labels {
		if c := strings.Compare(a.labels[i].value, b.labels[i].value); c != 0 {
			return c
		}
	}
	return 0
}

// writeSample writes one line: name, labels (and le when given), value.
func writeSample(w *bufio.Writer, name string, labels []promLabel, le string, v float64) {
	w.WriteString(name)
	sep := byte('{')
	for _, l := range labels {
		w.WriteByte(sep)
		w.WriteString(l.name + `="` + promEscape(l.value, true) + `"`)
		sep = ','
	}
	if le != "" {
		w.WriteByte(sep)
		w.WriteString(`le="` + le + `"`)
		sep = ','
	}
	if sep == ',' {
		w.WriteByte('}')
	}
	w.WriteString(" " + promFloat(v) + "\n")
}

// promFloat formats a value as the text format writes it.
func promFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, +1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// promEscape escapes a description (\ and newline) or a label value (also
// "), and makes it valid UTF-8.
func promEscape(s string, quoted bool) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if !strings.ContainsAny(s, "\\\n\"") {
		return s
	}
	if quoted {
		return escapeQuoted.Replace(s)
	}
	return escapeHelp.Replace(s)
}

var (
	escapeHelp   = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	escapeQuoted = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)
