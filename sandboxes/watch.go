package sandboxes

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync"

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
	resp, err := w.base.RoundTrip(r)
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
