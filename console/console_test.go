package console_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// Every page answers with the security headers, and renders for the local
// admin of a console without authentication.
func TestPagesAndHeaders(t *testing.T) {
	e := newEnv(t, false)
	e.writeLog(record{principal: "alice", tool: "read_file", decision: "allow", rule: "level:0", outcome: "ok"})
	c := e.client()
	for _, c2 := range []struct{ path, want string }{
		{"/ui/", "Nothing is waiting"},
		{"/ui/queue", "0</span> waiting"},
		{"/ui/audit", "verified up to record 1"},
		{"/ui/tools", "fs__delete"},
		{"/ui/policy", "Bash(rm -rf:*)"},
		{"/ui/activity", "Calls in flight"},
		{"/ui/static/console.css", ":focus-visible"},
		{"/ui/static/console.js", "EventSource"},
	} {
		res, body := e.get(c, c2.path, "")
		if res.StatusCode != http.StatusOK || !strings.Contains(body, c2.want) {
			t.Errorf("%s: %d, want %q in\n%.2000s", c2.path, res.StatusCode, c2.want, body)
		}
		h := res.Header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: CSP %q", c2.path, csp)
		}
		if h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", c2.path, h)
		}
	}
	res, body := e.get(c, "/ui/", "")
	if !strings.Contains(body, "local") || !strings.Contains(body, "may answer") || strings.Contains(body, "<script>") || strings.Contains(body, "style=") {
		t.Errorf("approvals page: %d\n%s", res.StatusCode, body)
	}
	weight := len(body)
	for _, asset := range []string{"/ui/static/console.css", "/ui/static/console.js"} {
		_, b := e.get(c, asset, "")
		weight += len(b)
	}
	if weight > 100<<10 {
		t.Errorf("the first page weighs %d bytes with its stylesheet and script", weight)
	}
}

// Without authentication the console is this machine's: a Host or Origin
// naming anything else is refused, as /mcp refuses it.
func TestLoopbackGuard(t *testing.T) {
	e := newEnv(t, false)
	c := e.client()
	for _, c2 := range []struct {
		host, origin, site string
		ok                 bool
	}{
		{"", "", "", true},
		{"localhost:8765", "", "", true},
		{"[::1]:8765", "", "", true},
		{"127.0.0.1", "", "", true},
		{"evil.example", "", "", false},
		{"127.0.0.1.nip.io:8765", "", "", false},
		{"localhost.evil.example", "", "", false},
		{"10.0.0.1:8765", "", "", false},
		{"", "http://evil.example", "", false},
		{"", "http://localhost:1", "", false},
		{"", "file://", "", false},
		{"", "", "cross-site", false},
		{"", "", "same-site", false},
		{"", "", "same-origin", true},
	} {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/ui/queue", nil)
		if c2.host != "" {
			req.Host = c2.host
		}
		if c2.origin != "" {
			req.Header.Set("Origin", c2.origin)
		}
		if c2.site != "" {
			req.Header.Set("Sec-Fetch-Site", c2.site)
			req.Header.Set("Sec-Fetch-Mode", "cors")
		}
		res, body := e.do(c, req)
		if got := res.StatusCode == http.StatusOK; got != c2.ok {
			t.Errorf("host %q origin %q site %q: %d %s", c2.host, c2.origin, c2.site, res.StatusCode, body)
		}
	}
}

// A POST needs the CSRF token of its cookie and this origin; a missing,
// wrong or foreign one is refused and the call stays waiting.
func TestPostsNeedCSRFAndSameOrigin(t *testing.T) {
	e := newEnv(t, false)
	id := e.ask(tool.Call{Name: "write_file", Args: []byte(`{"path":"a.txt"}`), Principal: "agent"}, policy.Decision{})
	c := e.client()
	_, page := e.get(c, "/ui/", "")
	token := csrf(t, page)
	other := e.client()
	_, otherPage := e.get(other, "/ui/", "")
	for _, c2 := range []struct {
		name   string
		client *http.Client
		csrf   string
		header map[string]string
	}{
		{"no token", c, "", nil},
		{"wrong token", c, strings.Repeat("A", len(token)), nil},
		{"another browser's token", c, csrf(t, otherPage), nil},
		{"no cookie", e.srv.Client(), token, nil},
		{"cross-origin", c, token, map[string]string{"Origin": "http://evil.example"}},
		{"opaque origin", c, token, map[string]string{"Origin": "null"}},
		{"cross-site fetch", c, token, map[string]string{"Origin": "", "Sec-Fetch-Site": "cross-site"}},
		{"same-site fetch", c, token, map[string]string{"Origin": "", "Sec-Fetch-Site": "same-site"}},
		{"rebinding host", c, token, map[string]string{"Host": "evil.example"}},
	} {
		form := url.Values{"id": {id}, "decision": {"once"}}
		if c2.csrf != "" {
			form.Set("csrf", c2.csrf)
		}
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/ui/decide", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", e.srv.URL)
		for k, v := range c2.header {
			switch {
			case k == "Host":
				req.Host = v
			case v == "":
				req.Header.Del(k)
			default:
				req.Header.Set(k, v)
			}
		}
		res, body := e.do(c2.client, req)
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d %s", c2.name, res.StatusCode, body)
		}
	}
	if list, _ := e.page.Pending(t.Context()); len(list) != 1 {
		t.Fatalf("the call was answered by a refused POST: %v", list)
	}
	res, body := e.post(c, "/ui/decide", url.Values{"csrf": {token}, "id": {id}, "decision": {"once"}}, nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("a good POST: %d %s", res.StatusCode, body)
	}
	if a := <-e.calls; !a.Approved || a.Approver != "console:local" || a.Scope != policy.Once {
		t.Errorf("approval %+v", a)
	}
}

// Signed in with a key: readers read, approvers answer, others are kept
// out; the answer names the approver; the cookie is HttpOnly, SameSite
// Strict, and Secure over TLS.
func TestRoles(t *testing.T) {
	for _, tls := range []bool{false, true} {
		e := newEnv(t, tls, withAuth)
		id := e.ask(tool.Call{Name: "execute_command", Args: []byte(`{"command":"make deploy"}`), Principal: "ci-bot", Session: "s-42"}, policy.Decision{Rule: "level:2", Reason: "level-2 tools ask"})

		anon := e.client()
		if res, body := e.get(anon, "/ui/", ""); res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `name="key"`) {
			t.Errorf("no credential: %d %s", res.StatusCode, body)
		}
		if res, _ := e.get(anon, "/ui/events", ""); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("events without credential: %d", res.StatusCode)
		}
		if res, body := e.get(anon, "/ui/", "wrong-key-0123456789"); res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "refused") {
			t.Errorf("bad bearer: %d %s", res.StatusCode, body)
		}
		if res, body := e.get(anon, "/ui/audit", "key-agent-0123456789"); res.StatusCode != http.StatusForbidden {
			t.Errorf("a principal without a console role: %d %s", res.StatusCode, body)
		}
		_, login := e.get(anon, "/ui/login", "")
		if res, body := e.post(anon, "/ui/login", url.Values{"csrf": {csrf(t, login)}, "key": {"key-agent-0123456789"}}, nil); res.StatusCode != http.StatusForbidden || len(res.Cookies()) > 0 && res.Cookies()[0].Name == "toolgate_key" && res.Cookies()[0].MaxAge >= 0 {
			t.Errorf("sign-in without a console role: %d %v %s", res.StatusCode, res.Cookies(), body)
		}
		if res, _ := e.post(anon, "/ui/login", url.Values{"key": {"key-admin-0123456789"}}, nil); res.StatusCode != http.StatusForbidden {
			t.Errorf("sign-in without CSRF: %d", res.StatusCode)
		}

		reader := e.client()
		_, login = e.get(reader, "/ui/login", "")
		res, _ := e.post(reader, "/ui/login", url.Values{"csrf": {csrf(t, login)}, "key": {"key-reader-0123456789"}}, nil)
		var key *http.Cookie
		for _, ck := range res.Cookies() {
			if ck.Name == "toolgate_key" {
				key = ck
			}
		}
		if res.StatusCode != http.StatusSeeOther || key == nil || !key.HttpOnly || key.SameSite != http.SameSiteStrictMode || key.Secure != tls || key.Path != "/ui/" {
			t.Fatalf("tls %v: sign-in: %d cookie %+v", tls, res.StatusCode, key)
		}
		res, page := e.get(reader, "/ui/", "")
		if res.StatusCode != http.StatusOK || !strings.Contains(page, "make deploy") || strings.Contains(page, `name="decision"`) || !strings.Contains(page, "read only") {
			t.Errorf("reader's page: %d\n%s", res.StatusCode, page)
		}
		res, body := e.post(reader, "/ui/decide", url.Values{"csrf": {csrf(t, page)}, "id": {id}, "decision": {"once"}}, nil)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(body, "not answer") {
			t.Errorf("reader's POST: %d %s", res.StatusCode, body)
		}
		if list, _ := e.page.Pending(t.Context()); len(list) != 1 {
			t.Fatal("a reader answered")
		}

		approver := e.client()
		e.signIn(approver, "key-approver-0123456789")
		_, page = e.get(approver, "/ui/", "")
		if !strings.Contains(page, `value="session"`) || !strings.Contains(page, "ci-bot") || !strings.Contains(page, "s-42") || !strings.Contains(page, "level-2 tools ask") {
			t.Errorf("approver's page:\n%s", page)
		}
		res, body = e.post(approver, "/ui/decide", url.Values{"csrf": {csrf(t, page)}, "id": {id}, "decision": {"deny"}, "reason": {"deploys wait for Monday"}}, nil)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("approver's POST: %d %s", res.StatusCode, body)
		}
		a := <-e.calls
		if a.Approved || a.Approver != "console:bob" || a.Reason != "deploys wait for Monday" {
			t.Errorf("answer %+v", a)
		}
		_, page = e.get(approver, "/ui/", "")
		if !strings.Contains(page, "denied") || !strings.Contains(page, "<strong>bob</strong>") || !strings.Contains(page, "deploys wait for Monday") {
			t.Errorf("the answered call does not say who answered:\n%s", page)
		}
		res, body = e.post(approver, "/ui/decide", url.Values{"csrf": {csrf(t, page)}, "id": {id}, "decision": {"once"}}, nil)
		if res.StatusCode != http.StatusNotFound && res.StatusCode != http.StatusConflict {
			t.Errorf("a second answer: %d %s", res.StatusCode, body)
		}

		// a bearer header works as on /mcp; signing out clears the cookie
		if res, _ := e.get(e.client(), "/ui/tools", "key-admin-0123456789"); res.StatusCode != http.StatusOK {
			t.Errorf("bearer: %d", res.StatusCode)
		}
		res, _ = e.post(approver, "/ui/logout", url.Values{"csrf": {csrf(t, page)}}, nil)
		if res.StatusCode != http.StatusSeeOther {
			t.Errorf("sign-out: %d", res.StatusCode)
		}
		if res, _ := e.get(approver, "/ui/", ""); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("after sign-out: %d", res.StatusCode)
		}
	}
}

// A level-3 call is approved once, with the tool's name typed; what the
// model would see as secrets is redacted; long values are folded.
func TestQueueShowsCalls(t *testing.T) {
	e := newEnv(t, false)
	long := strings.Repeat("line of a long file\n", 40)
	id := e.ask(tool.Call{Name: "fs__delete", Args: []byte(`{"path":"/srv/data","token":"ghp_0123456789abcdefghijABCDEFGHIJ012345","content":` + jsonString(long) + `,"opts":{"recursive":true}}`)},
		policy.Decision{Rule: "tool:fs__delete", Reason: "fs__delete asks for approval: rm -r of a computed path", Confirm: true, Level: tool.LevelHigh})
	c := e.client()
	_, page := e.get(c, "/ui/", "")
	for _, want := range []string{"[REDACTED:github_token]", "<details><summary>line of a long file", "needs confirmation", "rm -r of a computed path", `name="confirm"`, "&#34;recursive&#34;: true"} {
		if !strings.Contains(page, want) {
			t.Errorf("no %q in\n%s", want, page)
		}
	}
	for _, bad := range []string{"ghp_0123456789", `value="session"`, `value="always"`} {
		if strings.Contains(page, bad) {
			t.Errorf("%q in the page", bad)
		}
	}
	token := csrf(t, page)
	for _, confirm := range []string{"", "no", "fs__delet"} {
		res, _ := e.post(c, "/ui/decide", url.Values{"csrf": {token}, "id": {id}, "decision": {"once"}, "confirm": {confirm}}, nil)
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("confirm %q: %d", confirm, res.StatusCode)
		}
	}
	res, _ := e.post(c, "/ui/decide", url.Values{"csrf": {token}, "id": {id}, "decision": {"once"}, "confirm": {"fs__delete"}}, nil)
	if a := <-e.calls; res.StatusCode != http.StatusSeeOther || !a.Approved {
		t.Errorf("confirmed: %d %+v", res.StatusCode, a)
	}
}

func jsonString(s string) string {
	return `"` + strings.NewReplacer("\n", `\n`, `"`, `\"`).Replace(s) + `"`
}

// The event stream announces a call that starts waiting.
func TestEventsAnnounceCalls(t *testing.T) {
	e := newEnv(t, false)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, e.srv.URL+"/ui/events", nil)
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 4096)
		var all string
		for {
			n, err := res.Body.Read(buf)
			all += string(buf[:n])
			if strings.Contains(all, "event: queue\ndata: 1") || err != nil {
				got <- all
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond) // let the stream subscribe
	e.ask(tool.Call{Name: "write_file", Args: []byte(`{}`)}, policy.Decision{})
	select {
	case s := <-got:
		if !strings.HasPrefix(s, "retry: 2000\n\nevent: queue\ndata: 0\n\n") || !strings.Contains(s, "event: queue\ndata: 1") {
			t.Errorf("stream: %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
}

// Close ends the open event streams, so that a server shutting down does
// not wait for them.
func TestCloseEndsStreams(t *testing.T) {
	e := newEnv(t, false)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, e.srv.URL+"/ui/events", nil)
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	ended := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(res.Body)
		ended <- err
	}()
	e.con.Close()
	e.con.Close() // twice is fine
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("the stream ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end")
	}
}
