package auth

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/sandbox/egress"
	"github.com/toolgate/toolgate/tool"
)

// guardedClient is the HTTP client of discovery, registration and token
// requests: each connection goes through the egress dial guard for the
// one host and port it is for (public addresses; loopback when the
// configuration names a loopback URL; private ones when allowed; cloud
// metadata never), and no redirect is followed.
func guardedClient(loopback, private bool) *http.Client {
	var addrs []netip.Prefix
	if loopback {
		addrs = append(addrs, loopbackRanges...)
	}
	if private {
		addrs = append(addrs, privateRanges...)
	}
	var mu sync.Mutex
	policies := map[string]*egress.Policy{}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		pol, ok := policies[addr]
		if !ok {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				mu.Unlock()
				return nil, err
			}
			n, err := strconv.Atoi(port)
			if err != nil {
				mu.Unlock()
				return nil, err
			}
			if pol, err = egress.NewPolicy(egress.PolicyConfig{Allow: []string{host}, Ports: []int{n}, AllowAddrs: addrs}); err != nil {
				mu.Unlock()
				return nil, err
			}
			policies[addr] = pol
		}
		mu.Unlock()
		return pol.DialContext(ctx, network, addr)
	}
	return &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{DialContext: dial, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: 20 * time.Second},
		CheckRedirect: func(r *http.Request, _ []*http.Request) error {
			return fmt.Errorf("%s redirects; OAuth discovery and token requests follow no redirect", r.URL.Redacted())
		},
	}
}

// checkURL refuses a URL that is not https (plain http only on a
// loopback host).
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopbackHost(u.Hostname()))) {
		return fmt.Errorf("%q is not an https URL", raw)
	}
	return nil
}

// Transport returns a RoundTripper that sends every request to the
// upstream with the token of the principal principalOf finds in the
// request's context (nil: the local principal, ""), over base (nil:
// http.DefaultTransport):
//   - a token close to expiry is refreshed first (a rotated refresh token
//     replaces the old one); a client credentials token is fetched when
//     there is none;
//   - a 401 refreshes (or fetches) once and sends again; without a way to
//     renew, the call fails with an auth_required *tool.Error naming how
//     to sign in;
//   - a 403 insufficient_scope records the scopes asked for (their union
//     with those granted) and fails with auth_required, so that the next
//     sign-in asks for them (client credentials: one new token with them);
//     when that would not widen the scopes, or after MaxStepUps such
//     sign-ins, it fails with permission_denied: never a loop.
//
// The error texts name the upstream and the scopes, never a token.
func (u *Upstream) Transport(base http.RoundTripper, principalOf func(context.Context) string) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{u: u, base: base, principalOf: principalOf}
}

type transport struct {
	u           *Upstream
	base        http.RoundTripper
	principalOf func(context.Context) string
	mu          sync.Mutex // one renewal at a time, so a rotated refresh token is used once
}

// expirySkew renews a token this long before it expires.
const expirySkew = 30 * time.Second

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	principal := ""
	if t.principalOf != nil {
		principal = t.principalOf(ctx)
	}
	key := t.u.Key(principal)
	g, err := t.current(ctx, key)
	if err != nil {
		closeBody(r)
		return nil, err
	}
	resp, err := t.send(r, g)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		ch := parseChallenge(resp)
		drain(resp)
		if g, err = t.renew(ctx, key, g, ch); err != nil {
			return nil, err
		}
		if resp, err = t.send(r, g); err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusUnauthorized {
			drain(resp)
			return nil, t.u.authRequired("it refused the token just renewed", nil)
		}
		return resp, nil
	case http.StatusForbidden:
		ch := parseChallenge(resp)
		if ch.err != "insufficient_scope" {
			return resp, nil
		}
		drain(resp)
		if g, err = t.stepUp(ctx, key, g, ch); err != nil {
			return nil, err
		}
		return t.send(r, g) // client credentials: once, with the wider token
	}
	return resp, nil
}

// send sends r (again) with g's token.
func (t *transport) send(r *http.Request, g *Grant) (*http.Response, error) {
	body, err := bodyAgain(r)
	if err != nil {
		return nil, err
	}
	r2 := r.Clone(r.Context())
	r2.Body = body
	r2.Header.Set("Authorization", "Bearer "+g.AccessToken)
	return t.base.RoundTrip(r2)
}

// current returns the grant to send with: the stored one, refreshed when
// it expires soon; for client credentials, a new one when there is none.
func (t *transport) current(ctx context.Context, key string) (*Grant, error) {
	g, err := t.u.o.Tokens.Load(ctx, key)
	if err != nil {
		return nil, tool.Errorf(tool.Unavailable, "upstream %s: the stored sign-in cannot be read: %v", t.u.o.Name, err)
	}
	if g != nil && (g.Expiry.IsZero() || time.Until(g.Expiry) > expirySkew) {
		return g, nil
	}
	return t.renew(ctx, key, g, nil)
}

// renew refreshes g (or fetches client credentials) under the lock (the
// store's too, when it is shared by replicas: one of them renews, and a
// rotated refresh token is used once), unless another request renewed it
// meanwhile.
func (t *transport) renew(ctx context.Context, key string, g *Grant, ch *challenge) (*Grant, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l, ok := t.u.o.Tokens.(Locker); ok {
		unlock, err := l.Lock(ctx, key)
		if err != nil {
			return nil, tool.Errorf(tool.Unavailable, "upstream %s: the stored sign-in cannot be renewed now: %v", t.u.o.Name, err).WithRetry(time.Second)
		}
		defer unlock()
	}
	now, err := t.u.o.Tokens.Load(ctx, key)
	if err != nil {
		return nil, tool.Errorf(tool.Unavailable, "upstream %s: the stored sign-in cannot be read: %v", t.u.o.Name, err)
	}
	if now != nil && (g == nil || now.AccessToken != g.AccessToken) && (now.Expiry.IsZero() || time.Until(now.Expiry) > expirySkew) {
		return now, nil // renewed by another request or replica (or a new sign-in)
	}
	if t.u.o.OAuth.Grant == GrantClientCredentials {
		var want []string
		if now != nil {
			want = now.Want
		}
		n, err := t.u.clientCredentials(ctx, ch, want)
		if err != nil {
			return nil, tool.Errorf(tool.Unavailable, "upstream %s: %v", t.u.o.Name, err).
				WithSuggestion("check the client credentials in the gateway's configuration (oauth block of %s)", t.u.o.Name)
		}
		return n, t.u.o.Tokens.Save(ctx, key, n)
	}
	if now == nil {
		return nil, t.u.authRequired("you have not signed in", nil)
	}
	if now.RefreshToken == "" {
		return nil, t.u.authRequired("the sign-in has expired", nil)
	}
	if err := t.u.refresh(ctx, now); err != nil {
		return nil, t.u.authRequired("the sign-in could not be renewed ("+err.Error()+")", nil)
	}
	return now, t.u.o.Tokens.Save(ctx, key, now)
}

// stepUp handles insufficient_scope.
func (t *transport) stepUp(ctx context.Context, key string, g *Grant, ch *challenge) (*Grant, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	wider := union(union(g.Scopes, g.Want), ch.scopes)
	if len(wider) == len(g.Scopes) || g.StepUps >= MaxStepUps {
		return nil, tool.Errorf(tool.PermissionDenied, "upstream %s refuses the call even with the scopes %s (insufficient_scope)", t.u.o.Name, strings.Join(wider, " ")).
			WithSuggestion("the account signed in to %s lacks this permission; ask its administrator, or sign in with another account", t.u.o.Name)
	}
	g.Want = wider
	if t.u.o.OAuth.Grant == GrantClientCredentials {
		n, err := t.u.clientCredentials(ctx, nil, wider)
		if err != nil {
			return nil, tool.Errorf(tool.Unavailable, "upstream %s: %v", t.u.o.Name, err)
		}
		n.StepUps = g.StepUps + 1
		return n, t.u.o.Tokens.Save(ctx, key, n)
	}
	if err := t.u.o.Tokens.Save(ctx, key, g); err != nil {
		return nil, err
	}
	return nil, t.u.authRequired("it asks for more permissions", wider)
}

// authRequired is the error of a call that waits for a sign-in.
func (u *Upstream) authRequired(why string, scopes []string) *tool.Error {
	e := tool.Errorf(tool.AuthRequired, "upstream %s needs you to sign in: %s", u.o.Name, why).
		WithDetail("upstream", u.o.Name)
	e.Retryable = true // the same call works once the person has signed in
	if len(scopes) > 0 {
		e = e.WithDetail("scopes", scopes)
	}
	if u.o.SignInURL != "" {
		e = e.WithDetail("sign_in_url", u.o.SignInURL)
	}
	if u.o.SignIn != "" {
		e = e.WithDetail("sign_in", u.o.SignIn).WithSuggestion("sign in (%s), then call again", u.o.SignIn)
	} else {
		e = e.WithSuggestion("sign in to %s, then call again", u.o.Name)
	}
	return e
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		r.Body.Close()
	}
}
