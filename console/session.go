package console

import (
	"crypto/rand"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"
)

// Cookie names: the key a browser signed in with, and the CSRF token.
const (
	keyCookie  = "toolgate_key"
	csrfCookie = "toolgate_csrf"
)

// local is the user of a console without authentication.
var local = User{Name: "local", Roles: []string{"admin"}}

// reader serves h to users who may read the console; a POST must also
// carry the CSRF token.
func (c *Console) reader(h func(http.ResponseWriter, *http.Request, User)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := c.user(w, r)
		if !ok {
			return
		}
		if !c.access().MayRead(u.Roles) {
			c.problem(w, r, http.StatusForbidden, nil, "You are signed in as "+u.Name+", whose roles do not include one that may read the console.",
				"Ask an administrator for one of the roles of the policy's console.readers (by default reader, approver or admin), or sign in with another key.")
			return
		}
		if r.Method == http.MethodPost && !c.csrfOK(r) {
			c.problem(w, r, http.StatusForbidden, &u, "The form did not carry this browser's CSRF token, so it was refused.",
				"Reload the page and submit the form again.")
			return
		}
		h(w, r, u)
	})
}

// user says who makes the request: the local user without an
// authenticator, else the bearer token of the Authorization header or of
// the sign-in cookie, checked as /mcp checks it. Without a valid one it
// answers (the sign-in form, or 401) and returns false.
func (c *Console) user(w http.ResponseWriter, r *http.Request) (User, bool) {
	if c.o.Authenticate == nil {
		return local, true
	}
	token, fromCookie := bearer(r), false
	var why string
	if token == "" {
		if ck, err := r.Cookie(keyCookie); err == nil && ck.Value != "" {
			fromCookie = true
			if token, err = c.seal.open(ck.Value, time.Now()); err != nil {
				why = "Sign in again: " + err.Error()
				c.setKey(w, r, "")
			}
		}
	}
	if token != "" {
		u, err := c.o.Authenticate(r.Context(), token)
		if err == nil && u.Name != "" {
			return u, true
		}
		why = "Your key or token was refused"
		if err != nil {
			why += ": " + err.Error()
		}
		if fromCookie {
			c.setKey(w, r, "") // it will not become valid again
		}
	}
	if r.Method == http.MethodGet && r.URL.Path != "/ui/events" && r.URL.Path != "/ui/queue" {
		c.page(w, r, http.StatusUnauthorized, "login", nil, map[string]any{"Problem": why})
		return User{}, false
	}
	w.Header().Set("WWW-Authenticate", "Bearer")
	http.Error(w, "Unauthorized: sign in at /ui/login", http.StatusUnauthorized)
	return User{}, false
}

// bearer returns the bearer token of the Authorization header ("" none).
func bearer(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if c.o.Authenticate == nil {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	c.page(w, r, http.StatusOK, "login", nil, nil)
}

// login checks the posted key and keeps it in the sign-in cookie.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if c.o.Authenticate == nil {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	if !c.csrfOK(r) {
		c.page(w, r, http.StatusForbidden, "login", nil, map[string]any{"Problem": "The form did not carry this browser's CSRF token: reload the page and sign in again."})
		return
	}
	key := strings.TrimSpace(r.PostFormValue("key"))
	if !cookieSafe(key) {
		c.page(w, r, http.StatusBadRequest, "login", nil, map[string]any{"Problem": "That is not an API key or a bearer token (letters, digits and -._~+/= only)."})
		return
	}
	u, err := c.o.Authenticate(r.Context(), key)
	if err != nil || u.Name == "" {
		msg := "The key or token was refused"
		if err != nil {
			msg += ": " + err.Error()
		}
		c.page(w, r, http.StatusUnauthorized, "login", nil, map[string]any{"Problem": msg})
		return
	}
	if !c.access().MayRead(u.Roles) {
		c.page(w, r, http.StatusForbidden, "login", nil, map[string]any{"Problem": u.Name + " has no role that may read the console (the policy's console.readers)."})
		return
	}
	c.setKey(w, r, key)
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if !c.csrfOK(r) {
		c.problem(w, r, http.StatusForbidden, nil, "The form did not carry this browser's CSRF token.", "Reload the page and sign out again.")
		return
	}
	c.setKey(w, r, "")
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// setKey sets the sign-in cookie (key sealed, see cookieSealer), or
// clears it when key is "".
func (c *Console) setKey(w http.ResponseWriter, r *http.Request, key string) {
	ck := &http.Cookie{Name: keyCookie, Path: "/ui/", HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode}
	if key == "" {
		ck.MaxAge = -1
	} else {
		ck.Value = c.seal.seal(key, time.Now())
	}
	http.SetCookie(w, ck)
}

// csrf returns the browser's CSRF token, setting its cookie the first
// time: a form carries it back, and a POST is taken only when the two are
// equal (a page of another site can neither read the cookie nor set it).
func (c *Console) csrf(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(csrfCookie); err == nil && len(ck.Value) >= 26 && cookieSafe(ck.Value) {
		return ck.Value
	}
	t := rand.Text()
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: t, Path: "/ui/", HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	return t
}

func (c *Console) csrfOK(r *http.Request) bool {
	ck, err := r.Cookie(csrfCookie)
	if err != nil || len(ck.Value) < 16 {
		return false
	}
	form := r.PostFormValue("csrf")
	return subtle.ConstantTimeCompare([]byte(form), []byte(ck.Value)) == 1
}

// cookieSafe reports whether s is a token68 (what a bearer token is),
// which a cookie carries as it is.
func cookieSafe(s string) bool {
	if s == "" || len(s) > 16<<10 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("-._~+/=", b) >= 0) {
			return false
		}
	}
	return true
}
