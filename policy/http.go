package policy

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HTTPApprover is an approval endpoint: an http.Handler with a small page
// that lists the calls waiting for a decision and takes decisions, and a
// JSON API for the same:
//
//	GET  /               the page
//	POST /decide         a form post from the page
//	GET  /api/pending    [{id, tool, arguments, rule, reason, level, confirm, always_rules, session, principal, since}]
//	POST /api/decide     {"id", "decision": "once"|"session"|"always"|"deny", "reason", "confirm"}
//
// Every POST must carry the per-process token (form field "token" on the
// page, header X-Toolgate-Token for the API; see Token), so another web
// page open in the same browser cannot decide (CSRF). By default only
// loopback clients are served and the Host header must be a loopback name,
// so a DNS-rebinding page cannot read the token either. Pages are sent
// with a strict Content-Security-Policy and may not be framed.
type HTTPApprover struct {
	token       string
	allowRemote bool

	mu      sync.Mutex
	seq     int
	pending map[string]*waiting
	order   []string
}

type waiting struct {
	id    string
	req   Request
	since time.Time
	done  chan Approval
}

// HTTPOptions configure an HTTPApprover.
type HTTPOptions struct {
	// AllowRemote serves clients that are not on this machine (put the
	// endpoint behind authentication then: the token is on the page).
	AllowRemote bool
}

// NewHTTPApprover returns an approval endpoint with a fresh token.
func NewHTTPApprover(opts HTTPOptions) (*HTTPApprover, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return &HTTPApprover{token: hex.EncodeToString(b), allowRemote: opts.AllowRemote, pending: map[string]*waiting{}}, nil
}

// Token is the secret that decisions must carry (for API clients; the page
// carries it itself).
func (h *HTTPApprover) Token() string { return h.token }

// Approve puts the request on the page and waits for a decision.
func (h *HTTPApprover) Approve(ctx context.Context, req Request) (Approval, error) {
	h.mu.Lock()
	h.seq++
	w := &waiting{id: strconv.Itoa(h.seq), req: req, since: time.Now(), done: make(chan Approval, 1)}
	h.pending[w.id] = w
	h.order = append(h.order, w.id)
	h.mu.Unlock()
	select {
	case a := <-w.done:
		return a, nil
	case <-ctx.Done():
		h.remove(w.id)
		select {
		case a := <-w.done: // decided just as the wait ended
			return a, nil
		default:
		}
		return Approval{Approver: "http", Reason: "no decision: " + ctx.Err().Error()}, nil
	}
}

func (h *HTTPApprover) remove(id string) *waiting {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.pending[id]
	if w == nil {
		return nil
	}
	delete(h.pending, id)
	for i, x := range h.order {
		if x == id {
			h.order = append(h.order[:i:i], h.order[i+1:]...)
			break
		}
	}
	return w
}

// pendingView is one waiting call as the API shows it.
type pendingView struct {
	ID          string          `json:"id"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments"`
	Pretty      string          `json:"-"`
	Rule        string          `json:"rule"`
	Reason      string          `json:"reason"`
	Level       int             `json:"level"`
	Confirm     bool            `json:"confirm"`
	AlwaysRules []string        `json:"always_rules,omitempty"`
	Session     string          `json:"session,omitempty"`
	Principal   string          `json:"principal,omitempty"`
	Since       time.Time       `json:"since"`
}

func (h *HTTPApprover) list() []pendingView {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]pendingView, 0, len(h.order))
	for _, id := range h.order {
		w := h.pending[id]
		args := w.req.Call.Args
		if !json.Valid(args) {
			args, _ = json.Marshal(string(args))
		}
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		out = append(out, pendingView{ID: id, Tool: w.req.Call.Name, Arguments: args, Pretty: prettyArgs(w.req.Call.Args, 4000),
			Rule: w.req.Decision.Rule, Reason: w.req.Decision.Reason, Level: int(w.req.Decision.Level), Confirm: w.req.Decision.Confirm,
			AlwaysRules: w.req.AlwaysRules, Session: w.req.Call.Session, Principal: w.req.Call.Principal, Since: w.since})
	}
	return out
}

// decide applies a decision to a waiting call.
func (h *HTTPApprover) decide(id, decision, reason, confirm string) (int, string) {
	h.mu.Lock()
	w := h.pending[id]
	h.mu.Unlock()
	if w == nil {
		return http.StatusNotFound, "no call is waiting with this id (decided already, or it timed out)"
	}
	d := w.req.Decision
	a := Approval{Approver: "http", Reason: strings.TrimSpace(reason)}
	switch decision {
	case "deny":
	case "once":
		a.Approved, a.Scope = true, Once
	case "session":
		a.Approved, a.Scope = true, Session
	case "always":
		a.Approved, a.Scope = true, Always
	default:
		return http.StatusBadRequest, "decision must be once, session, always or deny"
	}
	if a.Approved && d.Confirm {
		if a.Scope != Once {
			return http.StatusBadRequest, "a level-3 call can only be approved once"
		}
		if c := strings.TrimSpace(confirm); c != w.req.Call.Name && c != "yes" {
			return http.StatusBadRequest, fmt.Sprintf("a level-3 call needs confirm set to %q or \"yes\"", w.req.Call.Name)
		}
	}
	if a.Scope == Always && len(w.req.AlwaysRules) == 0 {
		return http.StatusBadRequest, "\"always\" is not offered for this call"
	}
	if h.remove(id) == nil {
		return http.StatusNotFound, "the call was decided meanwhile"
	}
	w.done <- a
	return http.StatusOK, "decided"
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
		page.Execute(w, map[string]any{"Pending": h.list(), "Token": h.token})
	case r.URL.Path == "/decide" && r.Method == http.MethodPost:
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		if !h.tokenOK(r.PostForm.Get("token")) {
			http.Error(w, "missing or wrong token: reload the page", http.StatusForbidden)
			return
		}
		code, msg := h.decide(r.PostForm.Get("id"), r.PostForm.Get("decision"), r.PostForm.Get("reason"), r.PostForm.Get("confirm"))
		if code != http.StatusOK {
			http.Error(w, msg, code)
			return
		}
		http.Redirect(w, r, "/", http.StatusSeeOther)
	case r.URL.Path == "/api/pending" && r.Method == http.MethodGet:
		hd.Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(h.list())
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
		code, msg := h.decide(body.ID, body.Decision, body.Reason, body.Confirm)
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

var page = template.Must(template.New("page").Parse(`<!doctype html>
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
{{range .Pending}}
<div class="call{{if .Confirm}} lvl3{{end}}">
<h2>{{.Tool}} <span class="muted">level {{.Level}}{{if .Principal}} · {{.Principal}}{{end}}{{if .Session}} · session {{.Session}}{{end}}</span></h2>
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
