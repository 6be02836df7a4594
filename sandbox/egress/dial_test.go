package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/sandbox/egress/egresstest"
)

// hookedWorld is a small Internet for the Dial hook: names resolve to
// public-looking or internal addresses, and egresstest.Routes connects
// every one of those addresses (internal ones too) to the loopback
// upstreams, so only the policy's address checks stand between a name and
// the servers. No AllowAddrs: loopback stays refused.
type hookedWorld struct {
	dns    *egresstest.DNSServer
	certs  egresstest.CA
	plain  *upstream
	secure *upstream
	rec    recorder
	mu     sync.Mutex
	dialed []string // the addresses given to the hook
	pol    *Policy
}

const publicAddr = "93.184.215.14"

var internalNames = map[string]string{
	"loop.test": "127.0.0.1", "private.test": "10.0.0.1", "meta.test": "169.254.169.254",
	"v6loop.test": "::1", "ula.test": "fd00::1", "cgnat.test": "100.64.0.1", "mapped.test": "::ffff:127.0.0.1",
}

func newHookedWorld(t *testing.T) *hookedWorld {
	t.Helper()
	w := &hookedWorld{dns: egresstest.NewDNSServer(t), certs: egresstest.NewCA(t, "allowed.test")}
	handler := func(rw http.ResponseWriter, r *http.Request) { fmt.Fprintf(rw, "hello from %s %s", r.Method, r.Host) }
	w.plain = newUpstream(t, nil, handler)
	w.secure = newUpstream(t, &w.certs, handler)
	routes := egresstest.Routes{}
	allow := []string{"nxdomain.test"}
	names := map[string]string{"allowed.test": publicAddr}
	maps.Copy(names, internalNames)
	for name, addr := range names {
		w.dns.Set(name, addr)
		allow = append(allow, name)
		routes[net.JoinHostPort(addr, "80")] = fmt.Sprintf("127.0.0.1:%d", w.plain.port)
		routes[net.JoinHostPort(addr, "443")] = fmt.Sprintf("127.0.0.1:%d", w.secure.port)
	}
	w.pol = mustPolicy(t, PolicyConfig{Allow: allow, Resolver: w.dns.Resolver(), OnDecision: w.rec.add,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			w.mu.Lock()
			w.dialed = append(w.dialed, addr)
			w.mu.Unlock()
			return routes.Dial(ctx, network, addr)
		}})
	return w
}

// TestPolicyDialHook: the hook is given only addresses that passed every
// check, never a name, and a name resolving to an internal address is
// refused although the hook would route it.
func TestPolicyDialHook(t *testing.T) {
	w := newHookedWorld(t)
	p, err := NewProxy(ProxyConfig{Policy: w.pol})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	get := func(u string) (*http.Response, string) {
		t.Helper()
		c, err := p.Dial(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", u)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	if resp, body := get("http://allowed.test/x"); resp.StatusCode != 200 || body != "hello from GET allowed.test" {
		t.Fatalf("allowed.test: %s %q", resp.Status, body)
	}
	for name := range internalNames {
		resp, body := get("http://" + name + "/")
		d := w.rec.last(t)
		if resp.StatusCode != http.StatusForbidden || d.Allowed || d.Reason != PrivateAddress && d.Reason != MetadataAddress || d.Rule != name {
			t.Errorf("%s: %s %q, decision %+v", name, resp.Status, body, d)
		}
	}
	if resp, _ := get("http://nxdomain.test/"); resp.StatusCode != http.StatusBadGateway || w.rec.last(t).Reason != DNSFailed {
		t.Errorf("nxdomain.test: %s, decision %+v", resp.Status, w.rec.last(t))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if want := []string{publicAddr + ":80"}; !slices.Equal(w.dialed, want) {
		t.Errorf("the hook was given %v, want %v", w.dialed, want)
	}
	if w.plain.reqs.Load() != 1 {
		t.Errorf("the upstream served %d requests, want 1", w.plain.reqs.Load())
	}
}

// TestProxyDial: connections opened in-process are served like accepted
// ones; the decisions about each go to the function its context carries
// (and to the policy's OnDecision), never to another's; either side may
// half-close; Close ends them.
func TestProxyDial(t *testing.T) {
	w := newHookedWorld(t)
	p, err := NewProxy(ProxyConfig{Policy: w.pol})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var mine [3]recorder
	var outer recorder
	base := WithOnDecision(context.Background(), outer.add)
	ctxs := [3]context.Context{}
	for i := range ctxs {
		ctxs[i] = WithOnDecision(base, mine[i].add)
	}
	targets := []struct {
		url    string
		status int
		reason Reason
	}{
		{"http://allowed.test/", 200, Allowed},
		{"http://denied.test/", http.StatusForbidden, NotListed},
		{"http://private.test/", http.StatusForbidden, PrivateAddress},
	}
	var wg sync.WaitGroup
	for i, tc := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := p.Dial(ctxs[i])
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", tc.url)
			c.(interface{ CloseWrite() error }).CloseWrite() // the answer still comes
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != tc.status {
				t.Errorf("%s: %v %v", tc.url, resp, err)
			}
		}()
	}
	wg.Wait()
	for i, tc := range targets {
		ds := mine[i].all()
		if len(ds) != 1 || ds[0].Reason != tc.reason {
			t.Errorf("%s: the connection's own decisions are %+v, want one %s", tc.url, ds, tc.reason)
		}
	}
	if n := len(outer.all()); n != 3 {
		t.Errorf("the outer context's function got %d decisions, want 3", n)
	}
	if n := len(w.rec.all()); n != 3 {
		t.Errorf("OnDecision got %d decisions, want 3", n)
	}

	// Policy.DialContext reports to the context's function as well.
	var direct recorder
	if _, err := w.pol.DialContext(WithOnDecision(context.Background(), direct.add), "tcp", "loop.test:443"); reasonOf(err) != PrivateAddress {
		t.Errorf("DialContext(loop.test) = %v", err)
	}
	if ds := direct.all(); len(ds) != 1 || ds[0].Reason != PrivateAddress {
		t.Errorf("DialContext decisions %+v", ds)
	}

	// A tunnel opened with Dial ends with the proxy.
	c, err := p.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n")
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	tc := tls.Client(&bufferedConn{c, br}, &tls.Config{ServerName: "allowed.test", RootCAs: w.certs.Pool})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, err := tc.Read(make([]byte, 1)); err == nil {
		t.Error("the tunnel outlived Close")
	}
	if _, err := p.Dial(context.Background()); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Dial after Close = %v", err)
	}
}

// bufferedConn reads through a bufio.Reader that may hold bytes already.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

func TestPolicyAllowed(t *testing.T) {
	allow := []string{"packages.example", "*.github.com", "1.1.1.1:443", "[2606:4700::1111]"}
	p := mustPolicy(t, PolicyConfig{Allow: allow})
	if got := p.Allowed(); !slices.Equal(got, allow) {
		t.Errorf("Allowed() = %v", got)
	}
	got := p.Allowed()
	got[0] = "evil.example"
	if strings.Contains(strings.Join(p.Allowed(), ","), "evil") {
		t.Error("Allowed() shares its slice with the policy")
	}
}
