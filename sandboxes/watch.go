package sandboxes

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/toolgate/toolgate/runner"
	"github.com/toolgate/toolgate/tool"
)

// attempt is what the HTTP requests of one forwarded call met: whether a
// request failed on the way (no answer, or the sandbox answered that it
// is gone or refused it) and whether one may have reached the sandbox (a
// message was written, whatever came back).
type attempt struct {
	mu     sync.Mutex
	why    string
	got    bool
	failed bool
}

type attemptKey struct{}

func withAttempt(ctx context.Context, a *attempt) context.Context {
	return context.WithValue(ctx, attemptKey{}, a)
}

func (a *attempt) fail(why string) {
	a.mu.Lock()
	if !a.failed {
		a.failed, a.why = true, why
	}
	a.mu.Unlock()
}

func (a *attempt) failedNow() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failed
}

func (a *attempt) reached() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.got
}

// reason is what broke: the transport's failure, else the result's error.
func (a *attempt) reason(res tool.Result) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.why != "" {
		return a.why
	}
	if res.Error != nil {
		return res.Error.Message
	}
	return "the connection broke"
}

// watched is the transport to the sandboxes: it marks a call approved by
// the gateway's person (runner.ApprovedHeader) and records in the call's
// attempt what its requests met.
type watched struct{ base http.RoundTripper }

func (w watched) RoundTrip(r *http.Request) (*http.Response, error) {
	if tool.Approved(r.Context()) {
		r = r.Clone(r.Context())
		r.Header.Set(runner.ApprovedHeader, "1")
	}
	a, _ := r.Context().Value(attemptKey{}).(*attempt)
	if a != nil && r.Method == http.MethodPost {
		// Once a byte of a message is on its way, the sandbox may run it:
		// only a request never written (no connection) is one that did
		// not run. An answer comes only after the call (no header before
		// the first message), so it cannot tell.
		r = r.WithContext(httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{
			WroteHeaders: func() {
				a.mu.Lock()
				a.got = true
				a.mu.Unlock()
			},
		}))
	}
	var end func()
	if r.Method == http.MethodPost {
		r, end = lingering(r)
	}
	resp, err := w.base.RoundTrip(r)
	if end != nil {
		if err != nil {
			end()
		} else {
			resp.Body = &drained{ReadCloser: resp.Body, end: end}
		}
	}
	if a == nil {
		return resp, err
	}
	switch {
	case err != nil:
		a.fail(err.Error())
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode >= 500:
		a.fail(fmt.Sprintf("it answered %s", resp.Status))
	}
	return resp, err
}

// cancelGrace is how long a request to a sandbox outlives its caller's
// cancellation: long enough for the end of an answer already received to
// arrive, so that its connection is kept.
const cancelGrace = 200 * time.Millisecond

// lingering returns r under a context that ends cancelGrace after r's own
// ends (or at once when end is called). The MCP client cancels a call's
// context as soon as it has the answer's message, while the end of the
// answer's stream is still on its way; a request cancelled then has its
// connection closed, not kept, and the next call to the sandbox opens a
// new one (a call in ten on an idle machine, most of them on a loaded
// one). A call cancelled before its answer still aborts its request
// (which is how a stateless runner learns of it), cancelGrace later.
func lingering(r *http.Request) (*http.Request, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	var (
		mu    sync.Mutex
		timer *time.Timer
	)
	stop := context.AfterFunc(r.Context(), func() {
		mu.Lock()
		timer = time.AfterFunc(cancelGrace, cancel)
		mu.Unlock()
	})
	return r.WithContext(ctx), func() {
		stop()
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}
}

// drained is the body of an answer to a POST: closed, it reads what is
// left first (up to drainBytes; a runner ends the stream right after the
// message, and a cancelled request's body fails cancelGrace after), so
// that the connection is kept for the next request; then it ends the
// request's context.
type drained struct {
	io.ReadCloser
	end  func()
	once sync.Once
}

const drainBytes = 64 << 10

func (d *drained) Close() error {
	io.Copy(io.Discard, io.LimitReader(d.ReadCloser, drainBytes))
	err := d.ReadCloser.Close()
	d.once.Do(d.end)
	return err
}
