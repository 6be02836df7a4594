package sandboxes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
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
	turned bool // the runner answered that it did not run it (no such sandbox, another token)
}

// notRun says whether the call provably did not run: its request never
// reached the runner, or the runner turned it away before running it.
func (a *attempt) notRun() bool { return !a.got.Load() || a.turned }

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
// (runner.AckHeader). An answer of another version of the format than
// this gateway's (runner.VersionHeader) is refused. The result is vetted
// as an MCP upstream's is (tool.VetUpstream): a runner cannot make the
// gateway ask its user a question or send them to a sign-in page, nor
// pass text in a block no check reads. What the request met is recorded
// in at; a call whose request failed has no result of its own (Run says
// what is known).
func (s *Sandboxes) send(ctx context.Context, c *conn, call tool.Call, at *attempt) tool.Result {
	if len(call.Args) > 0 && !json.Valid(call.Args) {
		return tool.ErrorResult(tool.Errorf(tool.InvalidArguments, "the arguments of %s are not JSON", call.Name))
	}
	body := runner.AppendCall(nil, call.Name, call.Args)
	if len(body) > runner.MaxCallBytes {
		// The runner would refuse it, after reading MaxCallBytes of it:
		// not sent (the hop, writing it all before it reads, would see the
		// runner's close, not its answer).
		return tooLarge(call.Name)
	}
	rp, err := s.post(ctx, c, body, at)
	if err != nil {
		if ctx.Err() != nil {
			return tool.ErrorResult(tool.AsError(ctx.Err()))
		}
		at.fail(err.Error())
		return tool.Result{}
	}
	kept := false
	defer func() { rp.done(kept) }()
	switch {
	case rp.code == http.StatusOK:
	case rp.code == http.StatusRequestEntityTooLarge:
		return tooLarge(call.Name)
	case rp.code == http.StatusUnauthorized, rp.code == http.StatusNotFound:
		// Its token or the sandbox is gone: the runner answers so before
		// running anything.
		at.turned = true
		at.fail(fmt.Sprintf("it answered %s", rp.status))
		return tool.Result{}
	case rp.code >= 500:
		// The runner failed: the connection is broken.
		at.fail(fmt.Sprintf("it answered %s", rp.status))
		return tool.Result{}
	default:
		// The runner refused the request (400, 405, 415, ...): nothing
		// ran, and the same request would be refused again.
		return tool.ErrorResult(tool.Errorf(tool.Internal, "sandbox %s refused the call of %s (it answered %s): the call did not run", c.id, call.Name, rp.status).
			WithSuggestion("tell the operator: the gateway and the runner may not run the same release (upgrade the older)"))
	}
	if rp.version != runner.CallVersion || !strings.HasPrefix(rp.contentType, runner.CallContentType) {
		v := rp.version
		if v == "" {
			v = "none"
		}
		return tool.ErrorResult(tool.Errorf(tool.Internal, "sandbox %s answered the call of %s in another format than this gateway reads (%s %s, %s; this gateway reads version %s): the call may have run, its result is not used",
			c.id, call.Name, runner.VersionHeader, v, rp.contentType, runner.CallVersion).
			WithSuggestion("tell the operator: run the gateway and the runners of the same release (upgrade the older); check what the call changed before running it again"))
	}
	var got *runner.Result
	ls := answerLines{r: rp.body}
	for got == nil {
		l, err := ls.next(maxAnswerBytes)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return tool.ErrorResult(tool.AsError(ctx.Err()))
			case errors.Is(err, errLineTooLong):
				return tool.ErrorResult(tool.Errorf(tool.TooLarge, "the result of %s is larger than a sandbox may send (%d MiB)", call.Name, maxAnswerBytes>>20).
					WithSuggestion("ask for less at once (a range of lines, a narrower listing)"))
			}
			why := "its answer broke off before the result"
			if err != io.EOF {
				why += ": " + err.Error()
			}
			at.fail(why)
			return tool.Result{}
		}
		a, err := runner.DecodeAnswer(l)
		if err != nil {
			at.fail(fmt.Sprintf("it answered what does not decode: %v", err))
			return tool.Result{}
		}
		if p := a.Progress; p != nil {
			tool.ReportProgress(ctx, p.Done, p.Total, cut(p.Message, maxProgressBytes))
		}
		got = a.Result
	}
	// Nothing after the result is waited for: the answer's end comes with
	// it (the runner writes the two at once) and is read with it, and the
	// connection is kept for the sandbox's next call; an answer whose end
	// is not there yet, or that goes on, loses its connection.
	kept = ls.empty() && rp.ended()
	r := tool.VetUpstream(call.Name, got.Tool())
	if r.Error != nil && r.Error.Type == tool.UnknownTool {
		return tool.ErrorResult(tool.Errorf(tool.Unavailable, "sandbox %s does not offer %s (its runner's tools differ from this gateway's)", c.id, call.Name).
			WithSuggestion("tell the operator: the runner's version or its command sandbox differs from the gateway's"))
	}
	return r
}

// tooLarge is the error of a call larger than a runner takes: it did not run.
func tooLarge(name string) tool.Result {
	return tool.ErrorResult(tool.Errorf(tool.TooLarge, "the call of %s is larger than a sandbox takes (%d MiB)", name, runner.MaxCallBytes>>20).
		WithSuggestion("send less at once (write a large file in parts)"))
}

// post sends a call's body to c's call endpoint and returns the head of
// the answer: through the hop when it fits c's runner, else net/http.
func (s *Sandboxes) post(ctx context.Context, c *conn, body []byte, at *attempt) (*reply, error) {
	hdr := make([][2]string, 0, 6)
	hdr = append(hdr, [2]string{"Authorization", c.bearer}, [2]string{"Content-Type", "application/json"},
		[2]string{"Accept", runner.CallContentType}, [2]string{runner.VersionHeader, runner.CallVersion})
	if tool.Approved(ctx) {
		hdr = append(hdr, [2]string{runner.ApprovedHeader, "1"})
	}
	if at.ack != "" {
		hdr = append(hdr, [2]string{runner.AckHeader, at.ack})
	}
	if c.lean() {
		return s.hop.do(ctx, c.addr, &hopRequest{host: c.u.Host, path: c.u.RequestURI(), header: hdr, body: body}, func() { at.got.Store(true) })
	}
	// Once its headers are written the sandbox may run the call: only a
	// request never written (no connection) is one that did not run.
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { at.got.Store(true) }})
	req, err := http.NewRequestWithContext(tctx, http.MethodPost, c.u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for _, kv := range hdr {
		req.Header.Set(kv[0], kv[1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	return &reply{code: resp.StatusCode, status: resp.Status, contentType: resp.Header.Get("Content-Type"), version: resp.Header.Get(runner.VersionHeader),
		body: resp.Body, ended: func() bool { return false }, done: func(bool) { resp.Body.Close() }}, nil
}

var errLineTooLong = errors.New("a line of the answer is too long")

// answerLines reads an answer's lines, each at most a given length, from r.
type answerLines struct {
	r          io.Reader
	buf        []byte
	start, end int
}

// next is the next line, without its newline; it is valid until the next
// call. An answer that ends without a newline ends with io.EOF.
func (l *answerLines) next(limit int) ([]byte, error) {
	for {
		if i := bytes.IndexByte(l.buf[l.start:l.end], '\n'); i >= 0 {
			line := l.buf[l.start : l.start+i]
			l.start += i + 1
			return line, nil
		}
		if l.end-l.start > limit {
			return nil, errLineTooLong
		}
		if l.start > 0 {
			l.end = copy(l.buf, l.buf[l.start:l.end])
			l.start = 0
		}
		if l.end == len(l.buf) {
			l.buf = append(l.buf, make([]byte, min(max(4<<10, len(l.buf)), limit+1-len(l.buf)))...)
		}
		n, err := l.r.Read(l.buf[l.end:])
		l.end += n
		if err != nil && n == 0 {
			return nil, err
		}
	}
}

// empty says whether nothing is left of what was read.
func (l *answerLines) empty() bool { return l.start == l.end }

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
