package trust

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// guardrail is a real HTTP service on loopback that answers each request
// with what answer returns, and records what it got.
type guardrail struct {
	*httptest.Server
	mu   sync.Mutex
	got  []WebhookRequest
	head []http.Header
	raw  [][]byte
}

func newGuardrail(t *testing.T, answer func(w http.ResponseWriter, req WebhookRequest)) *guardrail {
	g := &guardrail{}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req WebhookRequest
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("the webhook got no JSON: %v: %s", err, body)
		}
		g.mu.Lock()
		g.got, g.head, g.raw = append(g.got, req), append(g.head, r.Header.Clone()), append(g.raw, body)
		g.mu.Unlock()
		answer(w, req)
	}))
	t.Cleanup(g.Close)
	return g
}

func reply(v string) func(http.ResponseWriter, WebhookRequest) {
	return func(w http.ResponseWriter, _ WebhookRequest) { io.WriteString(w, v) }
}

// echoTool returns its arguments as its text.
type echoTool struct{ calls [][]byte }

func (e *echoTool) Definition() tool.Definition { return tool.Definition{Name: "up__echo"} }
func (e *echoTool) Run(_ context.Context, c tool.Call) (tool.Result, error) {
	e.calls = append(e.calls, c.Args)
	return tool.TextResult("echo " + string(c.Args)), nil
}

var call = tool.Call{ID: "c-1", Name: "up__echo", Args: json.RawMessage(`{"text":"hi"}`), Principal: "alice", Session: "s-1"}

func TestWebhookDecisions(t *testing.T) {
	for _, tc := range []struct {
		name            string
		answer          func(http.ResponseWriter, WebhookRequest)
		allowOnError    bool
		ran             bool   // the tool ran
		errType         string // "" : success
		text, errSubstr string
	}{
		{name: "allow", answer: reply(`{"decision":"allow"}`), ran: true, text: `echo {"text":"hi"}`},
		{name: "deny the call", answer: reply(`{"decision":"deny","reason":"texts to greet are not allowed on Sundays"}`),
			errType: "permission_denied", errSubstr: "denied the call of up__echo: texts to greet are not allowed on Sundays"},
		{name: "modify arguments", answer: func(w http.ResponseWriter, r WebhookRequest) {
			if r.Phase == "call" {
				io.WriteString(w, `{"decision":"modify","arguments":{"text":"[redacted]"}}`)
				return
			}
			io.WriteString(w, `{"decision":"allow"}`)
		}, ran: true, text: `echo {"text":"[redacted]"}`},
		{name: "modify the result", answer: func(w http.ResponseWriter, r WebhookRequest) {
			if r.Phase == "result" {
				io.WriteString(w, `{"decision":"modify","result":{"content":[{"type":"text","text":"cleaned"}],"is_error":false}}`)
				return
			}
			io.WriteString(w, `{"decision":"allow"}`)
		}, ran: true, text: "cleaned"},
		{name: "deny the result", answer: func(w http.ResponseWriter, r WebhookRequest) {
			if r.Phase == "result" {
				io.WriteString(w, `{"decision":"deny","reason":"it names a customer"}`)
				return
			}
			io.WriteString(w, `{"decision":"allow"}`)
		}, ran: true, errType: "permission_denied", errSubstr: "withheld the result of up__echo: it names a customer"},
		{name: "500, deny", answer: func(w http.ResponseWriter, _ WebhookRequest) { http.Error(w, "boom", 500) },
			errType: "permission_denied", errSubstr: "HTTP 500"},
		{name: "500, allow", answer: func(w http.ResponseWriter, _ WebhookRequest) { http.Error(w, "boom", 500) }, allowOnError: true,
			ran: true, text: `echo {"text":"hi"}`},
		{name: "bad JSON, deny", answer: reply(`allow`), errType: "permission_denied", errSubstr: "not the expected JSON"},
		{name: "unknown decision, deny", answer: reply(`{"decision":"maybe"}`), errType: "permission_denied", errSubstr: `decision "maybe"`},
		{name: "modify without arguments, deny", answer: reply(`{"decision":"modify"}`), errType: "permission_denied", errSubstr: `needs "arguments"`},
		{name: "modify arguments to a non-object, deny", answer: reply(`{"decision":"modify","arguments":[1]}`), errType: "permission_denied", errSubstr: `needs "arguments"`},
		{name: "oversized answer, deny", answer: func(w http.ResponseWriter, _ WebhookRequest) {
			io.WriteString(w, `{"decision":"allow","reason":"`+strings.Repeat("x", MaxWebhookResponse)+`"}`)
		}, errType: "permission_denied", errSubstr: "over 1048576 bytes"},
		{name: "redirect, deny", answer: func(w http.ResponseWriter, r WebhookRequest) {
			w.Header().Set("Location", "http://127.0.0.1:1/")
			w.WriteHeader(http.StatusFound)
		}, errType: "permission_denied", errSubstr: "HTTP 302"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGuardrail(t, tc.answer)
			inner := &echoTool{}
			hook := &Webhook{URL: g.URL, AllowOnError: tc.allowOnError}
			res, err := hook.Wrap("up", "echo", inner).Run(context.Background(), call)
			if err != nil {
				t.Fatal(err)
			}
			if ran := len(inner.calls) > 0; ran != tc.ran {
				t.Errorf("the tool ran: %v, want %v", ran, tc.ran)
			}
			if tc.errType == "" {
				if res.Error != nil || res.Text() != tc.text {
					t.Fatalf("result %+v, want text %q", res, tc.text)
				}
				return
			}
			if res.Error == nil || string(res.Error.Type) != tc.errType || !strings.Contains(res.Error.Message, tc.errSubstr) || res.Error.Suggestion == "" {
				t.Fatalf("result %+v, want %s with %q", res.Error, tc.errType, tc.errSubstr)
			}
			if strings.Contains(res.Error.Text(), g.URL) {
				t.Errorf("the model's error names the webhook's URL: %q", res.Error.Text())
			}
		})
	}
}

// What the webhook gets: both phases, with the call's identity, the
// arguments (as modified), and the result.
func TestWebhookRequests(t *testing.T) {
	g := newGuardrail(t, func(w http.ResponseWriter, r WebhookRequest) {
		if r.Phase == "call" {
			io.WriteString(w, `{"decision":"modify","arguments":{"text":"changed"}}`)
			return
		}
		io.WriteString(w, `{"decision":"allow"}`)
	})
	hook := &Webhook{URL: g.URL, Headers: map[string]string{"Authorization": "Bearer hook-token"}}
	if _, err := hook.Wrap("up", "echo", &echoTool{}).Run(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	if len(g.got) != 2 {
		t.Fatalf("%d requests, want 2", len(g.got))
	}
	c, r := g.got[0], g.got[1]
	if c.Phase != "call" || c.Tool != "up__echo" || c.Upstream != "up" || c.Remote != "echo" || c.Principal != "alice" || c.Session != "s-1" || c.CallID != "c-1" ||
		string(c.Arguments) != `{"text":"hi"}` || c.Result != nil {
		t.Errorf("call phase: %+v", c)
	}
	if r.Phase != "result" || string(r.Arguments) != `{"text":"changed"}` || r.Result == nil || r.Result.Text() != `echo {"text":"changed"}` {
		t.Errorf("result phase: %+v", r)
	}
	if g.head[0].Get("Authorization") != "Bearer hook-token" || g.head[0].Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", g.head[0])
	}
	if g.head[0].Get("webhook-signature") != "" {
		t.Error("signed without a secret")
	}
}

// With a secret, each request carries Standard Webhooks' headers, and the
// signature checks out over exactly the bytes sent.
func TestWebhookSignature(t *testing.T) {
	g := newGuardrail(t, reply(`{"decision":"allow"}`))
	secret, err := WebhookSecret("whsec_" + base64.StdEncoding.EncodeToString([]byte("a shared secret of 32 bytes!!!!!")))
	if err != nil || string(secret) != "a shared secret of 32 bytes!!!!!" {
		t.Fatalf("secret %q %v", secret, err)
	}
	hook := &Webhook{URL: g.URL, Secret: secret}
	if _, err := hook.Wrap("up", "echo", &echoTool{}).Run(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for i, h := range g.head {
		id, ts, sig := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte(id + "." + ts + "." + string(g.raw[i])))
		want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
		if !strings.HasPrefix(id, "msg_") || ts == "" || sig != want {
			t.Errorf("request %d: id %q ts %q sig %q, want %q", i, id, ts, sig, want)
		}
		ids[id] = true
	}
	if len(ids) != 2 {
		t.Errorf("message ids %v: want one per request", ids)
	}
	if raw, _ := WebhookSecret("plain text"); string(raw) != "plain text" {
		t.Errorf("a plain secret: %q", raw)
	}
	if _, err := WebhookSecret("whsec_!!"); err == nil {
		t.Error("a malformed whsec_ secret was taken")
	}
}

// A webhook that does not answer in time fails closed, or open with
// AllowOnError; the call is not held longer than the timeout.
func TestWebhookTimeout(t *testing.T) {
	release := make(chan struct{})
	g := newGuardrail(t, func(w http.ResponseWriter, _ WebhookRequest) { <-release })
	defer close(release)
	for _, allow := range []bool{false, true} {
		inner := &echoTool{}
		hook := &Webhook{URL: g.URL, Timeout: 50 * time.Millisecond, AllowOnError: allow}
		res, err := hook.Wrap("up", "echo", inner).Run(context.Background(), call)
		if err != nil {
			t.Fatal(err)
		}
		if allow {
			if res.Error != nil || len(inner.calls) != 1 {
				t.Errorf("on_error allow: %+v, ran %d", res, len(inner.calls))
			}
			continue
		}
		if res.Error == nil || res.Error.Type != tool.PermissionDenied || !res.Error.Retryable || !strings.Contains(res.Error.Message, "no answer within 50ms") || len(inner.calls) != 0 {
			t.Errorf("on_error deny: %+v, ran %d", res.Error, len(inner.calls))
		}
	}
	// Nothing listening: refused, fail closed.
	hook := &Webhook{URL: "http://127.0.0.1:1/hook"}
	res, _ := hook.Wrap("up", "echo", &echoTool{}).Run(context.Background(), call)
	if res.Error == nil || res.Error.Type != tool.PermissionDenied {
		t.Errorf("unreachable webhook: %+v", res)
	}
}
