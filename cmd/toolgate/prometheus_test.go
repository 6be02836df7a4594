package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// freePort returns a loopback port no one listens on (for a program that
// must be told its port: Prometheus, toolgate's /metrics).
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// prometheus is a real Prometheus server (Debian's), storing in a temporary
// folder and scraping targets every second.
type prometheus struct{ api string }

func startPrometheus(t *testing.T, targets ...string) *prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus is not installed: run scripts/test-deps.sh (it installs Debian's prometheus)")
	}
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = strconv.Quote(tg)
	}
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: toolgate\n    static_configs:\n      - targets: [%s]\n",
		strings.Join(quoted, ", "))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + freePort(t)
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		logf.Close()
		if t.Failed() {
			log, _ := os.ReadFile(logf.Name())
			t.Logf("prometheus's log:\n%s", log)
		}
	})
	p := &prometheus{api: "http://" + addr}
	eventually(t, "prometheus to be ready", func() (bool, string) {
		resp, err := http.Get(p.api + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
	return p
}

// query evaluates an instant PromQL query and returns its single value
// (NaN when the result is empty).
func (p *prometheus) query(t *testing.T, q string) float64 {
	t.Helper()
	resp, err := http.Get(p.api + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Error  string
		Data   struct {
			ResultType string
			Result     []struct{ Value [2]any }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Status != "success" {
		t.Fatalf("query %s: %s", q, body.Error)
	}
	switch len(body.Data.Result) {
	case 0:
		return math.NaN()
	case 1:
		v, err := strconv.ParseFloat(body.Data.Result[0].Value[1].(string), 64)
		if err != nil {
			t.Fatalf("query %s: %v", q, err)
		}
		return v
	}
	t.Fatalf("query %s: %d series, want one (aggregate it)", q, len(body.Data.Result))
	return 0
}

// eventually polls cond until it holds, for at most two minutes (a scrape
// happens every second; the machine may be busy), then fails with its last
// word.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited for %s: %s", what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestPrometheusScrapesServe: `toolgate serve --http` with
// OTEL_METRICS_EXPORTER=prometheus serves /metrics on
// OTEL_EXPORTER_PROMETHEUS_PORT; a real Prometheus scraping it every second
// counts, after a burst of calls over MCP, exactly the calls made (by tool
// and decision), the server's and the sandbox's duration histograms, and
// answers a histogram_quantile over their buckets.
func TestPrometheusScrapesServe(t *testing.T) {
	root, _ := serveWorkspace(t)
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte("allow: [execute_command]\ndeny: [write_file]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	metricsAddr := "127.0.0.1:" + freePort(t)
	host, port, _ := net.SplitHostPort(metricsAddr)
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	t.Setenv("OTEL_METRICS_EXPORTER", "prometheus")
	t.Setenv("OTEL_EXPORTER_PROMETHEUS_HOST", host)
	t.Setenv("OTEL_EXPORTER_PROMETHEUS_PORT", port)
	t.Setenv("OTEL_SERVICE_NAME", "toolgate-under-test")
	endpoint := startHTTP(t, "serve", "--root", root, "--audit", "off", "--policy", pol, "--http", "127.0.0.1:0")
	prom := startPrometheus(t, metricsAddr)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "prometheus-test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	const reads, commands, denied = 25, 3, 2
	for i := range reads { // distinct arguments: the loop guard stays quiet
		if res := call("read_file", map[string]any{"path": "a.txt", "limit": i + 1}); res.IsError {
			t.Fatalf("read_file: %+v", res.Content)
		}
	}
	for i := range commands {
		if res := call("execute_command", map[string]any{"command": fmt.Sprintf("true %d", i)}); res.IsError {
			t.Fatalf("execute_command: %+v", res.Content)
		}
	}
	for i := range denied {
		if res := call("write_file", map[string]any{"path": fmt.Sprintf("b%d.txt", i), "content": "x"}); !res.IsError {
			t.Fatal("write_file ran; the policy denies it")
		}
	}

	// Wait until a scrape after the burst has landed, then ask for exact counts.
	eventually(t, "the burst to be scraped", func() (bool, string) {
		v := prom.query(t, `sum(toolgate_calls_total)`)
		return v == reads+commands+denied, fmt.Sprintf("sum(toolgate_calls_total) = %g", v)
	})
	for q, want := range map[string]float64{
		`sum(toolgate_calls_total{gen_ai_tool_name="read_file", toolgate_decision="allow"})`:                                             reads,
		`sum(toolgate_calls_total{gen_ai_tool_name="execute_command", toolgate_decision="allow", toolgate_error_type=""})`:               commands,
		`sum(toolgate_calls_total{gen_ai_tool_name="write_file", toolgate_decision="deny", toolgate_error_type="permission_denied"})`:    denied,
		`sum(mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call"})`:                                                 reads + commands + denied,
		`sum(mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call", error_type="tool_error"})`:                        denied,
		`sum(toolgate_sandbox_duration_seconds_count)`:                                                                                   commands,
		`count(target_info{job="toolgate", service_name="toolgate-under-test"})`:                                                         1,
		`count(mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call", gen_ai_tool_name="read_file", le="+Inf"}) > 0`: 1,
	} {
		if got := prom.query(t, q); got != want {
			t.Errorf("%s = %g, want %g", q, got, want)
		}
	}
	// Quantiles over the conventions' buckets: a real number of seconds,
	// inside the buckets' range, not NaN (which an empty histogram gives).
	for _, q := range []string{
		`histogram_quantile(0.9, sum by (le) (mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call"}))`,
		`histogram_quantile(0.5, sum by (le) (toolgate_sandbox_duration_seconds_bucket))`,
	} {
		if v := prom.query(t, q); math.IsNaN(v) || v <= 0 || v > 300 {
			t.Errorf("%s = %g, want seconds in (0, 300]", q, v)
		}
	}
	// The buckets are the conventions' boundaries.
	if n := prom.query(t, `count(count by (le) (mcp_server_operation_duration_seconds_bucket))`); n != 15 {
		t.Errorf("%g bucket boundaries (with +Inf), want the conventions' 14 and +Inf", n)
	}
}
