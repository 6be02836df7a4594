package mcpclient_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"

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
