package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/console"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// Keys of the test's principals, and who they are.
var users = map[string]console.User{
	"key-admin-0123456789":    {Name: "alice", Roles: []string{"admin"}, Auth: &tool.Credential{Kind: tool.CredentialAPIKey, Key: "aaaaaaaa"}},
	"key-approver-0123456789": {Name: "bob", Roles: []string{"approver"}, Auth: &tool.Credential{Kind: tool.CredentialAPIKey, Key: "bbbbbbbb"}},
	"key-reader-0123456789":   {Name: "carol", Roles: []string{"reader"}, Auth: &tool.Credential{Kind: tool.CredentialAPIKey, Key: "cccccccc"}},
	"key-agent-0123456789":    {Name: "ci-bot", Roles: []string{"developer"}, Auth: &tool.Credential{Kind: tool.CredentialAPIKey, Key: "dddddddd"}},
}

func authenticate(_ context.Context, token string) (console.User, error) {
	if u, ok := users[token]; ok {
		return u, nil
	}
	return console.User{}, errors.New("unknown API key")
}

// catalogue is the tools of the test server.
var catalogue = []tool.Definition{
	{Name: "read_file", Description: "Read a file.", Level: tool.LevelRead, Annotations: tool.Annotations{ReadOnly: true, Idempotent: true}},
	{Name: "write_file", Description: "Write a file.", Level: tool.LevelWrite},
	{Name: "execute_command", Description: "Run a shell command.\nIt runs in a sandbox.", Level: tool.LevelMedium, InputSchema: []byte(`{"type":"object","properties":{"command":{"type":"string"}}}`), Annotations: tool.Annotations{OpenWorld: true}},
	{Name: "fs__delete", Description: "Delete files.", Level: tool.LevelHigh, Annotations: tool.Annotations{Destructive: true}, Tags: []string{"mcp", "mcp:fs"}},
}

const testPolicy = `
mode: default
deny: ["Bash(rm -rf:*)"]
ask: [{rule: write_file, reason: "writes need a person"}]
allow: ["Bash(ls:*)"]
limits:
  tools: {"execute_*": {per_second: 2, burst: 5}}
roles:
  developer: {max_level: 2}
`

// env is a console over a real approval queue, audit log and policy.
type env struct {
	t     *testing.T
	srv   *httptest.Server
	page  *policy.QueueApprover
	log   string
	pol   *policy.Policy
	opts  console.Options
	con   *console.Console
	calls chan policy.Approval
}

type envOption func(*console.Options)

func withAuth(o *console.Options) { o.Authenticate = authenticate }

// apiToken is the approvals API token of the tests' consoles.
const apiToken = "the-approval-api-token-0123"

func withToken(o *console.Options) { o.Token = apiToken }

// approvalsOnly makes the console of approvals.http.
func approvalsOnly(o *console.Options) { o.ApprovalsOnly, o.Token = true, apiToken }

func newEnv(t *testing.T, tls bool, opts ...envOption) *env {
	t.Helper()
	pol, err := policy.Parse([]byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	red, err := policy.NewRedactor(policy.DefaultSecrets())
	if err != nil {
		t.Fatal(err)
	}
	q := policy.Watch(policy.NewMemoryQueue())
	page := policy.NewQueueApprover(policy.QueueOptions{Queue: q, Redactor: red})
	e := &env{t: t, page: page, log: filepath.Join(t.TempDir(), "audit.jsonl"), pol: pol, calls: make(chan policy.Approval, 16)}
	e.opts = console.Options{
		Approvals: page,
		Changes:   q.Subscribe,
		AuditLogs: func() []string { return []string{e.log} },
		Tools: func(call tool.Call) []tool.Definition {
			var out []tool.Definition
			for _, d := range catalogue {
				if call.Auth == nil || !pol.Hides(d, call) {
					out = append(out, d)
				}
			}
			return out
		},
		Policy:   pol,
		Activity: console.NewActivity(),
		Loopback: true,
	}
	for _, o := range opts {
		o(&e.opts)
	}
	h := http.NewServeMux()
	e.con = console.New(e.opts)
	if e.opts.ApprovalsOnly {
		h.Handle("/", e.con) // the listener of approvals.http is the console's alone
	} else {
		h.Handle("/ui/", e.con)
	}
	if tls {
		e.srv = httptest.NewTLSServer(h)
	} else {
		e.srv = httptest.NewServer(h)
	}
	t.Cleanup(e.srv.Close)
	return e
}

// ask puts a call on the queue, as the engine's approver does, and returns
// its id once it is listed. Its answer arrives on e.calls.
func (e *env) ask(call tool.Call, d policy.Decision) string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	e.t.Cleanup(cancel)
	before := map[string]bool{}
	list, _ := e.page.Pending(ctx)
	for _, p := range list {
		before[p.ID] = true
	}
	if d.Effect == "" {
		d.Effect = policy.Ask
	}
	go func() {
		a, _ := e.page.Approve(ctx, policy.Request{Call: call, Decision: d, AlwaysRules: []string{call.Name}})
		e.calls <- a
	}()
	for {
		list, _ := e.page.Pending(ctx)
		for _, p := range list {
			if !before[p.ID] {
				return p.ID
			}
		}
		if ctx.Err() != nil {
			e.t.Fatal("the call was never listed")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// client is a browser-like client: a cookie jar, no redirects followed.
func (e *env) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	c := *e.srv.Client()
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// get fetches a page; with a token, as a bearer.
func (e *env) get(c *http.Client, path, token string) (*http.Response, string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return e.do(c, req)
}

func (e *env) do(c *http.Client, req *http.Request) (*http.Response, string) {
	e.t.Helper()
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// post sends a form the way a browser of this origin does (Origin set).
func (e *env) post(c *http.Client, path string, form url.Values, header map[string]string) (*http.Response, string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.srv.URL)
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return e.do(c, req)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the token of the forms of a page.
func csrf(t *testing.T, body string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", body)
	}
	return m[1]
}

// signIn signs c in with a key through the form.
func (e *env) signIn(c *http.Client, key string) {
	e.t.Helper()
	_, body := e.get(c, "/ui/login", "")
	res, body := e.post(c, "/ui/login", url.Values{"csrf": {csrf(e.t, body)}, "key": {key}}, nil)
	if res.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("sign-in with %s: %d %s", key, res.StatusCode, body)
	}
}

// record is one audit record to write.
type record struct {
	ago                                                         time.Duration
	principal, tool, args, decision, rule, outcome, errType, by string
}

// writeLog writes records to the env's audit log, oldest first.
func (e *env) writeLog(recs ...record) {
	e.t.Helper()
	l, err := audit.Open(e.log, audit.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	defer l.Close()
	now := time.Now()
	for i, r := range recs {
		args := r.args
		if args == "" {
			args = "{}"
		}
		rec := audit.Record{Time: now.Add(-r.ago), CallID: "c" + string(rune('a'+i)), Session: "s1", Principal: r.principal, Tool: r.tool,
			Arguments: json.RawMessage(args), Decision: r.decision, Rule: r.rule, Mode: "default", Approver: r.by, Outcome: r.outcome, ErrorType: r.errType}
		if err := l.Append(context.Background(), rec); err != nil {
			e.t.Fatal(err)
		}
	}
}

// tamper changes the first occurrence of old in the log's line n (from 1).
func (e *env) tamper(n int, old, new string) {
	e.t.Helper()
	b, err := os.ReadFile(e.log)
	if err != nil {
		e.t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if !strings.Contains(lines[n-1], old) {
		e.t.Fatalf("line %d has no %q", n, old)
	}
	lines[n-1] = strings.Replace(lines[n-1], old, new, 1)
	if err := os.WriteFile(e.log, []byte(strings.Join(lines, "")), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// cut removes the log's line n (from 1).
func (e *env) cut(n int) {
	e.t.Helper()
	b, err := os.ReadFile(e.log)
	if err != nil {
		e.t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	lines = append(lines[:n-1], lines[n:]...)
	if err := os.WriteFile(e.log, []byte(strings.Join(lines, "")), 0o600); err != nil {
		e.t.Fatal(err)
	}
}
