package console

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/toolgate/toolgate/policy"
)

// The approvals API, for chat bots and scripts, beside the approvals page
// (and, on the listener of approvals.http, also at the paths of the page
// that listener served before: /api/pending and /api/decide):
//
//	GET  /ui/api/pending  [{id, tool, arguments, pretty, rule, reason, level, confirm, always_rules, session, principal, since, replica}]
//	POST /ui/api/decide   {"id", "decision": "once"|"session"|"always"|"deny", "reason", "confirm"} → {"ok": true}
//
// An error is {"error": "…"} with the status that says it: 400 a decision
// that does not fit the call, 401 no credential, 403 a wrong one or no
// right to answer, 404 no call waits under the id, 409 answered already,
// 503 the shared queue cannot be reached.
//
// Who may call it: with an authenticator (the policy's auth block), a
// bearer token in the Authorization header, checked as /mcp checks it,
// whose roles may read the console (to list) and answer (to decide); the
// decision is recorded as "console:<principal>". Without one, anyone this
// console is served to may list, and a decision must carry the API token
// (Options.Token) in X-Toolgate-Token, so that no other page open in a
// browser can post one; it is recorded as "http". A sign-in cookie alone
// never decides through the API.

// apiPending lists the waiting calls.
func (c *Console) apiPending(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.apiUser(w, r, false); !ok {
		return
	}
	if c.o.Approvals == nil {
		apiError(w, http.StatusNotFound, "no approval queue is configured: set console.approvals or approvals.http in the policy")
		return
	}
	list, err := c.o.Approvals.Pending(r.Context())
	if err != nil && !c.o.Approvals.LocalFallback() { // under on_error allow, this process's calls
		apiError(w, http.StatusServiceUnavailable, "the shared approval queue cannot be reached: retry in a moment")
		return
	}
	if list == nil {
		list = []policy.PendingCall{}
	}
	apiJSON(w, http.StatusOK, list)
}

// apiDecide answers a waiting call.
func (c *Console) apiDecide(w http.ResponseWriter, r *http.Request) {
	u, ok := c.apiUser(w, r, true)
	if !ok {
		return
	}
	if c.o.Approvals == nil {
		apiError(w, http.StatusNotFound, "no approval queue is configured: set console.approvals or approvals.http in the policy")
		return
	}
	var body struct{ ID, Decision, Reason, Confirm string }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		apiError(w, http.StatusBadRequest, "the body is not a JSON object {id, decision, reason, confirm}")
		return
	}
	by := "" // the approver "http", as the page of approvals.http recorded it
	if u.Auth != nil {
		by = "console:" + u.Name
	}
	if err := c.answer(r, body.ID, body.Decision, body.Reason, body.Confirm, by, u.Name); err != nil {
		status := http.StatusInternalServerError
		var de *policy.DecideError
		if errors.As(err, &de) {
			status = de.Status
		}
		apiError(w, status, err.Error())
		return
	}
	apiJSON(w, http.StatusOK, map[string]any{"ok": true})
}

// apiUser says who calls the API, or answers 401/403 and returns false:
// decide asks for the right to answer.
func (c *Console) apiUser(w http.ResponseWriter, r *http.Request, decide bool) (User, bool) {
	if c.o.Authenticate == nil {
		if decide && !c.tokenOK(r.Header.Get("X-Toolgate-Token")) {
			apiError(w, http.StatusForbidden, "missing or wrong X-Toolgate-Token (the approval API token: approvals.token_env, or the one printed at start-up)")
			return User{}, false
		}
		if decide {
			return User{Name: "http", Roles: local.Roles}, true
		}
		return local, true
	}
	token := bearer(r)
	if token == "" {
		w.Header().Set("WWW-Authenticate", "Bearer")
		apiError(w, http.StatusUnauthorized, "send a bearer token (an API key or a JWT) in the Authorization header, as to /mcp")
		return User{}, false
	}
	u, err := c.o.Authenticate(r.Context(), token)
	if err != nil || u.Name == "" {
		msg := "the bearer token was refused"
		if err != nil {
			msg += ": " + err.Error()
		}
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		apiError(w, http.StatusUnauthorized, msg)
		return User{}, false
	}
	switch {
	case !c.access().MayRead(u.Roles):
		apiError(w, http.StatusForbidden, u.Name+" has no role that may read the console (the policy's console.readers)")
		return User{}, false
	case decide && !c.mayAnswer(u):
		apiError(w, http.StatusForbidden, u.Name+" may not answer approvals (the policy's console.approvers)")
		return User{}, false
	}
	return u, true
}

func (c *Console) tokenOK(t string) bool {
	return c.o.Token != "" && t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(c.o.Token)) == 1
}

func apiJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func apiError(w http.ResponseWriter, status int, msg string) {
	apiJSON(w, status, map[string]any{"error": msg})
}
