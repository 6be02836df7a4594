package policy

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// QueueApprover asks a person through an approvals page: it puts the call
// on an ApprovalQueue as a person is shown it and waits for the answer
// that a page (package console: the approvals page and its JSON API) takes
// through Pending and Decide. This package serves no page itself.
//
// The calls wait in this process's queue by default, or in one that
// several replicas share (QueueOptions.Queue), so that a call asked on one
// replica is listed and answered on the page of any of them, and answered
// once: a second answer is refused (409 Conflict), an id that waits no
// more (answered and gone, timed out, its call ended) too (404). What a
// queue holds is the call as shown to a person, its arguments and texts
// with secrets redacted (QueueOptions.Redactor), never the call itself.
type QueueApprover struct {
	queue    ApprovalQueue // where calls wait
	local    ApprovalQueue // this process's: queue itself, or the fallback of a shared one
	fallback bool          // a shared queue that cannot be reached: ask on local (on_error allow)
	replica  string
	redact   *Redactor
}

// QueueOptions configure a QueueApprover.
type QueueOptions struct {
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

// NewQueueApprover returns an approver that asks through a queue.
func NewQueueApprover(opts QueueOptions) *QueueApprover {
	h := &QueueApprover{queue: opts.Queue, local: NewMemoryQueue(),
		fallback: opts.OnQueueError == OnErrorAllow, replica: opts.Replica, redact: opts.Redactor}
	if h.queue == nil {
		h.queue = h.local
	}
	return h
}

// LocalFallback reports whether a call waits on this process's queue
// while the shared one cannot be reached (on_error allow): a list is then
// this process's calls, not an outage.
func (h *QueueApprover) LocalFallback() bool { return h.fallback }

// Approve puts the request on the queue and waits for a decision.
func (h *QueueApprover) Approve(ctx context.Context, req Request) (Approval, error) {
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
func (h *QueueApprover) view(req Request) pendingView {
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

// PendingCall is a call waiting for a person, as the approvals page shows
// it and a queue holds it: its arguments and texts with secrets redacted.
// Its fields: ID, Tool, Arguments (JSON), Pretty (indented, cut), Rule,
// Reason (why it asks), Level, Confirm (level 3: approved once, typing
// the tool's name), AlwaysRules (what "always" adds), Session, Principal,
// Since, Replica. Its JSON is what the approvals API lists.
type PendingCall = pendingView

// Pending returns the calls waiting for a decision on this process's
// queue and the shared one, oldest first; the error says the shared queue
// cannot be read (this process's calls are listed all the same).
func (h *QueueApprover) Pending(ctx context.Context) ([]PendingCall, error) {
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

// DecideError is why Decide refused a decision: Status is the HTTP status
// that says it (400 a decision that does not fit the call, 404 no such call
// waits, 409 answered already, 503 the shared queue is down).
type DecideError struct {
	Status  int
	Message string
}

func (e *DecideError) Error() string { return e.Message }

// Decide answers the waiting call id, in whichever queue it waits, on
// behalf of by (recorded as the approver in the audit log; "" : "http"):
// decision is once, session, always or deny; reason goes back to the
// model; confirm is the tool's name or "yes" for a level-3 call.
func (h *QueueApprover) Decide(ctx context.Context, id, decision, reason, confirm, by string) error {
	if code, msg := h.decide(ctx, id, decision, reason, confirm, by); code != http.StatusOK {
		return &DecideError{Status: code, Message: msg}
	}
	return nil
}

func (h *QueueApprover) decide(ctx context.Context, id, decision, reason, confirm, by string) (int, string) {
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
