package trust

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// DefaultWebhookTimeout bounds one exchange with the webhook when
// Webhook.Timeout is 0.
const DefaultWebhookTimeout = 5 * time.Second

// MaxWebhookResponse bounds the webhook's answer, in bytes: a longer one is
// an error (on_error applies).
const MaxWebhookResponse = 1 << 20

// WebhookSecretEnv names the environment variable holding the secret that
// signs webhook requests (Standard Webhooks: "whsec_" and base64, or any
// other text taken as it is). Unset: requests are not signed.
const WebhookSecretEnv = "TOOLGATE_WEBHOOK_SECRET"

// Webhook is an external guardrail: an HTTP service asked about each call
// of an upstream tool before it runs, and about each result before the
// model sees it. It answers allow, deny (with a reason) or modify (new
// arguments, or a new result). It fails closed: when it cannot be asked,
// or answers something else, the call is denied, unless AllowOnError.
type Webhook struct {
	// URL receives each exchange as a POST of a WebhookRequest (JSON).
	URL string
	// Timeout bounds one exchange; 0: DefaultWebhookTimeout.
	Timeout time.Duration
	// AllowOnError lets a call (or a result) through when the webhook
	// fails (on_error: allow); by default it is denied.
	AllowOnError bool
	// Headers are sent with every request (e.g. an Authorization).
	Headers map[string]string
	// Secret, when set, signs each request: webhook-id, webhook-timestamp
	// and webhook-signature headers as Standard Webhooks specifies
	// ("v1," and the base64 HMAC-SHA256 of "id.timestamp.body").
	Secret []byte
	// Client sends the requests; nil: a client without redirects.
	Client *http.Client
	// Logger gets failures of the webhook; nil: none.
	Logger *slog.Logger
}

// WebhookSecret decodes a secret as Standard Webhooks writes it
// ("whsec_" and base64); any other text is taken as it is.
func WebhookSecret(s string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(s, "whsec_"); ok {
		b, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return nil, fmt.Errorf("webhook secret: whsec_ must be followed by base64: %w", err)
		}
		return b, nil
	}
	return []byte(s), nil
}

// WebhookRequest is what the webhook receives.
type WebhookRequest struct {
	Phase     string          `json:"phase"` // "call" (before it runs) or "result" (before the model sees it)
	Tool      string          `json:"tool"`  // the tool's name as the model sees it
	Upstream  string          `json:"upstream"`
	Remote    string          `json:"upstream_tool"` // the tool's name on the upstream
	Arguments json.RawMessage `json:"arguments"`
	Principal string          `json:"principal,omitempty"`
	Session   string          `json:"session,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Result    *tool.Result    `json:"result,omitempty"` // phase "result" only
}

// WebhookResponse is what the webhook answers.
type WebhookResponse struct {
	Decision  string          `json:"decision"` // allow, deny or modify
	Reason    string          `json:"reason,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"` // modify, phase "call"
	Result    *tool.Result    `json:"result,omitempty"`    // modify, phase "result"
}

// Wrap returns t with the webhook asked about each call and result.
func (w *Webhook) Wrap(upstream, remote string, t tool.Tool) tool.Tool {
	return &hookedTool{Tool: t, hook: w, upstream: upstream, remote: remote}
}

type hookedTool struct {
	tool.Tool
	hook             *Webhook
	upstream, remote string
}

func (t *hookedTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	req := WebhookRequest{Phase: "call", Tool: call.Name, Upstream: t.upstream, Remote: t.remote, Arguments: call.Args,
		Principal: call.Principal, Session: call.Session, CallID: call.ID}
	if len(req.Arguments) == 0 {
		req.Arguments = json.RawMessage(`{}`)
	}
	ans, failed := t.hook.ask(ctx, &req)
	switch {
	case failed != nil:
		if !t.hook.AllowOnError {
			return tool.ErrorResult(failed), nil
		}
	case ans.Decision == "deny":
		return tool.ErrorResult(denied(call.Name, "call", ans.Reason)), nil
	case ans.Decision == "modify":
		call.Args = ans.Arguments
		req.Arguments = ans.Arguments
	}
	res, err := t.Tool.Run(ctx, call)
	if err != nil {
		return res, err
	}
	req.Phase, req.Result = "result", &res
	ans, failed = t.hook.ask(ctx, &req)
	switch {
	case failed != nil:
		if !t.hook.AllowOnError {
			return tool.ErrorResult(failed), nil
		}
	case ans.Decision == "deny":
		return tool.ErrorResult(denied(call.Name, "result", ans.Reason)), nil
	case ans.Decision == "modify":
		out := *ans.Result
		for k, v := range res.Meta {
			out.SetMeta(k, v)
		}
		out.SetMeta("webhook", "modified the result")
		return out, nil
	}
	return res, nil
}

// denied is the model's error for a call or a result the webhook refused.
func denied(name, phase, reason string) *tool.Error {
	if reason == "" {
		reason = "it gave no reason"
	}
	e := tool.Errorf(tool.PermissionDenied, "the guardrail webhook denied the call of %s: %s", name, reason).
		WithSuggestion("do not retry the same call; change it as the reason says, or tell the user it was refused and why")
	if phase == "result" {
		e.Message = fmt.Sprintf("the guardrail webhook withheld the result of %s: %s", name, reason)
		e.Suggestion = "the call ran but its result is withheld; do not retry it to get the result, tell the user it was withheld and why"
	}
	e.Details = map[string]any{"guardrail": "webhook", "phase": phase}
	return e
}

// ask sends req and returns the webhook's valid answer, or the error the
// model gets when the webhook could not be asked.
func (w *Webhook) ask(ctx context.Context, req *WebhookRequest) (WebhookResponse, *tool.Error) {
	ans, err := w.exchange(ctx, req)
	if err == nil {
		return ans, nil
	}
	if w.Logger != nil {
		w.Logger.Warn("guardrail webhook failed", "phase", req.Phase, "tool", req.Tool, "err", err, "allowed", w.AllowOnError)
	}
	what := "the call of " + req.Tool
	if req.Phase == "result" {
		what = "the result of " + req.Tool
	}
	e := tool.Errorf(tool.PermissionDenied, "the guardrail webhook that must approve %s could not be asked (%v), and calls it cannot check are refused (trust.webhook.on_error: deny)", what, err).
		WithSuggestion("try again later; if it keeps failing, tell the user that the guardrail service is not answering")
	e.Retryable = true
	e.Details = map[string]any{"guardrail": "webhook", "phase": req.Phase}
	return WebhookResponse{}, e
}

// exchange posts req and reads a valid answer.
func (w *Webhook) exchange(ctx context.Context, req *WebhookRequest) (WebhookResponse, error) {
	var ans WebhookResponse
	body, err := json.Marshal(req)
	if err != nil {
		return ans, err
	}
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = DefaultWebhookTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return ans, err
	}
	hr.Header.Set("Content-Type", "application/json")
	for k, v := range w.Headers {
		hr.Header.Set(k, v)
	}
	if len(w.Secret) > 0 {
		sign(hr.Header, w.Secret, body, time.Now())
	}
	client := w.Client
	if client == nil {
		client = noRedirects
	}
	resp, err := client.Do(hr)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return ans, fmt.Errorf("no answer within %s", timeout)
		}
		if cause := errors.Unwrap(err); cause != nil {
			err = cause // the url.Error's cause, without the URL
		}
		return ans, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxWebhookResponse+1))
	switch {
	case err != nil:
		return ans, fmt.Errorf("reading its answer: %w", err)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return ans, fmt.Errorf("it answered HTTP %d", resp.StatusCode)
	case len(data) > MaxWebhookResponse:
		return ans, fmt.Errorf("its answer is over %d bytes", MaxWebhookResponse)
	}
	if err := json.Unmarshal(data, &ans); err != nil {
		return ans, fmt.Errorf("its answer is not the expected JSON: %v", err)
	}
	switch {
	case ans.Decision == "allow", ans.Decision == "deny":
	case ans.Decision == "modify" && req.Phase == "call":
		var args map[string]any
		if json.Unmarshal(ans.Arguments, &args) != nil || args == nil {
			return ans, errors.New(`"modify" of a call needs "arguments", a JSON object`)
		}
	case ans.Decision == "modify" && req.Phase == "result":
		if ans.Result == nil {
			return ans, errors.New(`"modify" of a result needs "result"`)
		}
	default:
		return ans, fmt.Errorf(`decision %q: want "allow", "deny" or "modify"`, ans.Decision)
	}
	return ans, nil
}

var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// sign adds Standard Webhooks' headers to h.
func sign(h http.Header, secret, body []byte, now time.Time) {
	var id [12]byte
	rand.Read(id[:])
	msgID := "msg_" + hex.EncodeToString(id[:])
	ts := strconv.FormatInt(now.Unix(), 10)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(msgID + "." + ts + "."))
	mac.Write(body)
	h.Set("webhook-id", msgID)
	h.Set("webhook-timestamp", ts)
	h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
}
