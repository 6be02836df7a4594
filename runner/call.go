package runner

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/toolgate/toolgate/tool"
)

// CallRequest is the body of POST /sandboxes/{id}/call: one call of a
// tool, its arguments as the gateway judged them. The header
// ApprovedHeader marks an approved call, as on the MCP endpoint.
type CallRequest struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// AppendCall appends the body of a call of name with args (a JSON value,
// or none when empty) to dst: CallRequest as json.Marshal writes it, but
// for the arguments, written as they are (json.Marshal would compact them
// and escape '<', '>' and '&' in their strings: the same value).
func AppendCall(dst []byte, name string, args json.RawMessage) []byte {
	dst = tool.AppendJSONString(append(dst, `{"name":`...), name)
	if len(args) > 0 {
		dst = append(append(dst, `,"arguments":`...), args...)
	}
	return append(dst, '}')
}

// MaxCallBytes bounds the body of a call (as the MCP endpoint bounds a
// message): larger ones are answered 413.
const MaxCallBytes = 4 << 20

// CallContentType is the type of the answer to a call: JSON Lines, each
// an Answer, the last one (and only it) holding the result.
const CallContentType = "application/jsonl"

// VersionHeader names the version of the call endpoint's wire format
// (CallRequest, Answer) on a call and on its answer: CallVersion, which
// changes whenever a field of either changes. A runner refuses a call of
// another version or none (400, before running it), and a gateway refuses
// an answer of another version or none, so that a gateway and a runner of
// different releases fail the call, saying so, instead of losing what the
// other's shape carries (a content block's MIME type or resource).
const VersionHeader = "Toolgate-Call-Version"

// CallVersion is this release's version of the call endpoint's format.
// Version 1, the first, wrote content blocks in MCP's shape (mimeType, a
// nested resource); version 2 writes them flat (Content).
const CallVersion = "2"

// Answer is one line of the answer to a call: the call's progress while it
// runs (sent as it comes), then its result.
type Answer struct {
	Progress *Progress `json:"progress,omitempty"`
	Result   *Result   `json:"result,omitempty"`
}

// Result is a tool.Result as a call's answer carries it: its fields as
// they are, its content blocks flat (Content), so that it is written and
// read in one pass, without the per-value methods of MCP's shape
// (tool.Result's own JSON), which encoding/json checks and copies again
// at each level.
type Result struct {
	Content    []Content      `json:"content,omitempty"`
	Structured any            `json:"structured,omitempty"`
	Error      *tool.Error    `json:"error,omitempty"`
	Meta       map[string]any `json:"meta,omitempty"`
}

// Content is a tool.Content, field for field.
type Content struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Data     []byte `json:"data,omitempty"`
	MIMEType string `json:"mime_type,omitempty"`
	URI      string `json:"uri,omitempty"`
}

// NewResult is r as an answer carries it.
func NewResult(r tool.Result) *Result {
	out := &Result{Structured: r.Structured, Error: r.Error, Meta: r.Meta}
	if len(r.Content) > 0 {
		out.Content = make([]Content, len(r.Content))
		for i, c := range r.Content {
			out.Content[i] = Content(c)
		}
	}
	return out
}

// Tool is r as a tool.Result.
func (r *Result) Tool() tool.Result {
	out := tool.Result{Structured: r.Structured, Error: r.Error, Meta: r.Meta}
	if len(r.Content) > 0 {
		out.Content = make([]tool.Content, len(r.Content))
		for i, c := range r.Content {
			out.Content[i] = tool.Content(c)
		}
	}
	return out
}

// Progress is one report of tool.ReportProgress.
type Progress struct {
	Done    float64 `json:"done"`
	Total   float64 `json:"total,omitempty"`
	Message string  `json:"message,omitempty"`
}

// serveCall answers POST /sandboxes/{id}/call (the token was checked): it
// runs the call with run, under the request's context (a caller that goes
// away cancels it), writing each progress report as a line as it comes
// and the result as the last. The gateway's own calls take this path and
// not MCP's: a call is one request and one answer, with no session to
// make, no JSON-RPC framing and no event stream around it.
func serveCall(w http.ResponseWriter, req *http.Request, run func(context.Context, string, json.RawMessage) tool.Result) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		answer(w, http.StatusMethodNotAllowed, map[string]any{"error": "method_not_allowed", "message": "POST a call"})
		return
	}
	if v := req.Header.Get(VersionHeader); v != CallVersion {
		if v == "" {
			v = "none (version 1)"
		}
		answer(w, http.StatusBadRequest, map[string]any{"error": "version_mismatch",
			"message": "this runner speaks version " + CallVersion + " of the call endpoint and the call is of version " + v + ": run the gateway and the runners of the same release (upgrade the older)"})
		return
	}
	var c CallRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxCallBytes))
	if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
		answer(w, http.StatusRequestEntityTooLarge, map[string]any{"error": "too_large", "message": "a call's body is at most 4 MiB"})
		return
	}
	if err == nil {
		c, err = DecodeCall(body) // as Serve's lean path reads it
	}
	if msg := invalidCall(c, err); msg != "" {
		answer(w, http.StatusBadRequest, map[string]any{"error": "invalid_request", "message": msg})
		return
	}
	ctx := req.Context()
	if req.Header.Get(ApprovedHeader) == "1" {
		ctx = tool.WithApproval(ctx)
	}
	w.Header().Set("Content-Type", CallContentType)
	w.Header().Set(VersionHeader, CallVersion)
	w.Header().Set("Cache-Control", "no-store")
	var (
		mu   sync.Mutex
		done bool
		rc   = http.NewResponseController(w)
	)
	ctx = tool.WithProgress(ctx, func(d, t float64, m string) {
		line, err := progressLine(d, t, m)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !done {
			if _, err := w.Write(line); err == nil {
				rc.Flush()
			}
		}
	})
	res := run(ctx, c.Name, c.Arguments)
	mu.Lock()
	defer mu.Unlock()
	done = true
	w.Write(resultLine(c.Name, res))
}

// invalidCall is why a call's body, read into c with err, is no call
// ("": it is one), in the same words on net/http's path and the lean one.
func invalidCall(c CallRequest, err error) string {
	switch {
	case err != nil:
		return "want {\"name\": TOOL, \"arguments\": {...}}: " + err.Error()
	case c.Name == "":
		return "the call names no tool"
	}
	return ""
}

// resultLine is the last line of the answer to a call of name: its
// result, or, when that does not encode, an internal error with the
// process events the result carried (the runner's own: they encode), for
// the gateway's audit.
func resultLine(name string, res tool.Result) []byte {
	if line, ok := flatLine(res); ok {
		return append(line, '\n')
	}
	line, err := json.Marshal(Answer{Result: NewResult(res)})
	if err != nil {
		e := tool.ErrorResult(tool.Errorf(tool.Internal, "the sandbox's result of %s could not be encoded", name))
		if ev, ok := res.Meta[MetaProcessEvents]; ok {
			e.SetMeta(MetaProcessEvents, ev)
		}
		line, _ = json.Marshal(Answer{Result: NewResult(e)})
	}
	return append(line, '\n')
}

// progressLine is the answer line of one progress report, as both of
// Serve's paths write it: the JSON of an Answer with Progress, and '\n'.
func progressLine(done, total float64, message string) ([]byte, error) {
	line, err := json.Marshal(Answer{Progress: &Progress{Done: done, Total: total, Message: message}})
	return append(line, '\n'), err
}
