package console_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/console"
)

// signIns records what the console asks of the upstream sign-ins (package
// auth's OAuth is tested in cmd/toolgate's TestConsoleOAuthSignIn, with a
// real authorization server and Chromium).
type signIns struct {
	mu       sync.Mutex
	finished []string // principal/upstream/pending/code
}

func (s *signIns) List(_ context.Context, principal string) ([]console.UpstreamSignIn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	signedIn := false
	for _, f := range s.finished {
		signedIn = signedIn || strings.HasPrefix(f, principal+"/tracker/")
	}
	return []console.UpstreamSignIn{{Upstream: "tracker", SignedIn: signedIn}, {Upstream: "wiki"}}, nil
}

func (s *signIns) Begin(_ context.Context, principal, upstream, redirect string) (string, []byte, error) {
	return "https://as.example/authorize?redirect_uri=" + url.QueryEscape(redirect), []byte("pending of " + principal + " for " + upstream), nil
}

func (s *signIns) Finish(_ context.Context, principal, upstream string, pending []byte, q url.Values) error {
	if q.Get("code") == "" {
		return errors.New("no code")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finished = append(s.finished, principal+"/"+upstream+"/"+string(pending)+"/"+q.Get("code"))
	return nil
}

func (s *signIns) Logout(context.Context, string, string) error { return nil }

// A sign-in begun in the console is finished only by the redirect that
// comes back to the browser that began it, once, for the principal that
// began it and the upstream it was begun for.
func TestSignInCallback(t *testing.T) {
	si := &signIns{}
	e := newEnv(t, false, withAuth, func(o *console.Options) { o.SignIns = si })
	alice := e.client()
	e.signIn(alice, "key-admin-0123456789")
	_, tools := e.get(alice, "/ui/tools", "")
	if !strings.Contains(tools, `id="signin-tracker"`) || !strings.Contains(tools, "not signed in") {
		t.Fatalf("the tools page offers no sign-in:\n%s", tools)
	}
	res, page := e.post(alice, "/ui/signin/tracker", url.Values{"csrf": {csrf(t, tools)}}, nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(page, `id="continue"`) || !strings.Contains(page, "https://as.example/authorize?redirect_uri="+url.QueryEscape(e.srv.URL+"/ui/signin/tracker/callback")) {
		t.Fatalf("beginning: %d\n%s", res.StatusCode, page)
	}
	var ck *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "toolgate_signin" {
			ck = c
		}
	}
	if ck == nil || ck.Path != "/ui/signin/tracker/callback" || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || strings.Contains(ck.Value, "pending") {
		t.Fatalf("the pending sign-in's cookie: %+v", ck)
	}

	// another browser, or a forged cookie, or the cookie at another upstream's callback
	if res, _ := e.get(e.client(), "/ui/signin/tracker/callback?code=c1&state=s", ""); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("a redirect to a browser that began no sign-in: %d", res.StatusCode)
	}
	for _, c := range []struct{ path, value string }{{"/ui/signin/tracker/callback", "forged" + ck.Value[6:]}, {"/ui/signin/wiki/callback", ck.Value}} {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+c.path+"?code=c2&state=s", nil)
		req.AddCookie(&http.Cookie{Name: "toolgate_signin", Value: c.value})
		if res, _ := e.do(e.client(), req); res.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s with a cookie it was not made for: %d", c.path, res.StatusCode)
		}
	}
	res, page = e.get(alice, "/ui/signin/tracker/callback?code=c3&state=s", "")
	if res.StatusCode != http.StatusOK || !strings.Contains(page, `id="signed-in"`) || !strings.Contains(page, "as <strong>alice</strong>") {
		t.Fatalf("the redirect: %d\n%s", res.StatusCode, page)
	}
	if res, _ := e.get(alice, "/ui/signin/tracker/callback?code=c4&state=s", ""); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("a second redirect for one sign-in: %d", res.StatusCode)
	}
	if len(si.finished) != 1 || si.finished[0] != "alice/tracker/pending of alice for tracker/c3" {
		t.Fatalf("finished: %q", si.finished)
	}
	if _, tools := e.get(alice, "/ui/tools", ""); !strings.Contains(tools, "✓ signed in") || !strings.Contains(tools, `id="signout-tracker"`) {
		t.Fatalf("the tools page after signing in:\n%s", tools)
	}
	if res, _ := e.get(alice, "/ui/signin/nowhere", ""); res.StatusCode != http.StatusNotFound {
		t.Fatalf("an upstream that is not there: %d", res.StatusCode)
	}
}
