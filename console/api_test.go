package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/console"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

type pendingCall struct {
	ID          string          `json:"id"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments"`
	Rule        string          `json:"rule"`
	Confirm     bool            `json:"confirm"`
	AlwaysRules []string        `json:"always_rules"`
	Replica     string          `json:"replica"`
}

// api is a client of a console's approvals API at base (…/api).
type api struct {
	e    *env
	base string
	cl   *http.Client
}

// pending waits (bounded) until the API lists n calls.
func (a api) pending(n int) []pendingCall {
	a.e.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		res, body := a.e.get(a.cl, a.base+"/pending", "")
		var list []pendingCall
		if res.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil {
			a.e.t.Fatalf("pending: %d %s", res.StatusCode, body)
		}
		if len(list) == n || time.Now().After(deadline) {
			if len(list) != n {
				a.e.t.Fatalf("%d calls listed, want %d: %s", len(list), n, body)
			}
			return list
		}
	}
}

// decide posts a decision with the X-Toolgate-Token token ("" : none);
// mut changes the request first.
func (a api) decide(token string, body any, mut func(*http.Request)) (int, string) {
	a.e.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, a.e.srv.URL+a.base+"/decide", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("X-Toolgate-Token", token)
	}
	if mut != nil {
		mut(req)
	}
	res, out := a.e.do(a.cl, req)
	return res.StatusCode, out
}

// The behaviours of the former page of approvals.http (policy/http.go),
// through the console's API: on the /mcp listener (/ui/api) and on the
// listener of approvals.http (/api, the paths it had, and /ui/api).
func TestAPIOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  envOption
		base string
	}{
		{"console", withToken, "/ui/api"},
		{"approvals.http", approvalsOnly, "/api"},
		{"approvals.http under /ui/", approvalsOnly, "/ui/api"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, false, tc.opt)
			a := api{e, tc.base, e.client()}
			level2 := policy.Decision{Rule: "level:2", Reason: "level 2 asks", Level: tool.LevelMedium}
			e.ask(tool.Call{Name: "github__create_issue", Args: []byte(`{"title":"<script>alert(1)</script>"}`), Session: "s"}, level2)
			list := a.pending(1)
			if list[0].Tool != "github__create_issue" || list[0].Rule != "level:2" || !strings.Contains(string(list[0].Arguments), "script") {
				t.Fatalf("pending: %+v", list)
			}
			id := list[0].ID

			// the page lists it, escaped, with the CSRF token in its forms and never the API token
			res, page := e.get(a.cl, "/ui/", "")
			if !strings.Contains(page, "github__create_issue") || strings.Contains(page, "<script>alert") || strings.Contains(page, apiToken) || csrf(t, page) == "" {
				t.Errorf("page:\n%s", page)
			}
			if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe-inline") || res.Header.Get("X-Frame-Options") != "DENY" {
				t.Errorf("headers: %v", res.Header)
			}

			// refused: no token, wrong token, another origin, a non-loopback Host (DNS rebinding)
			for name, r := range map[string]struct {
				token string
				mut   func(*http.Request)
			}{
				"no token":    {"", nil},
				"wrong token": {strings.Repeat("0", len(apiToken)), nil},
				"origin":      {apiToken, func(r *http.Request) { r.Header.Set("Origin", "https://evil.test") }},
				"host":        {apiToken, func(r *http.Request) { r.Host = "evil.test" }},
				"cross site":  {apiToken, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }},
			} {
				if code, _ := a.decide(r.token, map[string]string{"id": id, "decision": "once"}, r.mut); code != http.StatusForbidden {
					t.Errorf("%s: status %d", name, code)
				}
			}
			if code, _ := a.decide(apiToken, map[string]string{"id": id, "decision": "maybe"}, nil); code != http.StatusBadRequest {
				t.Errorf("bad decision: %d", code)
			}
			if code, _ := a.decide(apiToken, "not an object", nil); code != http.StatusBadRequest {
				t.Errorf("bad body: %d", code)
			}
			if res, _ := e.get(a.cl, a.base+"/decide", ""); res.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("GET decide: %d", res.StatusCode)
			}
			// the page's form decides
			res, body := e.post(a.cl, "/ui/decide", url.Values{"csrf": {csrf(t, page)}, "id": {id}, "decision": {"always"}}, nil)
			if res.StatusCode != http.StatusSeeOther {
				t.Errorf("form post: %d %s", res.StatusCode, body)
			}
			if got := <-e.calls; !got.Approved || got.Scope != policy.Always || got.Approver != "console:local" {
				t.Errorf("form decision: %+v", got)
			}
			if code, _ := a.decide(apiToken, map[string]string{"id": id, "decision": "once"}, nil); code != http.StatusConflict {
				t.Errorf("deciding twice: %d", code)
			}
			if code, msg := a.decide(apiToken, map[string]string{"id": "no-such-id", "decision": "once"}, nil); code != http.StatusNotFound || !strings.Contains(msg, `"error"`) {
				t.Errorf("deciding an unknown id: %d %s", code, msg)
			}

			// level 3 over the API: needs confirm, once only
			e.ask(tool.Call{Name: "delete_file", Args: []byte(`{"path":"x"}`), Session: "s"}, policy.Decision{Rule: "level:3", Level: tool.LevelHigh, Confirm: true})
			id = a.pending(1)[0].ID
			for _, body := range []map[string]string{{"id": id, "decision": "once"}, {"id": id, "decision": "session", "confirm": "yes"}, {"id": id, "decision": "once", "confirm": "nope"}} {
				if code, msg := a.decide(apiToken, body, nil); code != http.StatusBadRequest {
					t.Errorf("%v: %d %s", body, code, msg)
				}
			}
			if code, msg := a.decide(apiToken, map[string]string{"id": id, "decision": "once", "confirm": "delete_file"}, nil); code != http.StatusOK || strings.TrimSpace(msg) != `{"ok":true}` {
				t.Errorf("confirmed: %d %s", code, msg)
			}
			if got := <-e.calls; !got.Approved || got.Scope != policy.Once || got.Approver != "http" {
				t.Errorf("level 3: %+v", got)
			}

			// a denial with a reason, shown among the answers
			e.ask(tool.Call{Name: "execute_command", Args: []byte(`{"command":"make"}`), Session: "s"}, level2)
			id = a.pending(1)[0].ID
			a.decide(apiToken, map[string]string{"id": id, "decision": "deny", "reason": "run the tests first"}, nil)
			if got := <-e.calls; got.Approved || got.Reason != "run the tests first" {
				t.Errorf("denial: %+v", got)
			}
			if _, page := e.get(a.cl, "/ui/", ""); !strings.Contains(page, "run the tests first") {
				t.Errorf("the API's answer is not among the answers:\n%s", page)
			}

			// an expired wait is a denial and leaves the list
			ctx, cancel := context.WithCancel(context.Background())
			gone := make(chan policy.Approval, 1)
			go func() {
				got, _ := e.page.Approve(ctx, policy.Request{Call: tool.Call{Name: "github__create_issue", Args: []byte(`{}`)}, Decision: level2})
				gone <- got
			}()
			a.pending(1)
			cancel()
			if got := <-gone; got.Approved {
				t.Errorf("cancelled wait approved: %+v", got)
			}
			a.pending(0)
		})
	}
}

// A console without an authenticator serves this machine's clients only,
// the approvals API too.
func TestAPIRefusesRemoteClients(t *testing.T) {
	e := newEnv(t, false, approvalsOnly)
	for _, remote := range []string{"192.0.2.1:5555", "[2001:db8::1]:80"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/api/pending", nil)
		req.RemoteAddr, req.Host = remote, "127.0.0.1:7766"
		e.con.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden {
			t.Errorf("%s: %d", remote, rec.Code)
		}
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/api/pending", nil)
	req.RemoteAddr, req.Host = "[::1]:5555", "localhost:7766"
	e.con.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != "[]" {
		t.Errorf("loopback v6: %d %s", rec.Code, rec.Body)
	}
}

// Two consoles over one queue (two replicas sharing state.redis): a call
// asked on one is listed on both, named for its replica, answered through
// the API of the other, once.
func TestAPISharedQueue(t *testing.T) {
	q := policy.NewMemoryQueue()
	var apis []api
	var approvers []*policy.QueueApprover
	for _, replica := range []string{"a", "b"} {
		h := policy.NewQueueApprover(policy.QueueOptions{Queue: q, Replica: replica})
		srv := httptest.NewServer(console.New(console.Options{Approvals: h, Token: apiToken, ApprovalsOnly: true, Loopback: true}))
		t.Cleanup(srv.Close)
		e := &env{t: t, srv: srv}
		apis, approvers = append(apis, api{e, "/api", e.client()}), append(approvers, h)
	}
	for _, tc := range []struct {
		decision, reason string
		asker, answerOn  int
		want             policy.Approval
	}{
		{"once", "", 0, 1, policy.Approval{Approved: true, Approver: "http", Scope: policy.Once}},
		{"session", "", 1, 0, policy.Approval{Approved: true, Approver: "http", Scope: policy.Session}},
		{"deny", "run the tests first", 0, 1, policy.Approval{Approver: "http", Reason: "run the tests first"}},
		{"deny", "", 1, 1, policy.Approval{Approver: "http"}},
	} {
		got := make(chan policy.Approval, 1)
		go func() {
			a, err := approvers[tc.asker].Approve(context.Background(), policy.Request{Call: tool.Call{Name: "github__create_issue", Args: []byte(`{"title":"x"}`)}, Decision: policy.Decision{Effect: policy.Ask, Rule: "level:2"}})
			if err != nil {
				t.Error(err)
			}
			got <- a
		}()
		on, other := apis[tc.answerOn], apis[1-tc.answerOn]
		l := on.pending(1)
		if o := other.pending(1); o[0].ID != l[0].ID {
			t.Fatalf("the consoles list %v and %v", l, o)
		}
		if want := []string{"a", "b"}[tc.asker]; l[0].Replica != want {
			t.Errorf("listed for replica %q, want %q", l[0].Replica, want)
		}
		if code, msg := on.decide(apiToken, map[string]string{"id": l[0].ID, "decision": tc.decision, "reason": tc.reason}, nil); code != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.decision, code, msg)
		}
		if a := <-got; a != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.decision, a, tc.want)
		}
		for _, p := range apis {
			if code, _ := p.decide(apiToken, map[string]string{"id": l[0].ID, "decision": "once"}, nil); code != http.StatusConflict {
				t.Errorf("%s, answered again: %d, want 409", tc.decision, code)
			}
		}
		other.pending(0)
	}
	if code, _ := apis[0].decide("not-the-token-at-all", map[string]string{"id": "x", "decision": "once"}, nil); code != http.StatusForbidden {
		t.Errorf("a wrong token: %d", code)
	}
}

// With an authenticator the API takes the bearer token /mcp takes: a
// reader lists, an approver answers (recorded under its name); neither the
// API token nor the sign-in cookie alone decides.
func TestAPIWithAuthentication(t *testing.T) {
	e := newEnv(t, false, withAuth, withToken)
	a := api{e, "/ui/api", e.client()}
	id := e.ask(tool.Call{Name: "write_file", Args: []byte(`{"path":"a"}`)}, policy.Decision{Rule: "ask:write_file"})
	bearer := func(key string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+key) }
	}
	if res, body := e.get(a.cl, "/ui/api/pending", ""); res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "Authorization") {
		t.Errorf("no credential: %d %s", res.StatusCode, body)
	}
	if res, _ := e.get(a.cl, "/ui/api/pending", "not-a-key"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong key: %d", res.StatusCode)
	}
	if res, _ := e.get(a.cl, "/ui/api/pending", "key-agent-0123456789"); res.StatusCode != http.StatusForbidden {
		t.Errorf("an agent's key lists: %d", res.StatusCode)
	}
	res, body := e.get(a.cl, "/ui/api/pending", "key-reader-0123456789")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, id) {
		t.Errorf("a reader lists: %d %s", res.StatusCode, body)
	}
	if code, _ := a.decide("", map[string]string{"id": id, "decision": "once"}, bearer("key-reader-0123456789")); code != http.StatusForbidden {
		t.Errorf("a reader answered: %d", code)
	}
	if code, _ := a.decide(apiToken, map[string]string{"id": id, "decision": "once"}, nil); code != http.StatusUnauthorized {
		t.Errorf("the API token answered beside an authenticator: %d", code)
	}
	signedIn := e.client()
	e.signIn(signedIn, "key-admin-0123456789")
	if code, _ := (api{e, "/ui/api", signedIn}).decide("", map[string]string{"id": id, "decision": "once"}, nil); code != http.StatusUnauthorized {
		t.Errorf("a sign-in cookie answered through the API: %d", code)
	}
	if code, msg := a.decide("", map[string]string{"id": id, "decision": "session"}, bearer("key-approver-0123456789")); code != http.StatusOK {
		t.Fatalf("an approver: %d %s", code, msg)
	}
	if got := <-e.calls; !got.Approved || got.Scope != policy.Session || got.Approver != "console:bob" {
		t.Errorf("answer %+v", got)
	}
}

// The console of approvals.http serves the approvals page and its API
// alone: / leads to it, the other pages are not there and not linked.
func TestApprovalsOnly(t *testing.T) {
	e := newEnv(t, false, approvalsOnly)
	c := e.client()
	if res, _ := e.get(c, "/", ""); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/" {
		t.Errorf("/: %d %v", res.StatusCode, res.Header)
	}
	res, body := e.get(c, "/ui/", "")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "Nothing is waiting") || strings.Contains(body, "/ui/audit") {
		t.Errorf("/ui/: %d\n%s", res.StatusCode, body)
	}
	for _, p := range []string{"/ui/audit", "/ui/tools", "/ui/policy", "/ui/activity", "/decide", "/mcp"} {
		if res, _ := e.get(c, p, ""); res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d", p, res.StatusCode)
		}
	}
	if res, _ := e.get(c, "/ui/static/console.js", ""); res.StatusCode != http.StatusOK {
		t.Errorf("the script: %d", res.StatusCode)
	}
	// the full console links every page
	full := newEnv(t, false)
	if _, body := full.get(full.client(), "/ui/", ""); !strings.Contains(body, "/ui/audit") {
		t.Errorf("the console does not link its audit page:\n%s", body)
	}
	if res, _ := full.get(full.client(), "/api/pending", ""); res.StatusCode != http.StatusNotFound {
		t.Errorf("/api/pending outside approvals.http: %d", res.StatusCode)
	}
}
