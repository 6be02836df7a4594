package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/console"
	"github.com/toolgate/toolgate/tool"
)

// sampleLog is a day of calls by several principals.
var sampleLog = []record{
	{ago: 20 * time.Hour, principal: "alice", tool: "read_file", args: `{"path":"README.md"}`, decision: "allow", rule: "level:0", outcome: "ok"},
	{ago: 3 * time.Hour, principal: "ci-bot", tool: "execute_command", args: `{"command":"rm -rf /"}`, decision: "deny", rule: "deny:Bash(rm -rf:*)", outcome: "denied", errType: "permission_denied"},
	{ago: 50 * time.Minute, principal: "ci-bot", tool: "execute_command", args: `{"command":"ls -la"}`, decision: "allow", rule: "allow:Bash(ls:*)", outcome: "ok"},
	{ago: 40 * time.Minute, principal: "bob", tool: "write_file", args: `{"path":"notes.txt","content":"needle in a haystack"}`, decision: "allow", rule: "ask:write_file", outcome: "ok", by: "console:alice"},
	{ago: 30 * time.Minute, principal: "ci-bot", tool: "write_file", args: `{"path":"x"}`, decision: "deny", rule: "ask:write_file", outcome: "denied", errType: "approval_denied", by: "console:bob"},
	{ago: 20 * time.Minute, principal: "ci-bot", tool: "execute_command", args: `{"command":"ls"}`, decision: "allow", rule: "allow:Bash(ls:*)", outcome: "error", errType: "loop_detected"},
	{ago: 10 * time.Minute, principal: "ci-bot", tool: "execute_command", args: `{"command":"ls"}`, decision: "allow", rule: "allow:Bash(ls:*)", outcome: "error", errType: "loop_detected"},
}

var callIDs = regexp.MustCompile(`&#34;call_id&#34;: &#34;(c[a-z])&#34;`)

// The audit page filters by each field, and each record carries its whole
// JSON, newest first.
func TestAuditFilters(t *testing.T) {
	e := newEnv(t, false)
	e.writeLog(sampleLog...)
	c := e.client()
	at := func(d time.Duration) string { return time.Now().Add(-d).UTC().Format("2006-01-02T15:04:05") }
	for _, c2 := range []struct {
		query string
		want  []string // call ids, newest first
	}{
		{"", []string{"cg", "cf", "ce", "cd", "cc", "cb", "ca"}},
		{"principal=alice", []string{"ca"}},
		{"principal=ci-bot&tool=execute_command", []string{"cg", "cf", "cc", "cb"}},
		{"tool=write_file", []string{"ce", "cd"}},
		{"decision=deny", []string{"ce", "cb"}},
		{"error=loop_detected", []string{"cg", "cf"}},
		{"error=approval_denied&decision=deny", []string{"ce"}},
		{"q=NEEDLE", []string{"cd"}},
		{"q=console%3Abob", []string{"ce"}},
		{"q=rm+-rf", []string{"cb"}},
		{"from=" + at(time.Hour), []string{"cg", "cf", "ce", "cd", "cc"}},
		{"to=" + at(time.Hour), []string{"cb", "ca"}},
		{"from=" + at(45*time.Minute) + "&to=" + at(15*time.Minute), []string{"cf", "ce", "cd"}},
		{"principal=nobody", nil},
		{"limit=2", []string{"cg", "cf"}},
	} {
		res, body := e.get(c, "/ui/audit?"+c2.query, "")
		var got []string
		for _, m := range callIDs.FindAllStringSubmatch(body, -1) {
			got = append(got, m[1])
		}
		if res.StatusCode != http.StatusOK || strings.Join(got, ",") != strings.Join(c2.want, ",") {
			t.Errorf("%s: %d, got %v, want %v", c2.query, res.StatusCode, got, c2.want)
		}
	}
	if res, body := e.get(c, "/ui/audit?from=yesterday", ""); res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "not a date") {
		t.Errorf("bad time: %d", res.StatusCode)
	}
	_, body := e.get(c, "/ui/audit", "")
	if !strings.Contains(body, "verified up to record 7") {
		t.Errorf("chain state:\n%s", body)
	}
}

// A changed, removed or reordered record shows the chain as broken at its
// line, with what broke.
func TestAuditBrokenChain(t *testing.T) {
	for _, c2 := range []struct {
		name   string
		break_ func(e *env)
		line   string
	}{
		{"changed", func(e *env) { e.tamper(3, `"ls -la"`, `"ls -l"`) }, "line 3"},
		{"changed decision", func(e *env) { e.tamper(2, `"decision":"deny"`, `"decision":"allow"`) }, "line 2"},
		{"removed", func(e *env) { e.cut(4) }, "line 4"},
		{"not a record", func(e *env) { e.tamper(5, `{"time"`, `{"tim"`) }, "line 5"},
	} {
		t.Run(c2.name, func(t *testing.T) {
			e := newEnv(t, false)
			e.writeLog(sampleLog...)
			c2.break_(e)
			_, body := e.get(e.client(), "/ui/audit", "")
			if !strings.Contains(body, `id="chain-broken"`) || !strings.Contains(body, "broken at "+c2.line) || strings.Contains(body, "chain-ok") {
				t.Errorf("want broken at %s:\n%s", c2.line, body)
			}
		})
	}
}

// The tools page shows what the principal is shown; the what-if box
// decides without running anything.
func TestToolsAndWhatIf(t *testing.T) {
	e := newEnv(t, false, withAuth, func(o *console.Options) {
		o.Selection = func() []console.SelectionRow {
			return []console.SelectionRow{{Week: "2026-W49", Upstream: "fs", Calls: 40, First: 62.5, Top5: 90, NotFound: 2.5}}
		}
	})
	e.writeLog(sampleLog...)
	admin, agent := e.client(), e.client()
	e.signIn(admin, "key-admin-0123456789")
	_, page := e.get(admin, "/ui/tools", "")
	for _, want := range []string{"fs__delete", "destructive", "2/s (burst 5)", ">fs<", "built in",
		"How tool search ranked", "2026-W49", "62.5%", "90.0%", "2.5%"} {
		if !strings.Contains(page, want) {
			t.Errorf("tools page: no %q", want)
		}
	}
	// a reader whose role caps the level sees fewer tools
	users["key-dev-reader-0123456789"] = userWith("dave", "developer", "reader")
	defer delete(users, "key-dev-reader-0123456789")
	e.signIn(agent, "key-dev-reader-0123456789")
	_, page = e.get(agent, "/ui/tools", "")
	if strings.Contains(page, "fs__delete") || !strings.Contains(page, "execute_command") {
		t.Errorf("developer sees:\n%s", page)
	}

	_, page = e.get(admin, "/ui/policy", "")
	if !strings.Contains(page, "built-in protected paths, denied to every tool") {
		t.Errorf("default rules have no source")
	}
	for _, c2 := range []struct {
		who      *http.Client
		tool     string
		args     string
		want     []string
		wantCode int
	}{
		{admin, "execute_command", `{"command":"rm -rf /tmp/x"}`, []string{"✗ deny", "deny:Bash(rm -rf:*)"}, 200},
		{admin, "execute_command", `{"command":"ls -la"}`, []string{"✓ allow", "allow:Bash(ls:*)"}, 200},
		{admin, "execute_command", `{"command":"make"}`, []string{"? ask", "level:2"}, 200},
		{admin, "write_file", `{"path":"a.txt","content":"x"}`, []string{"? ask", "writes need a person"}, 200},
		{admin, "read_file", `{"path":"a.txt"}`, []string{"✓ allow"}, 200},
		{admin, "fs__delete", `{"path":"a"}`, []string{"with confirmation"}, 200},
		{admin, "nope", `{}`, []string{"no tool nope"}, 200},
		{admin, "read_file", `[1]`, []string{"one JSON object"}, 200},
		{admin, "read_file", `{"path":`, []string{"one JSON object"}, 200},
		{agent, "fs__delete", `{"path":"a"}`, []string{"no tool fs__delete among the tools you are shown"}, 200},
	} {
		_, p := e.get(c2.who, "/ui/policy", "")
		res, body := e.post(c2.who, "/ui/policy", url.Values{"csrf": {csrf(t, p)}, "tool": {c2.tool}, "arguments": {c2.args}}, nil)
		for _, w := range c2.want {
			if res.StatusCode != c2.wantCode || !strings.Contains(body, w) {
				t.Errorf("%s %s: %d, no %q", c2.tool, c2.args, res.StatusCode, w)
			}
		}
	}
	// counts of the last hour and day, by rule
	_, page = e.get(admin, "/ui/policy", "")
	row := regexp.MustCompile(`(?s)<code>Bash\(ls:\*\)</code></td><td>[^<]*</td><td>(\d+)</td><td>(\d+)</td>`).FindStringSubmatch(page)
	if row == nil || row[1] != "3" || row[2] != "3" {
		t.Errorf("counts of Bash(ls:*): %v", row)
	}
	row = regexp.MustCompile(`(?s)<code>Bash\(rm -rf:\*\)</code></td><td>[^<]*</td><td>(\d+)</td><td>(\d+)</td>`).FindStringSubmatch(page)
	if row == nil || row[1] != "0" || row[2] != "1" {
		t.Errorf("counts of Bash(rm -rf:*): %v", row)
	}
}

func userWith(name string, roles ...string) console.User {
	return console.User{Name: name, Roles: roles, Auth: &tool.Credential{Kind: tool.CredentialAPIKey, Key: "eeeeeeee", Roles: roles}}
}

// The activity page counts calls in flight and per tool, and what the
// guards stopped.
func TestActivity(t *testing.T) {
	e := newEnv(t, false)
	e.writeLog(sampleLog...)
	release, _ := e.opts.Activity.Acquire(context.Background(), tool.Call{Principal: "ci-bot", Session: "s9"}, catalogue[2])
	for range 3 {
		r, _ := e.opts.Activity.Acquire(context.Background(), tool.Call{}, catalogue[0])
		r(tool.ErrorResult(tool.Errorf(tool.Timeout, "slow")))
	}
	_, page := e.get(e.client(), "/ui/activity", "")
	for _, want := range []string{"<code>execute_command</code></td><td>ci-bot</td><td><code>s9</code>", "<code>read_file</code></td><td>3</td><td>3</td><td>3</td><td>timeout ×3</td>", "loop_detected</span></td><td>2</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("activity: no %q in\n%s", want, page)
		}
	}
	release(tool.Result{})
	_, page = e.get(e.client(), "/ui/activity", "")
	if strings.Contains(page, "<code>s9</code>") {
		t.Errorf("a finished call is still in flight")
	}
}

// TestAuditGroupsSteps: the records of a plan's steps (call ids
// "PLAN/STEP", a step's step "PLAN/STEP/SUB") are listed under the plan's
// record, oldest first; a step whose call is filtered out stands alone.
func TestAuditGroupsSteps(t *testing.T) {
	e := newEnv(t, false)
	l, err := audit.Open(e.log, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i, r := range []struct{ id, tool string }{
		{"run-1", "read_file"}, // an ordinary call before the plan
		{"plan-7/fetch", "http_request"},
		{"plan-7/build", "composite"},
		{"plan-7/build/compile", "execute_command"},
		{"plan-7", "plan"},             // the plan's own record comes last
		{"plan-9/orphan", "read_file"}, // its plan has no record (yet)
	} {
		rec := audit.Record{Time: now.Add(time.Duration(i-10) * time.Second), CallID: r.id, Tool: r.tool, Arguments: json.RawMessage(`{}`), Decision: "allow", Outcome: "ok"}
		if err := l.Append(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	top := regexp.MustCompile(`(?s)<ol class="records" id="records">(.*)</ol>`)
	ids := regexp.MustCompile(`&#34;call_id&#34;: &#34;([^&]+)&#34;`)
	_, body := e.get(e.client(), "/ui/audit", "")
	m := top.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no records list:\n%s", body)
	}
	var order []string
	for _, x := range ids.FindAllStringSubmatch(m[1], -1) {
		order = append(order, x[1])
	}
	// Newest first at the top level; the plan's steps right after it, oldest first.
	want := "plan-9/orphan plan-7 plan-7/fetch plan-7/build plan-7/build/compile run-1"
	if strings.Join(order, " ") != want {
		t.Errorf("records in the page: %v\nwant %s", order, want)
	}
	if strings.Count(m[1], `<ol class="steps"`) != 1 || !strings.Contains(body, "3 of 3 matching records") {
		t.Errorf("want one plan with its steps nested, 3 records at the top")
	}
	// Filtered to one tool, a step stands alone.
	_, body = e.get(e.client(), "/ui/audit?tool=execute_command", "")
	if strings.Contains(body, `<ol class="steps"`) || !strings.Contains(body, "plan-7/build/compile") {
		t.Errorf("a step whose plan is filtered out should stand alone")
	}
}

// TestSignInCookieIsSealed: after signing in, the browser holds the key
// only sealed, and a cookie holding a key in clear signs no one in.
func TestSignInCookieIsSealed(t *testing.T) {
	e := newEnv(t, false, withAuth)
	c := e.client()
	e.signIn(c, "key-admin-0123456789")
	u, _ := url.Parse(e.srv.URL + "/ui/")
	var value string
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "toolgate_key" {
			value = ck.Value
		}
	}
	if value == "" || strings.Contains(value, "0123456789") {
		t.Fatalf("sign-in cookie %q: want the key sealed", value)
	}
	if res, _ := e.get(c, "/ui/", ""); res.StatusCode != http.StatusOK {
		t.Fatalf("signed in: %d", res.StatusCode)
	}
	forged := e.client()
	forged.Jar.SetCookies(u, []*http.Cookie{{Name: "toolgate_key", Value: "key-admin-0123456789", Path: "/ui/"}})
	if res, body := e.get(forged, "/ui/", ""); res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "Sign in again") {
		t.Errorf("a cookie with the key in clear: %d", res.StatusCode)
	}
}
