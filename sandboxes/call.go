package sandboxes

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"unicode/utf8"

	"github.com/toolgate/toolgate/runner"
	"github.com/toolgate/toolgate/tool"
)

// attempt is what the request of one forwarded call met: whether it
// failed on the way (no answer, an answer broken off, or the sandbox
// answered that it is gone or refused it), and whether it may have
// reached the sandbox (its request was written, whatever came back).
type attempt struct {
	ack    string      // runner.AckHeader's value, "" none
	got    atomic.Bool // set by the HTTP transport's writer
	failed bool
	why    string
}

func (a *attempt) fail(why string) {
	if !a.failed {
		a.failed, a.why = true, why
	}
}

// reason is what broke: the transport's failure, else the result's error.
func (a *attempt) reason(res tool.Result) string {
	switch {
	case a.why != "":
		return a.why
	case res.Error != nil:
		return res.Error.Message
	}
	return "the connection broke"
}

// maxAnswerBytes bounds one line of a sandbox's answer (its result): the
// gateway's budgets cut a result afterwards; this keeps a runner from
// holding a replica's memory without end.
const maxAnswerBytes = 64 << 20

// send runs call in sandbox c: one POST of its name and arguments to the
// runner's call endpoint (runner.CallRequest), the progress the answer
// reports passed on as it comes, the result its last line. A call the
// gateway's person approved is sent marked so (runner.ApprovedHeader),
// and every call acknowledges the process events told so far
// (runner.AckHeader). The result is vetted as an MCP upstream's is
// (tool.VetUpstream): a runner cannot make the gateway ask its user a
// question or send them to a sign-in page, nor pass text in a block no
// check reads. What the request met is recorded in at; a call whose
// request failed has no result of its own (Run says what is known).
func (s *Sandboxes) send(ctx context.Context, c *conn, call tool.Call, at *attempt) tool.Result {
	body, err := json.Marshal(runner.CallRequest{Name: call.Name, Arguments: call.Args})
	if err != nil {
		return tool.ErrorResult(tool.Errorf(tool.InvalidArguments, "the arguments of %s are not JSON: %v", call.Name, err))
	}
	// Once its headers are written the sandbox may run the call: only a
	// request never written (no connection) is one that did not run.
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { at.got.Store(true) }})
	req, err := http.NewRequestWithContext(tctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		at.fail(err.Error())
		return tool.Result{}
	}
	req.Header.Set("Authorization", c.bearer)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", runner.CallContentType)
	if tool.Approved(ctx) {
		req.Header.Set(runner.ApprovedHeader, "1")
	}
	if at.ack != "" {
		req.Header.Set(runner.AckHeader, at.ack)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return tool.ErrorResult(tool.AsError(ctx.Err()))
		}
		at.fail(err.Error())
		return tool.Result{}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusRequestEntityTooLarge:
		return tool.ErrorResult(tool.Errorf(tool.TooLarge, "the call of %s is larger than a sandbox takes (%d MiB)", call.Name, runner.MaxCallBytes>>20).
			WithSuggestion("send less at once (write a large file in parts)"))
	case resp.StatusCode == http.StatusUnauthorized, resp.StatusCode == http.StatusNotFound, resp.StatusCode >= 500:
		// Its token or the sandbox is gone, or the runner failed: the
		// connection is broken.
		at.fail(fmt.Sprintf("it answered %s", resp.Status))
		return tool.Result{}
	default:
		// The runner refused the request (400, 405, 415, ...): nothing
		// ran, and the same request would be refused again.
		return tool.ErrorResult(tool.Errorf(tool.Internal, "sandbox %s refused the call of %s (it answered %s): the call did not run", c.id, call.Name, resp.Status).
			WithSuggestion("tell the operator: the gateway and the runner may not speak the same version"))
	}
	var got *runner.Result
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, maxAnswerBytes)
	for got == nil && sc.Scan() {
		var a runner.Answer
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			at.fail(fmt.Sprintf("it answered what does not decode: %v", err))
			return tool.Result{}
		}
		if p := a.Progress; p != nil {
			tool.ReportProgress(ctx, p.Done, p.Total, cut(p.Message, maxProgressBytes))
		}
		got = a.Result
	}
	switch {
	case got != nil:
		// Nothing after the result is waited for. The answer's end comes
		// with it (the runner writes the two at once) and is read with it:
		// the connection is kept for the sandbox's next call. Anything
		// else pending is left unread, and closing the body drops the
		// connection with it.
	case ctx.Err() != nil:
		return tool.ErrorResult(tool.AsError(ctx.Err()))
	case errors.Is(sc.Err(), bufio.ErrTooLong):
		return tool.ErrorResult(tool.Errorf(tool.TooLarge, "the result of %s is larger than a sandbox may send (%d MiB)", call.Name, maxAnswerBytes>>20).
			WithSuggestion("ask for less at once (a range of lines, a narrower listing)"))
	default:
		why := "its answer broke off before the result"
		if err := sc.Err(); err != nil {
			why += ": " + err.Error()
		}
		at.fail(why)
		return tool.Result{}
	}
	r := tool.VetUpstream(call.Name, got.Tool())
	if r.Error != nil && r.Error.Type == tool.UnknownTool {
		return tool.ErrorResult(tool.Errorf(tool.Unavailable, "sandbox %s does not offer %s (its runner's tools differ from this gateway's)", c.id, call.Name).
			WithSuggestion("tell the operator: the runner's version or its command sandbox differs from the gateway's"))
	}
	return r
}

// maxProgressBytes bounds the message of a progress report a sandbox sends.
const maxProgressBytes = 4 << 10

// cut is s cut to at most n bytes, on a rune's boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
