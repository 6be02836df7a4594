package policy

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// HTTPApprover is an approval endpoint: an http.Handler with a small page
// that lists the calls waiting for a decision and takes decisions, and a
// JSON API for the same:
//
//	GET  /               the page
//	POST /decide         a form post from the page
//	GET  /api/pending    [{id, tool, arguments, pretty, rule, reason, level, confirm, always_rules, session, principal, since, replica}]
//	POST /api/decide     {"id", "decision": "once"|"session"|"always"|"deny", "reason", "confirm"}
//
// The calls wait in an ApprovalQueue: this process's by default, or one
// that several replicas share (HTTPOptions.Queue), so that a call asked on
// one replica is listed and answered on the page of any of them, and
// answered once: a second answer is refused with 409 Conflict, an id that
// waits no more (answered and gone, timed out, its call ended) with 404.
// What a queue holds is the call as shown to a person, its arguments and
// texts with secrets redacted (HTTPOptions.Redactor), never the call
// itself.
//
// Every POST must carry the token (form field "token" on the page, header
// X-Toolgate-Token for the API; see Token), so another web page open in the
// same browser cannot decide (CSRF). By default only loopback clients are
// served and the Host header must be a loopback name, so a DNS-rebinding
// page cannot read the token either. Pages are sent with a strict
// Content-Security-Policy and may not be framed.
type HTTPApprover struct {
	token       string
	allowRemote bool
	queue       ApprovalQueue // where calls wait
	local       ApprovalQueue // this process's: queue itself, or the fallback of a shared one
	fallback    bool          // a shared queue that cannot be reached: ask on local (on_error allow)
	replica     string
	redact      *Redactor
}

// HTTPOptions configure an HTTPApprover.
type HTTPOptions struct {
	// AllowRemote serves clients that are not on this machine (put the
	// endpoint behind authentication then: the token is on the page).
	AllowRemote bool
	// Token is the secret decisions carry: give every replica that shares
	// a Queue the same one, so that an API client may post to any of them
	// ("" : a fresh random token for this process). At least 16 bytes.
	Token string
	// Queue is where calls wait (nil: in this process).
	Queue ApprovalQueue
	// OnQueueError is what a call gets while Queue cannot be reached:
	// deny ("" too) refuses it as unavailable, with a retry hint; allow
	// asks on this process's page alone.
	OnQueueError OnError
	// Replica names this process on the calls it puts on a shared Queue.
	Replica string
	// Redactor removes secrets from what the page shows and the Queue
	// holds (nil: none).
	Redactor *Redactor
}

// approvalSlack is how long an entry outlives its call's approval timeout
// in a queue: a replica that dies leaves nothing behind for longer.
const approvalSlack = 30 * time.Second

// NewHTTPApprover returns an approval endpoint.
func NewHTTPApprover(opts HTTPOptions) (*HTTPApprover, error) {
	token := opts.Token
	switch {
	case token == "":
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		token = hex.EncodeToString(b)
	case len(token) < 16:
		return nil, fmt.Errorf("policy: the approval token is %d bytes long: give at least 16", len(token))
	}
	h := &HTTPApprover{token: token, allowRemote: opts.AllowRemote, queue: opts.Queue, local: NewMemoryQueue(),
		fallback: opts.OnQueueError == OnErrorAllow, replica: opts.Replica, redact: opts.Redactor}
	if h.queue == nil {
		h.queue = h.local
	}
	return h, nil
}

// Token is the secret that decisions must carry (for API clients; the page
// carries it itself).
func (h *HTTPApprover) Token() string { return h.token }

// Approve puts the request on the queue and waits for a decision.
func (h *HTTPApprover) Approve(ctx context.Context, req Request) (Approval, error) {
	v := h.view(req)
	entry, err := json.Marshal(v)
	if err != nil {
		return Approval{Approver: "http"}, fmt.Errorf("policy: %w", err)
	}
	ttl := DefaultApprovalTimeout
	if d, ok := ctx.Deadline(); ok {
		ttl = time.Until(d)
	}
	ttl += approvalSlack
	raw, err := h.queue.Wait(ctx, v.ID, entry, ttl)
	if err != nil && ctx.Err() == nil && h.queue != h.local {
		if !h.fallback {
			return Approval{Approver: "http"}, tool.Errorf(tool.Unavailable, "the shared approval queue (Redis) cannot be reached, so no one can be asked about this call: %v", err).
				WithRetry(time.Second).WithSuggestion("retry in a moment; the call was not run")
		}
		raw, err = h.local.Wait(ctx, v.ID, entry, ttl) // on_error allow: this replica's page
	}
	if err != nil {
		return Approval{Approver: "http", Reason: "no decision: " + err.Error()}, nil
	}
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return Approval{Approver: "http", Reason: "the answer could not be read"}, nil
	}
	return Approval{Approved: a.Approved, Approver: cmp.Or(a.By, "http"), Scope: a.Scope, Reason: a.Reason}, nil
}

// answer is an Approval as it travels through a queue.
type answer struct {
	Approved bool   `json:"approved"`
	Scope    Scope  `json:"scope,omitempty"`
	Reason   string `json:"reason,omitempty"`
	By       string `json:"by,omitempty"` // who answered, for the audit log ("" : "http")
}

// pendingView is one waiting call as a person is shown it, and as a queue
// holds it.
type pendingView struct {
	ID          string          `json:"id"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments"`
	Pretty      string          `json:"pretty"`
	Rule        string          `json:"rule"`
	Reason      string          `json:"reason"`
	Level       int             `json:"level"`
	Confirm     bool            `json:"confirm"`
	AlwaysRules []string        `json:"always_rules,omitempty"`
	Session     string          `json:"session,omitempty"`
	Principal   string          `json:"principal,omitempty"`
	Since       time.Time       `json:"since"`
	Replica     string          `json:"replica,omitempty"`
}

// view describes req for a person, under a fresh id, secrets redacted.
func (h *HTTPApprover) view(req Request) pendingView {
	text := func(s string) string { s, _ = h.redact.Redact(s); return s }
	args := redactJSON(h.redact, req.Call.Args)
	var rules []string
	for _, r := range req.AlwaysRules {
		rules = append(rules, text(r))
	}
	return pendingView{ID: rand.Text(), Tool: req.Call.Name, Arguments: args, Pretty: prettyArgs(args, 4000),
		Rule: text(req.Decision.Rule), Reason: text(req.Decision.Reason), Level: int(req.Decision.Level), Confirm: req.Decision.Confirm,
		AlwaysRules: rules, Session: req.Call.Session, Principal: req.Call.Principal, Since: time.Now().UTC(), Replica: h.replica}
}

// redactJSON returns arguments with the secrets r finds replaced: in every
// string of the value once decoded (a private key's line breaks are
// escaped in JSON), then in the JSON text (a "password": "…" member). What
// is not JSON, or no longer is, becomes a JSON string.
func redactJSON(r *Redactor, raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	out := raw
	if err := dec.Decode(&v); err == nil && r != nil {
		if b, err := json.Marshal(redactValue(r, v)); err == nil {
			out = b
		}
	}
	s, _ := r.Redact(string(out))
	if !json.Valid([]byte(s)) {
		b, _ := json.Marshal(s)
		return b
	}
	return json.RawMessage(s)
}

func redactValue(r *Redactor, v any) any {
	switch x := v.(type) {
	case string:
		s, _ := r.Redact(x)
		return s
	case []any:
		for i := range x {
			x[i] = redactValue(r, x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			k, _ = r.Redact(k)
			out[k] = redactValue(r, e)
		}
		return out
	}
	return v
}

// list returns the calls waiting on this process's queue and the shared
// one, oldest first; the error says the shared one cannot be read.
func (h *HTTPApprover) list(ctx context.Context) ([]pendingView, error) {
	entries, _ := h.local.List(ctx)
	var err error
	if h.queue != h.local {
		var shared [][]byte
		shared, err = h.queue.List(ctx)
		entries = append(entries, shared...)
	}
	out := make([]pendingView, 0, len(entries))
	seen := map[string]bool{}
	for _, e := range entries {
		var v pendingView
		if json.Unmarshal(e, &v) != nil || v.ID == "" || seen[v.ID] {
			continue
		}
		seen[v.ID] = true
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b pendingView) int {
		return cmp.Or(a.Since.Compare(b.Since), strings.Compare(a.ID, b.ID))
	})
	return out, err
}

// decide applies a decision to a waiting call, in whichever queue it waits.
func (h *HTTPApprover) decide(ctx context.Context, id, decision, reason, confirm, by string) (int, string) {
	q := h.local
	raw, err := q.Get(ctx, id)
	if errors.Is(err, fs.ErrNotExist) && h.queue != h.local {
		q = h.queue
		raw, err = q.Get(ctx, id)
	}
	if err != nil {
		return queueStatus(err)
	}
	var w pendingView
	if err := json.Unmarshal(raw, &w); err != nil {
		return http.StatusInternalServerError, "the waiting call could not be read"
	}
	a := answer{Reason: strings.TrimSpace(reason), By: by}
	switch decision {
	case "deny":
	case "once", "session", "always":
		a.Approved, a.Scope = true, Scope(decision)
	default:
		return http.StatusBadRequest, "decision must be once, session, always or deny"
	}
	if a.Approved && w.Confirm {
		if a.Scope != Once {
			return http.StatusBadRequest, "a level-3 call can only be approved once"
		}
		if c := strings.TrimSpace(confirm); c != w.Tool && c != "yes" {
			return http.StatusBadRequest, fmt.Sprintf("a level-3 call needs confirm set to %q or \"yes\"", w.Tool)
		}
	}
	if a.Scope == Always && len(w.AlwaysRules) == 0 {
		return http.StatusBadRequest, "\"always\" is not offered for this call"
	}
	b, err := json.Marshal(a)
	if err != nil {
		return http.StatusInternalServerError, err.Error()
	}
	if err := q.Answer(ctx, id, b); err != nil {
		return queueStatus(err)
	}
	return http.StatusOK, "decided"
}

// queueStatus is the HTTP status and message of a queue's error.
func queueStatus(err error) (int, string) {
	switch {
	case errors.Is(err, fs.ErrExist):
		return http.StatusConflict, "this call was answered already (the first answer counts)"
	case errors.Is(err, fs.ErrNotExist):
		return http.StatusNotFound, "no call is waiting with this id (it was decided and has gone, it timed out, or its call ended)"
	}
	return http.StatusServiceUnavailable, "the shared approval queue cannot be reached: retry in a moment"
}

// ServeHTTP serves the page and the API.
func (h *HTTPApprover) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
	if !h.allowRemote && (!loopbackAddr(r.RemoteAddr) || !loopbackHost(r.Host)) {
		http.Error(w, "approvals are served to this machine only", http.StatusForbidden)
		return
	}
	if r.Method == http.MethodPost {
		if o := r.Header.Get("Origin"); o != "" && o != "null" {
			if u, err := url.Parse(o); err != nil || u.Host != r.Host {
				http.Error(w, "cross-origin request refused", http.StatusForbidden)
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	}
	switch {
	case r.URL.Path == "/" && r.Method == http.MethodGet:
		hd.Set("Content-Type", "text/html; charset=utf-8")
		list, err := h.list(r.Context())
		var problem string
		if err != nil {
			_, problem = queueStatus(err)
		}
		page().Execute(w, map[string]any{"Pending": list, "Token": h.token, "Problem": problem})
	case r.URL.Path == "/decide" && r.Method == http.MethodPost:
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		if !h.tokenOK(r.PostForm.Get("token")) {
			http.Error(w, "missing or wrong token: reload the page", http.StatusForbidden)
			return
		}
		code, msg := h.decide(r.Context(), r.PostForm.Get("id"), r.PostForm.Get("decision"), r.PostForm.Get("reason"), r.PostForm.Get("confirm"), "")
		if code != http.StatusOK {
			http.Error(w, msg, code)
			return
		}
		http.Redirect(w, r, "/", http.StatusSeeOther)
	case r.URL.Path == "/api/pending" && r.Method == http.MethodGet:
		hd.Set("Content-Type", "application/json")
		list, err := h.list(r.Context())
		if err != nil && !h.fallback { // under on_error allow, this process's calls
			code, msg := queueStatus(err)
			w.WriteHeader(code)
			json.NewEncoder(w).Encode(map[string]any{"error": msg})
			return
		}
		json.NewEncoder(w).Encode(list)
	case r.URL.Path == "/api/decide" && r.Method == http.MethodPost:
		hd.Set("Content-Type", "application/json")
		if !h.tokenOK(r.Header.Get("X-Toolgate-Token")) {
			w.WriteHeader(http.StatusForbidden)
			json.NewEncoder(w).Encode(map[string]any{"error": "missing or wrong X-Toolgate-Token"})
			return
		}
		var body struct{ ID, Decision, Reason, Confirm string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"error": "the body is not a JSON object {id, decision, reason, confirm}"})
			return
		}
		code, msg := h.decide(r.Context(), body.ID, body.Decision, body.Reason, body.Confirm, "")
		w.WriteHeader(code)
		if code != http.StatusOK {
			json.NewEncoder(w).Encode(map[string]any{"error": msg})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"ok": true})
	case r.URL.Path == "/" || r.URL.Path == "/decide" || strings.HasPrefix(r.URL.Path, "/api/"):
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	default:
		http.NotFound(w, r)
	}
}

func (h *HTTPApprover) tokenOK(t string) bool {
	return t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(h.token)) == 1
}

func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func loopbackHost(h string) bool {
	host, _, err := net.SplitHostPort(h)
	if err != nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// page is parsed on first use: most programs never serve it.
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>toolgate approvals</title>
<style>
body{font:15px system-ui,sans-serif;margin:2em auto;max-width:60em;padding:0 1em;color:#222}
.call{border:1px solid #ccc;border-radius:6px;padding:1em;margin:1em 0}
.lvl3{border-color:#c00}
pre{background:#f6f6f6;padding:.6em;overflow:auto;max-height:24em;white-space:pre-wrap;word-break:break-all}
button{margin-right:.4em} input[type=text]{width:20em}
.muted{color:#666;font-size:90%}
</style></head><body>
<h1>toolgate approvals</h1>
<p><a href="/">Refresh</a> · {{len .Pending}} waiting</p>
{{if .Problem}}<p><strong>{{.Problem}}</strong></p>{{end}}
{{range .Pending}}
<div class="call{{if .Confirm}} lvl3{{end}}">
<h2>{{.Tool}} <span class="muted">level {{.Level}}{{if .Principal}} · {{.Principal}}{{end}}{{if .Session}} · session {{.Session}}{{end}}{{if .Replica}} · on {{.Replica}}{{end}}</span></h2>
<p>{{.Reason}} <span class="muted">[{{.Rule}}]</span></p>
<pre>{{.Pretty}}</pre>
<form method="post" action="/decide">
<input type="hidden" name="token" value="{{$.Token}}"><input type="hidden" name="id" value="{{.ID}}">
{{if .Confirm}}<p>Level 3: type <code>{{.Tool}}</code> or <code>yes</code> to run it: <input type="text" name="confirm" autocomplete="off"></p>{{end}}
<button name="decision" value="once">Allow once</button>
{{if not .Confirm}}<button name="decision" value="session">Allow for this session</button>
{{if .AlwaysRules}}<button name="decision" value="always" title="adds {{range .AlwaysRules}}{{.}} {{end}}to the policy file">Always allow</button>{{end}}{{end}}
<button name="decision" value="deny">Deny</button>
<input type="text" name="reason" placeholder="reason for the model (optional)">
{{if and .AlwaysRules (not .Confirm)}}<p class="muted">Always adds: {{range .AlwaysRules}}<code>{{.}}</code> {{end}}</p>{{end}}
</form></div>
{{else}}<p>Nothing is waiting.</p>{{end}}
</body></html>
`))
})
