package cli

import (
	"context"
	"fmt"
	"net/http"
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
	if wc.queue != nil {
		o.Changes = wc.queue.Subscribe
	}
	if env := pol.Approvals.StateKeyEnv; env != "" {
		// The replicas' shared sealing secret: a sign-in holds on every
		// replica (the console derives a key of its own from it).
		o.CookieSecret = []byte(os.Getenv(env))
	}
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
