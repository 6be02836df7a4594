package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/console"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/trust"
)

// webConsole is what the console of serve --http and proxy --http is made
// of: the approver whose queue it shows (made by mcpApprover, with
// console.approvals or approvals.http), that queue's changes, the
// approvals API's token, and the activity the engine's limiter chain
// counts.
type webConsole struct {
	on       bool // --http, and the policy's console section is not off
	page     *policy.QueueApprover
	queue    *policy.WatchedQueue
	token    string // the approvals API's X-Toolgate-Token
	activity *console.Activity
	trust    console.Trust // the gateway's pins (nil: none)
	signIns  console.SignIns
}

// newWebConsole prepares the console of a server listening on addr ("" :
// stdio, no console).
func newWebConsole(addr string) *webConsole {
	wc := &webConsole{on: addr != ""}
	if wc.on {
		wc.activity = console.NewActivity()
	}
	return wc
}

// shows reports whether the console is served under pol.
func (wc *webConsole) shows(pol *policy.Policy) bool {
	return wc != nil && wc.on && !pol.Console.Off
}

// limiter is what counts the engine's calls for the activity page (put it
// in the limiter chain; nil without a console).
func (wc *webConsole) limiter() engine.Limiter {
	if wc == nil || wc.activity == nil {
		return nil
	}
	return wc.activity
}

// handler returns the console for the engine, behind the same
// authentication as /mcp (nil when it is off).
func (wc *webConsole) handler(pol *policy.Policy, eng *engine.Engine, auditPath string, authn *auth.Authenticator, loopback bool) http.Handler {
	if !wc.shows(pol) {
		return nil
	}
	o := console.Options{
		Approvals: wc.page,
		Token:     wc.token,
		AuditLogs: func() []string { return auditLogs(auditPath) },
		Tools: func(call tool.Call) []tool.Definition {
			var out []tool.Definition
			for _, n := range eng.VisibleNames(call) {
				if d, ok := eng.Registry().Definition(n); ok {
					out = append(out, d)
				}
			}
			return out
		},
		Selection: func() []console.SelectionRow {
			logs := auditLogs(auditPath)
			if len(logs) == 0 {
				return nil
			}
			recs, err := hitRecords(logs)
			if err != nil {
				return nil
			}
			return reportRows(recs)
		},
		Policy:   pol,
		Activity: wc.activity,
		Trust:    wc.trust,
		Loopback: loopback,
	}
	if wc.signIns != nil {
		o.SignIns = wc.signIns
	}
	if wc.queue != nil {
		o.Changes = wc.queue.Subscribe
	}
	// A sign-in holds on every replica (the console derives a key of its
	// own from the secret).
	o.CookieSecret = replicaSecret(pol)
	if authn != nil {
		o.Authenticate = func(ctx context.Context, token string) (console.User, error) {
			return consoleUser(ctx, authn, pol, token)
		}
	}
	h := consoleHandler{Console: console.New(o)}
	switch {
	case wc.page == nil:
	case authn != nil:
		h.note = " (approvals API at /ui/api/pending and /ui/api/decide: bearer tokens, as /mcp)"
	case pol.Approvals.TokenEnv != "":
		h.note = " (approvals API at /ui/api/pending and /ui/api/decide: token in $" + pol.Approvals.TokenEnv + ")"
	default:
		h.note = " (approvals API at /ui/api/pending and /ui/api/decide: token " + wc.token + ")"
	}
	return h
}

// consoleHandler is the console with what its start-up line says of the
// approvals API.
type consoleHandler struct {
	*console.Console
	note string
}

func (h consoleHandler) Note() string { return h.note }

// consoleUser checks a token as /mcp does (its signature or hash, the
// scopes every request needs) and names its principal and roles: the
// credential's and the principal's role in the policy.
func consoleUser(ctx context.Context, authn *auth.Authenticator, pol *policy.Policy, token string) (console.User, error) {
	id, err := authn.Verify(ctx, token)
	if err != nil {
		return console.User{}, err
	}
	if pol.Auth != nil {
		for _, s := range pol.Auth.Scopes {
			if !slices.Contains(id.Credential.Scopes, s) {
				return console.User{}, fmt.Errorf("the token lacks the scope %s", s)
			}
		}
	}
	roles := slices.Clone(id.Credential.Roles)
	if p, ok := pol.Principals[id.Principal]; ok && p.Role != "" {
		roles = append(roles, p.Role)
	}
	cred := id.Credential
	return console.User{Name: id.Principal, Roles: roles, Auth: &cred}, nil
}

// auditLogs are the logs --audit writes: the file, or for a folder every
// replica's chain in it.
func auditLogs(path string) []string {
	if path == "" || path == "off" {
		return nil
	}
	if fi, err := os.Stat(path); (err == nil && fi.IsDir()) || strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(filepath.Separator)) {
		logs, _ := filepath.Glob(filepath.Join(path, "audit-*.jsonl"))
		return logs
	}
	return []string{path}
}

// pinTrust shows the gateway's pin file (trust.pins) in the console, and
// records an approval made there in the audit log as `toolgate trust
// approve` does; nil without a pin file.
func pinTrust(pol *policy.Policy, auditor engine.Auditor) console.Trust {
	if pol.Trust.Pins == "" {
		return nil
	}
	return &pinFile{pins: trust.OpenPins(pol.Trust.Pins), audit: auditor}
}

type pinFile struct {
	pins  *trust.Pins
	audit engine.Auditor // nil: no audit log
}

func (p *pinFile) Pins() ([]console.Pin, error) {
	pf, err := p.pins.Load()
	if err != nil {
		return nil, err
	}
	var out []console.Pin
	for _, e := range pf.Entries() {
		pin := console.Pin{Upstream: e.Upstream, Tool: e.Tool, State: string(e.State), Why: e.Why, Verdict: string(e.Verdict), Target: e.Upstream + "/" + e.Tool}
		if up := pf.Upstreams[e.Upstream]; up != nil && up.PendingIdentity != nil {
			pin.Target = e.Upstream + "/*" // a changed upstream is approved whole
		}
		if e.State == trust.Quarantined {
			pin.Diff, _ = trustDiff(pf, strings.TrimSuffix(pin.Target, "/*"))
		}
		out = append(out, pin)
	}
	return out, nil
}

func (p *pinFile) Approve(target, by string) error {
	events, err := p.pins.Approve(target, by, time.Now())
	if err != nil {
		return err
	}
	if p.audit != nil {
		for _, e := range events {
			rec := trustRecord(e)
			rec.Approver = by
			if err := p.audit.Append(context.Background(), rec); err != nil {
				return fmt.Errorf("approved, but the audit log could not be written: %w", err)
			}
		}
	}
	return nil
}

// signIns lets people sign in to a gateway's OAuth upstreams in the
// console: those each principal signs in to for itself (authorization
// code, per_principal), and on a console without authentication, whose
// user is the local principal, every authorization code upstream.
type signIns []*auth.Upstream

// consoleSignIns returns the sign-ins of ups (nil when none signs people
// in), and points their auth_required errors at the console's page under
// origin.
func consoleSignIns(ups []*auth.Upstream, origin string) console.SignIns {
	var out signIns
	for _, up := range ups {
		if up.Grant() == auth.GrantAuthorizationCode {
			up.SignInAt(origin + console.SignInPath(up.Name()))
			out = append(out, up)
		}
	}
	if out == nil {
		return nil
	}
	return out
}

// consoleOrigin is the origin browsers reach the console at: the policy's
// auth.resource (the gateway's public URL), else the listener's address.
func consoleOrigin(pol *policy.Policy, ln net.Listener) string {
	if pol.Auth != nil {
		if u, err := url.Parse(pol.Auth.Resource); err == nil && u.Host != "" {
			return u.Scheme + "://" + u.Host
		}
	}
	return "http://" + ln.Addr().String()
}

func (s signIns) find(name string, principal string) (*auth.Upstream, error) {
	for _, up := range s {
		if up.Name() == name && (principal == "" || up.PerPrincipal()) {
			return up, nil
		}
	}
	return nil, fmt.Errorf("no upstream %s to sign in to", name)
}

func (s signIns) List(ctx context.Context, principal string) ([]console.UpstreamSignIn, error) {
	var out []console.UpstreamSignIn
	for _, up := range s {
		if principal != "" && !up.PerPrincipal() {
			continue // the gateway's one sign-in: toolgate auth login at its host
		}
		st, err := up.Status(ctx, principal)
		if err != nil {
			return nil, err
		}
		out = append(out, console.UpstreamSignIn{Upstream: st.Upstream, SignedIn: st.SignedIn, Issuer: st.Issuer, Expiry: st.Expiry, Scopes: st.Scopes})
	}
	return out, nil
}

func (s signIns) Begin(ctx context.Context, principal, upstream, redirectURL string) (string, []byte, error) {
	up, err := s.find(upstream, principal)
	if err != nil {
		return "", nil, err
	}
	p, err := up.BeginLogin(ctx, principal, redirectURL)
	if err != nil {
		return "", nil, err
	}
	b, err := p.Marshal()
	return p.URL, b, err
}

func (s signIns) Finish(ctx context.Context, principal, upstream string, pending []byte, q url.Values) error {
	up, err := s.find(upstream, principal)
	if err != nil {
		return err
	}
	p, err := up.ResumeLogin(pending, principal)
	if err != nil {
		return err
	}
	return p.Finish(ctx, q)
}

func (s signIns) Logout(ctx context.Context, principal, upstream string) error {
	up, err := s.find(upstream, principal)
	if err != nil {
		return err
	}
	revoked, err := up.Logout(ctx, principal)
	if err != nil && revoked {
		return nil // one of the tokens was revoked; the grant is forgotten
	}
	return err
}

// clientIDDocuments are the Client ID Metadata Documents the gateway
// serves: one at the path of each client_id_metadata_url of ups, listing
// the console's callbacks of the upstreams that name it (when the console
// is served) and the loopback callback of toolgate auth login.
func clientIDDocuments(ups []*auth.Upstream, origin string, withConsole bool) (map[string]http.Handler, error) {
	redirects := map[string][]string{}
	var ids []string
	for _, up := range ups {
		id := up.ClientIDMetadataURL()
		if id == "" {
			continue
		}
		if _, ok := redirects[id]; !ok {
			ids = append(ids, id)
			redirects[id] = []string{"http://127.0.0.1/callback"}
		}
		if withConsole && up.Grant() == auth.GrantAuthorizationCode {
			redirects[id] = append(redirects[id], origin+console.SignInPath(up.Name())+"/callback")
		}
	}
	docs := map[string]http.Handler{}
	for _, id := range ids {
		u, err := url.Parse(id)
		if err != nil {
			return nil, err
		}
		path := u.EscapedPath()
		for _, taken := range []string{"/mcp", "/healthz", "/readyz", "/ui/", "/.well-known/oauth-protected-resource"} {
			if path == taken || strings.HasPrefix(path, strings.TrimSuffix(taken, "/")+"/") {
				return nil, usageErr("client_id_metadata_url %s: its path %s is the gateway's own (%s); pick another, e.g. /oauth/client.json", id, path, taken)
			}
		}
		if _, dup := docs[path]; dup {
			return nil, usageErr("client_id_metadata_url %s: another one has the path %s", id, path)
		}
		doc, err := auth.ClientIDMetadata(id, "toolgate", redirects[id])
		if err != nil {
			return nil, err
		}
		docs[path] = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "public, max-age=300")
			w.Write(doc)
		})
	}
	return docs, nil
}
