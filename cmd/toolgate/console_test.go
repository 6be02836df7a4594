package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/browsertest"
)

// The keys of TestConsoleApprovesOverMCP: the agent's, an approver's, a
// reader's.
const (
	consoleAgentKey    = "tg_agent_0123456789abcdef0123456789"
	consoleApproverKey = "tg_dana_0123456789abcdef0123456789"
	consoleReaderKey   = "tg_rory_0123456789abcdef0123456789"
)

// TestConsoleApprovesOverMCP runs `toolgate serve --http` with API keys
// and console.approvals, a go-sdk MCP client as the agent, and headless
// Chromium as the person: a call that asks shows in the open queue, is
// approved with a click and completes with the tool's result; a denial's
// message reaches the model; the audit log names console:<principal>; a
// reader sees no buttons and its POST is refused, as are POSTs without the
// CSRF token or from another origin.
func TestConsoleApprovesOverMCP(t *testing.T) {
	root, auditLog := serveWorkspace(t)
	pol := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(pol, []byte(fmt.Sprintf(`
auth:
  resource: http://127.0.0.1/mcp
  api_keys:
    - {sha256: %s, principal: ci-bot}
    - {sha256: %s, principal: dana, roles: [approver]}
    - {sha256: %s, principal: rory, roles: [reader]}
roles: {approver: {}, reader: {}}
ask: [write_file]
console: {approvals: true}
`, sha256Hex(consoleAgentKey), sha256Hex(consoleApproverKey), sha256Hex(consoleReaderKey))), 0o644); err != nil {
		t.Fatal(err)
	}
	u := startHTTP(t, "serve", "--root", root, "--policy", pol, "--audit", auditLog, "--http", "127.0.0.1:0")
	base := strings.TrimSuffix(u, "/mcp")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hc := &http.Client{Transport: headerRT{http.DefaultTransport, "Bearer " + consoleAgentKey}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "console-test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(ctx context.Context, path string) <-chan *mcp.CallToolResult {
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": path, "content": "approved by a person\n"}})
			if err != nil && ctx.Err() == nil {
				t.Error(err)
			}
			done <- res
		}()
		return done
	}
	result := func(done <-chan *mcp.CallToolResult) *mcp.CallToolResult {
		select {
		case res := <-done:
			if res == nil {
				t.Fatal("the call failed")
			}
			return res
		case <-time.After(30 * time.Second):
			t.Fatal("the MCP call did not complete")
		}
		return nil
	}

	browser := browsertest.New(t)
	err = chromedp.Do(browsertest.Within(t, browser),
		chromedp.Navigate(base+"/ui/"),
		chromedp.SendKeys(`#key`, consoleApproverKey),
		chromedp.Click(`#signin`),
		chromedp.WaitVisible(`body[data-live="on"]`))
	if err != nil {
		t.Fatalf("signing in: %v", err)
	}

	// approved with a click: the call completes with the tool's result
	start := time.Now()
	done := call(ctx, "note.txt")
	if err := chromedp.Do(browsertest.Within(t, browser), chromedp.WaitVisible(`#pending li[data-id]`)); err != nil {
		browsertest.Shot(t, browser, "process-queue")
		t.Fatalf("the call did not show in the queue: %v", err)
	}
	t.Logf("the call showed in the open queue %v after it was made", time.Since(start).Round(time.Millisecond))
	item, _ := chromedp.Run(browsertest.Within(t, browser), chromedp.Text(`#pending li[data-id]`))
	for _, want := range []string{"write_file", "ci-bot", "note.txt", "ask:write_file"} {
		if !strings.Contains(item, want) {
			t.Errorf("the queue item lacks %q: %s", want, item)
		}
	}
	browsertest.Shot(t, browser, "process-queue")
	if err := chromedp.Do(browsertest.Within(t, browser), chromedp.Click(`#pending li[data-id] button[value="once"]`)); err != nil {
		t.Fatal(err)
	}
	browsertest.WaitTrue(t, browser, `document.querySelectorAll("#recent li").length === 1`) // the answer's page loaded
	if res := result(done); res.IsError {
		t.Fatalf("the approved call: %s", text(res))
	}
	if b, err := os.ReadFile(filepath.Join(root, "note.txt")); err != nil || string(b) != "approved by a person\n" {
		t.Fatalf("the approved call did not write: %q %v", b, err)
	}

	// denied with a message: it reaches the model
	done = call(ctx, "other.txt")
	err = chromedp.Do(browsertest.Within(t, browser),
		chromedp.WaitVisible(`#pending li[data-id] input[name="reason"]`),
		chromedp.SendKeys(`#pending li[data-id] input[name="reason"]`, "write to drafts/ instead"),
		chromedp.Click(`#pending li[data-id] button[value="deny"]`))
	if err != nil {
		browsertest.Shot(t, browser, "process-deny")
		t.Fatalf("denying: %v", err)
	}
	if res := result(done); !res.IsError || !strings.Contains(text(res), "write to drafts/ instead") {
		t.Fatalf("the denied call: %s", text(res))
	}
	if _, err := os.Stat(filepath.Join(root, "other.txt")); !os.IsNotExist(err) {
		t.Fatal("the denied call wrote")
	}
	browsertest.WaitTrue(t, browser, `document.querySelectorAll("#recent li").length === 2`)
	browsertest.Shot(t, browser, "process-answered")

	var got []string
	for _, r := range readAudit(t, auditLog) {
		if r.Tool == "write_file" {
			got = append(got, r.Principal+"/"+r.Decision+"/"+r.Approver+"/"+r.Outcome)
		}
	}
	if want := []string{"ci-bot/allow/console:dana/ok", "ci-bot/deny/console:dana/denied"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("audit: %v, want %v", got, want)
	}

	// the reader, CSRF and origins, against the process itself
	third, stop := context.WithCancel(ctx)
	defer stop()
	done = call(third, "third.txt")
	id := waitPending(t, base, consoleApproverKey)
	page := consoleGet(t, base+"/ui/", consoleReaderKey)
	if strings.Contains(page.body, `name="decision"`) || !strings.Contains(page.body, "third.txt") {
		t.Errorf("the reader's page:\n%s", page.body)
	}
	for _, c := range []struct {
		name, key, csrf, origin string
	}{
		{"reader", consoleReaderKey, page.csrf, base},
		{"no CSRF token", consoleApproverKey, "", base},
		{"another origin", consoleApproverKey, "use-the-cookie", "http://evil.example"},
	} {
		p := consoleGet(t, base+"/ui/", c.key)
		token := c.csrf
		if token == "use-the-cookie" {
			token = p.csrf
		}
		form := url.Values{"id": {id}, "decision": {"once"}}
		if token != "" {
			form.Set("csrf", token)
		}
		req, _ := http.NewRequest(http.MethodPost, base+"/ui/decide", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+c.key)
		req.Header.Set("Origin", c.origin)
		req.AddCookie(&http.Cookie{Name: "toolgate_csrf", Value: p.cookie})
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("%s: POST answered %d", c.name, res.StatusCode)
		}
	}
	select {
	case res := <-done:
		t.Fatalf("a refused POST answered the call: %v", res)
	default:
	}

	// the approvals API beside the page, on the /mcp listener: a reader
	// lists, the approver answers with its bearer key
	api := func(method, path, key, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := api(http.MethodGet, "/ui/api/pending", consoleReaderKey, ""); code != http.StatusOK || !strings.Contains(body, `"id":"`+id+`"`) || !strings.Contains(body, "third.txt") {
		t.Errorf("the API's list: %d %s", code, body)
	}
	if code, body := api(http.MethodPost, "/ui/api/decide", consoleApproverKey, fmt.Sprintf(`{"id":%q,"decision":"deny","reason":"not a third"}`, id)); code != http.StatusOK {
		t.Fatalf("the API's answer: %d %s", code, body)
	}
	if res := result(done); !res.IsError || !strings.Contains(text(res), "not a third") {
		t.Errorf("the call denied through the API: %s", text(res))
	}
}

type consolePage struct{ body, csrf, cookie string }

var consoleCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// consoleGet fetches a console page with a bearer key ("" none).
func consoleGet(t *testing.T, u, key string) consolePage {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	p := consolePage{body: string(b)}
	if m := consoleCSRF.FindStringSubmatch(p.body); m != nil {
		p.csrf = m[1]
	}
	for _, ck := range res.Cookies() {
		if ck.Name == "toolgate_csrf" {
			p.cookie = ck.Value
		}
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, res.StatusCode, b)
	}
	return p
}

var pendingID = regexp.MustCompile(`data-id="([^"]+)" id="call-`)

// waitPending waits (bounded) for a call in the console's queue and
// returns its id.
func waitPending(t *testing.T, base, key string) string {
	t.Helper()
	for range 200 {
		if m := pendingID.FindStringSubmatch(consoleGet(t, base+"/ui/queue", key).body); m != nil {
			return m[1]
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no call waited in the console's queue")
	return ""
}

// TestConsoleRacesElicitation: a client that can ask its user gets the
// question, and the console lists it too; the console answers first, the
// call runs, and the client's question is withdrawn.
func TestConsoleRacesElicitation(t *testing.T) {
	root, auditLog := serveWorkspace(t)
	pol := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(pol, []byte("ask: [write_file]\nconsole: {approvals: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u := startHTTP(t, "serve", "--root", root, "--policy", pol, "--audit", auditLog, "--http", "127.0.0.1:0")
	base := strings.TrimSuffix(u, "/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	testCtx := ctx
	asked, withdrawn := make(chan struct{}, 1), make(chan struct{}, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "racing-user", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- struct{}{}
			select {
			case <-ctx.Done(): // the user never answers: the question is withdrawn
				withdrawn <- struct{}{}
				return nil, ctx.Err()
			case <-testCtx.Done(): // never withdrawn: the test fails, Close need not wait
				return nil, testCtx.Err()
			}
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "raced.txt", "content": "x"}})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-asked
	id := waitPending(t, base, "")
	p := consoleGet(t, base+"/ui/", "")
	form := url.Values{"id": {id}, "decision": {"once"}, "csrf": {p.csrf}}
	req, _ := http.NewRequest(http.MethodPost, base+"/ui/decide", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	req.AddCookie(&http.Cookie{Name: "toolgate_csrf", Value: p.cookie})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the console's answer: %d", res.StatusCode)
	}
	select {
	case r := <-done:
		if r == nil || r.IsError {
			t.Fatalf("the call approved in the console: %v", r)
		}
	case <-ctx.Done():
		t.Fatal("the call did not complete")
	}
	select {
	case <-withdrawn:
	case <-ctx.Done():
		t.Fatal("the client's question was not withdrawn")
	}
	var got []string
	for _, r := range readAudit(t, auditLog) {
		if r.Tool == "write_file" {
			got = append(got, r.Approver)
		}
	}
	if strings.Join(got, " ") != "console:local" {
		t.Errorf("approvers in the audit log: %v", got)
	}
}
