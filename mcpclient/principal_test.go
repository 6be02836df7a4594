package mcpclient_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/tool"
)

// principalHeader is what the test's HTTP client sends for the principal
// of each request (as upstream OAuth sends that principal's token).
type principalHeader struct{}

func (principalHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	p, _ := mcpclient.PrincipalFromContext(r.Context())
	if p == "" { // the local principal: the gateway's listing and its own calls
		p = "gateway"
	}
	if p == "carol" { // has not signed in
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, tool.Errorf(tool.AuthRequired, "carol has not signed in")
	}
	r = r.Clone(r.Context())
	r.Header.Set("X-Principal", p)
	return http.DefaultTransport.RoundTrip(r)
}

// TestPerPrincipalSessions: with Config.PerPrincipal each principal's
// calls go over a session of its own, every request of which is that
// principal's (never another's), made once and kept; the local
// principal's go over the gateway's session; a principal whose session
// cannot be made (auth_required) gets that error, and no session.
func TestPerPrincipalSessions(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		return text(req.Extra.Header.Get("X-Principal")), struct{}{}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex
	seen := map[string]map[string]bool{} // session → principals of its requests
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			mu.Lock()
			if seen[id] == nil {
				seen[id] = map[string]bool{}
			}
			seen[id][r.Header.Get("X-Principal")] = true
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	defer hs.Close()

	u, err := mcpclient.Connect(context.Background(), mcpclient.Config{
		Name: "who", URL: "http://" + ln.Addr().String() + "/mcp", PerPrincipal: true,
		HTTPClient: &http.Client{Transport: principalHeader{}},
	}, mcpclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	tl := find(t, u.Tools(), "who__whoami")
	var wg sync.WaitGroup
	for range 4 {
		for _, p := range []string{"alice", "bob", ""} {
			wg.Go(func() {
				res, err := tl.Run(context.Background(), tool.Call{Principal: p})
				want := p
				if p == "" {
					want = "gateway"
				}
				if err != nil || res.Error != nil || res.Text() != want {
					t.Errorf("%q's call: %v %+v %q", p, err, res.Error, res.Text())
				}
			})
		}
	}
	wg.Wait()
	res, _ := tl.Run(context.Background(), tool.Call{Principal: "carol"})
	if res.Error == nil || res.Error.Type != tool.AuthRequired {
		t.Fatalf("carol's call: %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 {
		t.Errorf("%d upstream sessions, want the gateway's, alice's and bob's: %v", len(seen), seen)
	}
	for id, ps := range seen {
		if len(ps) != 1 {
			t.Errorf("session %s carried the requests of %v", id, ps)
		}
	}
}

// whoUpstream is a streamable HTTP server whose tools say who calls
// (whoami) and hold a call until told (hold), and which tracks the
// sessions of principals other than the gateway: live now, and the most
// live at once.
type whoUpstream struct {
	url    string
	hold   chan struct{} // a hold call returns when this is closed
	held   chan struct{} // a hold call has started
	closed chan string   // the principal of each session deleted
	mu     sync.Mutex
	live   map[string]string // session → principal
	most   int               // the most principals' sessions live at once
	dials  map[string]int    // principal → sessions made
}

func newWhoUpstream(t *testing.T) *whoUpstream {
	w := &whoUpstream{hold: make(chan struct{}), held: make(chan struct{}, 64), closed: make(chan string, 64), live: map[string]string{}, dials: map[string]int{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		return text(req.Extra.Header.Get("X-Principal")), struct{}{}, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "hold"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
		w.held <- struct{}{}
		<-w.hold
		return text("held"), struct{}{}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		p, id := r.Header.Get("X-Principal"), r.Header.Get("Mcp-Session-Id")
		if id != "" && p != "gateway" {
			w.mu.Lock()
			if r.Method == http.MethodDelete {
				if _, ok := w.live[id]; ok {
					delete(w.live, id)
					w.closed <- p
				}
			} else if _, ok := w.live[id]; !ok {
				w.live[id] = p
				w.dials[p]++
				w.most = max(w.most, len(w.live))
			}
			w.mu.Unlock()
		}
		h.ServeHTTP(rw, r)
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	w.url = "http://" + ln.Addr().String() + "/mcp"
	return w
}

// connect connects to w per principal, as principalHeader does, with cfg's
// PrincipalIdle and MaxPrincipals; gate, when set, runs first in each of
// the HTTP client's requests of a principal's session.
func (w *whoUpstream) connect(t *testing.T, cfg mcpclient.Config, gate func(r *http.Request, p string)) *mcpclient.Upstream {
	cfg.Name, cfg.URL, cfg.PerPrincipal = "who", w.url, true
	cfg.HTTPClient = &http.Client{Transport: gatedTransport{gate}}
	u, err := mcpclient.Connect(context.Background(), cfg, mcpclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	return u
}

type gatedTransport struct {
	gate func(r *http.Request, p string)
}

func (g gatedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if p, _ := mcpclient.PrincipalFromContext(r.Context()); g.gate != nil && p != "" {
		g.gate(r, p)
	}
	return principalHeader{}.RoundTrip(r)
}

func (w *whoUpstream) liveOf(p string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, q := range w.live {
		if q == p {
			n++
		}
	}
	return n
}

func whoami(t *testing.T, tl tool.Tool, p string) {
	t.Helper()
	res, err := tl.Run(context.Background(), tool.Call{Principal: p})
	if err != nil || res.Error != nil || res.Text() != p {
		t.Errorf("%s's call: %v %+v %q", p, err, res.Error, res.Text())
	}
}

// next is the next value of ch; a minute without one fails the test (what
// is awaited never happened).
func next[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatal("waited a minute in vain")
	}
	var zero T
	return zero
}

// TestPrincipalDialsApart: one principal's session being made (slowly:
// its HTTP client waits) does not hold up another principal's first call,
// and the calls of one principal that arrive while its session is being
// made wait for that one making. Slow's requests wait until alice's call
// has returned: were alice's call held behind slow's making, that making
// would time out (30 s) and slow's calls fail.
func TestPrincipalDialsApart(t *testing.T) {
	w := newWhoUpstream(t)
	aliceDone := make(chan struct{})
	slowIn := make(chan struct{}, 1)
	u := w.connect(t, mcpclient.Config{}, func(r *http.Request, p string) {
		if p == "slow" {
			select {
			case slowIn <- struct{}{}:
			default:
			}
			select {
			case <-aliceDone:
			case <-r.Context().Done():
			}
		}
	})
	tl := find(t, u.Tools(), "who__whoami")
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { whoami(t, tl, "slow") })
	}
	<-slowIn // slow's session is being made
	whoami(t, tl, "alice")
	close(aliceDone)
	wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dials["slow"] != 1 || w.dials["alice"] != 1 {
		t.Errorf("sessions made: %v, want one each", w.dials)
	}
}

// TestPrincipalSessionsIdle: a principal's session is closed once no call
// has used it for PrincipalIdle, never while a call holds it, and made
// again on the principal's next call.
func TestPrincipalSessionsIdle(t *testing.T) {
	w := newWhoUpstream(t)
	u := w.connect(t, mcpclient.Config{PrincipalIdle: 20 * time.Millisecond}, nil)
	who, hold := find(t, u.Tools(), "who__whoami"), find(t, u.Tools(), "who__hold")
	held := make(chan tool.Result)
	go func() {
		res, _ := hold.Run(context.Background(), tool.Call{Principal: "alice"})
		held <- res
	}()
	next(t, w.held)
	whoami(t, who, "alice")
	whoami(t, who, "bob")
	if p := next(t, w.closed); p != "bob" { // alice's hold call holds hers
		t.Fatalf("%s's session was closed while a call held it", p)
	}
	if w.liveOf("alice") != 1 {
		t.Fatalf("alice has %d sessions, want the one her hold call holds", w.liveOf("alice"))
	}
	close(w.hold)
	if res := next(t, held); res.Text() != "held" {
		t.Fatalf("hold: %+v", res)
	}
	if p := next(t, w.closed); p != "alice" {
		t.Fatalf("closed %s's session, want alice's", p)
	}
	whoami(t, who, "bob")
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dials["bob"] != 2 || w.dials["alice"] != 1 {
		t.Errorf("sessions made: %v, want bob's twice (after idle), alice's once", w.dials)
	}
}

// TestPrincipalSessionsBound: at most MaxPrincipals principals' sessions
// are kept: one more principal's first call closes the session let go of
// longest ago, and is refused (unavailable) while a call holds every one.
func TestPrincipalSessionsBound(t *testing.T) {
	w := newWhoUpstream(t)
	u := w.connect(t, mcpclient.Config{MaxPrincipals: 2}, nil)
	who, hold := find(t, u.Tools(), "who__whoami"), find(t, u.Tools(), "who__hold")
	whoami(t, who, "a")
	whoami(t, who, "b")
	whoami(t, who, "a") // b is now the one let go of longest ago
	whoami(t, who, "c")
	if p := next(t, w.closed); p != "b" {
		t.Fatalf("closed %s's session, want b's", p)
	}
	var wg sync.WaitGroup
	for _, p := range []string{"a", "c"} {
		wg.Go(func() {
			if res, _ := hold.Run(context.Background(), tool.Call{Principal: p}); res.Text() != "held" {
				t.Errorf("%s's hold: %+v", p, res)
			}
		})
	}
	next(t, w.held)
	next(t, w.held)
	res, _ := who.Run(context.Background(), tool.Call{Principal: "d"})
	if res.Error == nil || res.Error.Type != tool.Unavailable {
		t.Errorf("d's call while a and c hold both sessions: %+v", res)
	}
	close(w.hold)
	wg.Wait()
	whoami(t, who, "d")
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.most > 2 || len(w.live) > 2 {
		t.Errorf("%d principals' sessions live at once, %d now; want at most 2", w.most, len(w.live))
	}
}

// TestPrincipalDialGivenUp: the call that starts a principal's session
// returns when its own context ends, without waiting for the making; a
// session made after every call that waited for it has gone is closed
// after PrincipalIdle, as any session let go of.
func TestPrincipalDialGivenUp(t *testing.T) {
	w := newWhoUpstream(t)
	in, open := make(chan struct{}, 1), make(chan struct{})
	u := w.connect(t, mcpclient.Config{PrincipalIdle: 20 * time.Millisecond}, func(_ *http.Request, p string) {
		if p == "gone" {
			select {
			case in <- struct{}{}:
			default:
			}
			<-open
		}
	})
	who := find(t, u.Tools(), "who__whoami")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tool.Result, 1)
	go func() {
		res, _ := who.Run(ctx, tool.Call{Principal: "gone"})
		done <- res
	}()
	next(t, in) // the session is being made
	cancel()
	if res := next(t, done); res.Error == nil {
		t.Errorf("a call whose context ended: %+v", res)
	}
	close(open)
	if p := next(t, w.closed); p != "gone" {
		t.Fatalf("closed %s's session, want gone's", p)
	}
}
