package egress

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/sandbox/egress/egresstest"
)

// upstream is a real HTTP (or HTTPS) server on 127.0.0.1 that counts the
// connections it accepts and the requests it serves.
type upstream struct {
	port  int
	conns atomic.Int64
	reqs  atomic.Int64
	last  atomic.Pointer[http.Request]
}

func newUpstream(t testing.TB, c *egresstest.CA, h http.HandlerFunc) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{port: ln.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.reqs.Add(1)
		u.last.Store(r)
		h(w, r)
	}), ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			u.conns.Add(1)
		}
	}}
	if c != nil {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{c.Cert}}
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return u
}

// recorder collects decisions.
type recorder struct {
	mu sync.Mutex
	ds []Decision
}

func (r *recorder) add(d Decision) {
	r.mu.Lock()
	r.ds = append(r.ds, d)
	r.mu.Unlock()
}

func (r *recorder) all() []Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Decision(nil), r.ds...)
}

// last returns the last decision, failing the test when there is none.
func (r *recorder) last(t testing.TB) Decision {
	t.Helper()
	ds := r.all()
	if len(ds) == 0 {
		t.Fatal("no decision was reported")
	}
	return ds[len(ds)-1]
}

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// startProxy serves a proxy on a loopback port and returns its address.
func startProxy(t testing.TB, c ProxyConfig) (*Proxy, string) {
	t.Helper()
	p, err := NewProxy(c)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(func() { p.Close() })
	return p, ln.Addr().String()
}

func mustPolicy(t testing.TB, c PolicyConfig) *Policy {
	t.Helper()
	p, err := NewPolicy(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wait returns the first decision with reason r not returned before,
// waiting for it: a cut connection is reported once both its directions
// have ended, which may be just after the client sees the end.
func (r *recorder) wait(t testing.TB, reason Reason) Decision {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		for i, d := range r.ds {
			if d.Reason == reason {
				r.ds = append(r.ds[:i:i], r.ds[i+1:]...)
				r.mu.Unlock()
				return d
			}
		}
		r.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no %s decision was reported; got %+v", reason, r.all())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
