package console

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// SignIns are the OAuth-protected upstreams a person signs in to from the
// console, each for the principal they are signed in to the console as
// (package auth's Upstream does the OAuth; the CLI joins the two).
type SignIns interface {
	// List says where principal is signed in, one entry per upstream.
	List(ctx context.Context, principal string) ([]UpstreamSignIn, error)
	// Begin starts principal's sign-in to upstream, the browser coming
	// back to redirectURL: the URL to send the browser to, and the
	// pending sign-in (secret: the console keeps it sealed in a cookie of
	// that browser until the redirect).
	Begin(ctx context.Context, principal, upstream, redirectURL string) (authURL string, pending []byte, err error)
	// Finish ends it with the redirect's query and keeps the tokens.
	Finish(ctx context.Context, principal, upstream string, pending []byte, query url.Values) error
	// Logout forgets principal's tokens of upstream (revoking them where
	// the authorization server offers it).
	Logout(ctx context.Context, principal, upstream string) error
}

// UpstreamSignIn is one upstream's sign-in of a principal.
type UpstreamSignIn struct {
	Upstream string
	SignedIn bool
	Issuer   string
	Expiry   time.Time
	Scopes   []string
}

// signInCookie holds a pending sign-in, sealed, from the form that begins
// it to the authorization server's redirect. It is SameSite=Lax: the
// redirect is a top-level navigation from another site, which the
// sign-in cookie (Strict) does not come with; it ties the redirect to the
// browser that began the sign-in and to its principal.
const signInCookie = "toolgate_signin"

// pendingLifetime bounds a pending sign-in.
const pendingLifetime = 10 * time.Minute

// SignInPath is the console's page where principal signs in to upstream
// (what an auth_required error and a URL-mode elicitation point to).
func SignInPath(upstream string) string { return "/ui/signin/" + url.PathEscape(upstream) }

// principal is whose sign-ins u makes: the local principal ("") on a
// console without authentication.
func (c *Console) principal(u User) string {
	if c.o.Authenticate == nil {
		return ""
	}
	return u.Name
}

// signIns lists u's sign-ins (nil, and a problem, when they cannot be
// read).
func (c *Console) signIns(ctx context.Context, u User) ([]UpstreamSignIn, string) {
	if c.o.SignIns == nil {
		return nil, ""
	}
	list, err := c.o.SignIns.List(ctx, c.principal(u))
	if err != nil {
		return nil, "The upstream sign-ins cannot be read: " + err.Error()
	}
	return list, ""
}

// signInUpstream returns the upstream of the request's path that u may
// sign in to, or answers and returns false.
func (c *Console) signInUpstream(w http.ResponseWriter, r *http.Request, u *User) (UpstreamSignIn, bool) {
	name := r.PathValue("upstream")
	if c.o.SignIns == nil {
		c.problem(w, r, http.StatusNotFound, u, "No upstream of this gateway asks for a sign-in.", "Upstreams with an oauth block in the gateway's configuration are signed in to here.")
		return UpstreamSignIn{}, false
	}
	principal := ""
	if u != nil {
		principal = c.principal(*u)
	}
	list, err := c.o.SignIns.List(r.Context(), principal)
	if err != nil {
		c.problem(w, r, http.StatusServiceUnavailable, u, "The upstream sign-ins cannot be read: "+err.Error(), "Try again in a moment.")
		return UpstreamSignIn{}, false
	}
	i := slices.IndexFunc(list, func(s UpstreamSignIn) bool { return s.Upstream == name })
	if i < 0 {
		c.problem(w, r, http.StatusNotFound, u, "There is no upstream "+name+" to sign in to.", "The Tools page lists the upstreams that ask for a sign-in.")
		return UpstreamSignIn{}, false
	}
	return list[i], true
}

// signInPage shows u's sign-in to one upstream, with the button that
// begins it.
func (c *Console) signInPage(w http.ResponseWriter, r *http.Request, u User) {
	s, ok := c.signInUpstream(w, r, &u)
	if !ok {
		return
	}
	c.page(w, r, http.StatusOK, "signin", &u, map[string]any{"SignIn": s})
}

// beginSignIn begins u's sign-in: the pending sign-in goes into this
// browser's cookie, and the page sends the browser on to the
// authorization server (a link, followed by the page's script: a form's
// redirect to another origin would break the form-action policy).
func (c *Console) beginSignIn(w http.ResponseWriter, r *http.Request, u User) {
	s, ok := c.signInUpstream(w, r, &u)
	if !ok {
		return
	}
	principal := c.principal(u)
	callback := c.origin(r) + SignInPath(s.Upstream) + "/callback"
	authURL, pending, err := c.o.SignIns.Begin(r.Context(), principal, s.Upstream, callback)
	if err != nil {
		c.log.Warn("console: beginning a sign-in failed", "upstream", s.Upstream, "principal", u.Name, "err", err)
		c.page(w, r, http.StatusBadGateway, "signin", &u, map[string]any{"SignIn": s, "Problem": "Signing in to " + s.Upstream + " could not begin: " + err.Error()})
		return
	}
	value := c.seal.sealFor(signInAD(s.Upstream), principal+"\x00"+string(pending), time.Now())
	http.SetCookie(w, &http.Cookie{Name: signInCookie, Value: value, Path: SignInPath(s.Upstream) + "/callback",
		MaxAge: int(pendingLifetime / time.Second), HttpOnly: true, Secure: strings.HasPrefix(c.origin(r), "https:"), SameSite: http.SameSiteLaxMode})
	c.page(w, r, http.StatusOK, "signin", &u, map[string]any{"SignIn": s, "Continue": authURL})
}

func signInAD(upstream string) []byte { return []byte(signInCookie + "\x00" + upstream) }

// signInCallback takes the authorization server's redirect: the pending
// sign-in of this browser's cookie, for its principal, is finished.
func (c *Console) signInCallback(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("upstream")
	clear := &http.Cookie{Name: signInCookie, Path: SignInPath(name) + "/callback", MaxAge: -1, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode}
	ck, err := r.Cookie(signInCookie)
	if err != nil || c.o.SignIns == nil {
		c.problem(w, r, http.StatusBadRequest, nil, "This browser has no sign-in to "+name+" waiting for this answer.",
			"Begin the sign-in again from the console's Tools page, in this browser, and finish it within 10 minutes.")
		return
	}
	http.SetCookie(w, clear) // one answer per sign-in
	plain, err := c.seal.openFor(signInAD(name), ck.Value, time.Now(), pendingLifetime)
	if err != nil {
		c.problem(w, r, http.StatusBadRequest, nil, "The sign-in to "+name+" cannot be finished: "+err.Error()+".", "Begin it again from the console's Tools page.")
		return
	}
	principal, pending, _ := strings.Cut(plain, "\x00")
	if err := c.o.SignIns.Finish(r.Context(), principal, name, []byte(pending), r.URL.Query()); err != nil {
		c.log.Warn("console: finishing a sign-in failed", "upstream", name, "principal", principal, "err", err)
		c.problem(w, r, http.StatusBadGateway, nil, "Signing in to "+name+" failed: "+err.Error(), "Begin it again from the console's Tools page.")
		return
	}
	who := principal
	if who == "" {
		who = local.Name
	}
	c.page(w, r, http.StatusOK, "signin", nil, map[string]any{"SignIn": UpstreamSignIn{Upstream: name, SignedIn: true}, "Done": who})
}

// signOut forgets u's tokens of one upstream.
func (c *Console) signOut(w http.ResponseWriter, r *http.Request, u User) {
	s, ok := c.signInUpstream(w, r, &u)
	if !ok {
		return
	}
	if err := c.o.SignIns.Logout(r.Context(), c.principal(u), s.Upstream); err != nil {
		c.problem(w, r, http.StatusBadGateway, &u, "Signing out of "+s.Upstream+": "+err.Error(), "The tokens are forgotten here; revoke them at the upstream's authorization server if you can.")
		return
	}
	http.Redirect(w, r, "/ui/tools#signins", http.StatusSeeOther)
}

// origin is the console's origin as the browser reached it: the
// request's Host, over https when the request came over TLS or through a
// proxy that says so (X-Forwarded-Proto). A wrong one only makes a
// redirect URI the authorization server refuses.
func (c *Console) origin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
