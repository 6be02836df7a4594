package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/telemetry"
	"github.com/toolgate/toolgate/tool"
)

// Backoff between failed reconnects.
const (
	minBackoff = time.Second
	maxBackoff = 30 * time.Second
)

// connectTimeout bounds connecting and listing when no deadline is given.
const connectTimeout = 30 * time.Second

// Upstream is one connected MCP server. It is safe for concurrent use.
type Upstream struct {
	cfg    Config
	opts   Options
	log    *slog.Logger
	client *mcp.Client
	tel    *telemetry.MCP // nil without telemetry
	flights

	mu      sync.Mutex
	cs      *mcp.ClientSession // nil while down
	closed  bool
	wait    time.Duration // current backoff
	retryAt time.Time     // no reconnect before
	lastErr error
	tools   []tool.Tool
	listed  bool // the tools were listed once (an upstream waiting for a sign-in is not)
	seq     atomic.Uint64
	proc    io.ReadWriteCloser // the process Config.Launch last started

	lastPrincipal atomic.Pointer[principalAny] // see principalValue

	connecting sync.Mutex // one (re)connect at a time

	// principals are the principals' own sessions (Config.PerPrincipal),
	// under mu: each made once however many of its calls ask at once,
	// closed when idle, at most Config.MaxPrincipals of them.
	principals map[string]*principalSession

	// onChange is told when the tools, resources or prompts may have
	// changed (set by a Gateway before the first connect).
	onChange func(kind changeKind)
	// onResourceUpdated forwards notifications/resources/updated.
	onResourceUpdated func(ctx context.Context, p *mcp.ResourceUpdatedNotificationParams)
}

type changeKind int

const (
	changedTools changeKind = iota
	changedResources
	changedPrompts
	reconnected
)

// Connect starts or reaches the upstream described by cfg, initializes a
// session and lists its tools.
func Connect(ctx context.Context, cfg Config, o Options) (*Upstream, error) {
	u, err := newUpstream(cfg, o)
	if err != nil {
		return nil, err
	}
	if err := u.start(ctx); err != nil {
		return nil, err
	}
	return u, nil
}

func newUpstream(cfg Config, o Options) (*Upstream, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if o.ClientName == "" {
		o.ClientName = "toolgate"
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "dev"
	}
	if o.ProtocolVersion == "" {
		o.ProtocolVersion = DefaultProtocolVersion
	}
	tel, err := telemetry.NewMCPClient(o.TracerProvider, o.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("mcpclient: telemetry: %w", err)
	}
	u := &Upstream{cfg: cfg, opts: o, log: o.Logger, tel: tel}
	if u.log == nil {
		u.log = slog.New(slog.DiscardHandler)
	}
	u.log = u.log.With("upstream", cfg.Name)
	u.flights.m = map[string]flight{}
	co := &mcp.ClientOptions{
		// No roots; sampling and elicitation only when they can be
		// forwarded to a downstream client.
		Capabilities: &mcp.ClientCapabilities{},
		// Progress and log notifications are tapped as they are read (tap.go).
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			go u.refreshTools()
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { u.changed(changedResources) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { u.changed(changedPrompts) },
		ResourceUpdatedHandler: func(ctx context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			if f := u.onResourceUpdated; f != nil {
				f(ctx, r.Params)
			}
		},
	}
	if o.PeerFromContext != nil {
		co.ElicitationHandler = u.onElicit
		co.CreateMessageHandler = u.onSample
	}
	u.client = mcp.NewClient(&mcp.Implementation{Name: o.ClientName, Version: o.ClientVersion}, co)
	if u.tel != nil {
		u.client.AddSendingMiddleware(u.traced)
	}
	if o.PeerFromContext != nil {
		// The go-sdk client checks a form's schema against what it knows;
		// the downstream client is the one to judge it (and its answer), so
		// elicitation requests go to it unchecked.
		u.client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if r, ok := req.(*mcp.ElicitRequest); ok && method == "elicitation/create" {
					return u.onElicit(ctx, r)
				}
				return next(ctx, method, req)
			}
		})
	}
	return u, nil
}

// start connects for the first time; a failure is returned, not retried.
func (u *Upstream) start(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		// The upstream's own timeout when longer: a launcher's first start
		// (npx -y) fetches the package before the server answers.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, max(connectTimeout, u.cfg.Timeout))
		defer cancel()
	}
	u.connecting.Lock()
	defer u.connecting.Unlock()
	cs, err := u.dial(ctx)
	if err != nil {
		return fmt.Errorf("mcpclient: connecting to %s: %w", u.cfg.Name, err)
	}
	tools, err := u.listTools(ctx, cs)
	if err != nil {
		cs.Close()
		return fmt.Errorf("mcpclient: listing the tools of %s: %w", u.cfg.Name, err)
	}
	u.mu.Lock()
	u.cs, u.tools, u.listed = cs, tools, true
	u.mu.Unlock()
	go u.watch(cs)
	return nil
}

// Name is the upstream's name (Config.Name).
func (u *Upstream) Name() string { return u.cfg.Name }

// Config returns the upstream's configuration, defaults filled in.
func (u *Upstream) Config() Config { return u.cfg }

// Tools returns the upstream's tools as last listed.
func (u *Upstream) Tools() []tool.Tool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]tool.Tool(nil), u.tools...)
}

// InitializeResult returns what the upstream said in initialize (its
// name, version and capabilities), or nil while it is down.
func (u *Upstream) InitializeResult() *mcp.InitializeResult {
	u.mu.Lock()
	cs := u.cs
	u.mu.Unlock()
	if cs == nil {
		return nil
	}
	return cs.InitializeResult()
}

// Close ends the session (stopping a command upstream).
func (u *Upstream) Close() error {
	u.mu.Lock()
	cs := u.cs
	u.cs, u.closed = nil, true
	own := u.principals
	u.principals = nil
	for _, ps := range own {
		ps.stopIdle()
	}
	u.mu.Unlock()
	for _, ps := range own {
		if ps.cs != nil { // under mu: a session still being made is closed by its dial
			ps.cs.Close()
		}
	}
	if cs != nil {
		return cs.Close()
	}
	return nil
}

// dial makes a transport and initializes a session over it: the
// gateway's own.
func (u *Upstream) dial(ctx context.Context) (*mcp.ClientSession, error) { return u.dialAs(ctx, nil) }

// dialAs is dial; with principal, every HTTP request of the session
// carries *principal in its context.
func (u *Upstream) dialAs(ctx context.Context, principal *string) (*mcp.ClientSession, error) {
	var t mcp.Transport
	switch {
	case u.cfg.Launch != nil:
		t = tapLaunched{u}
	case u.cfg.Command != "":
		cmd := exec.Command(u.cfg.Command, u.cfg.Args...)
		cmd.Dir = u.cfg.Dir
		cmd.Stderr = u.cfg.Stderr
		if len(u.cfg.Env) > 0 {
			env := os.Environ()
			for k, v := range u.cfg.Env {
				env = append(env, k+"="+v)
			}
			cmd.Env = env
		}
		t = tapCommand{&mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, u}
	default:
		hc := &http.Client{}
		if u.cfg.HTTPClient != nil {
			*hc = *u.cfg.HTTPClient
		}
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		if len(u.cfg.Headers) > 0 {
			base = headerTransport{base, u.cfg.Headers}
		}
		if principal != nil {
			base = principalTransport{base, *principal}
		}
		hc.Transport = tapTransport{base, u}
		if u.cfg.SSE {
			t = &mcp.SSEClientTransport{Endpoint: u.cfg.URL, HTTPClient: hc}
		} else {
			t = &mcp.StreamableClientTransport{Endpoint: u.cfg.URL, HTTPClient: hc}
		}
	}
	cs, err := u.client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: u.opts.ProtocolVersion})
	if err != nil {
		return nil, err
	}
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Logging != nil {
		// Ask for everything: each downstream client filters by its own level.
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			u.log.Debug("logging/setLevel refused", "err", err)
		}
	}
	return cs, nil
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// principalTransport puts a principal in the context of every request.
type principalTransport struct {
	base      http.RoundTripper
	principal string
}

func (p principalTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return p.base.RoundTrip(r.WithContext(context.WithValue(r.Context(), principalKey{}, p.principal)))
}

// sessionFor returns the session a call made in ctx goes over, and what
// to call when the call is done with it: with Config.PerPrincipal, the
// calling principal's own, made on its first call (a failure, such as
// auth_required, is that call's error and every call's that waited for
// the same making; the next call tries again); otherwise, or for the local
// principal, the gateway's. One principal's making never waits for
// another's.
func (u *Upstream) sessionFor(ctx context.Context) (*mcp.ClientSession, func(), error) {
	p, ok := PrincipalFromContext(ctx)
	if !u.cfg.PerPrincipal || !ok || p == "" {
		cs, err := u.Session(ctx)
		return cs, func() {}, err
	}
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil, nil, tool.Errorf(tool.Unavailable, "upstream %s is closed", u.cfg.Name)
	}
	ps := u.principals[p]
	fresh := ps == nil
	var evicted *mcp.ClientSession
	if fresh {
		var full bool
		if evicted, full = u.makeRoomLocked(); full {
			u.mu.Unlock()
			return nil, nil, tool.Errorf(tool.Unavailable, "upstream %s has a call in flight on each of its %d principals' sessions", u.cfg.Name, u.cfg.MaxPrincipals).
				WithRetry(time.Second).WithSuggestion("retry in a moment")
		}
		ps = &principalSession{ready: make(chan struct{})}
		if u.principals == nil {
			u.principals = map[string]*principalSession{}
		}
		u.principals[p] = ps
	}
	ps.calls++ // held from here: an idle timer or the bound never closes it under this call
	ps.stopIdle()
	u.mu.Unlock()
	if evicted != nil {
		evicted.Close()
	}
	if fresh { // made apart, so that this call too stops waiting when its ctx ends
		go u.dialPrincipal(ctx, p, ps)
	}
	select {
	case <-ps.ready:
	case <-ctx.Done():
		u.release(p, ps)
		return nil, nil, tool.AsError(ctx.Err())
	}
	if ps.err != nil {
		u.release(p, ps)
		return nil, nil, ps.err
	}
	return ps.cs, func() { u.release(p, ps) }, nil
}

// principalSession is one principal's session: being made until ready is
// closed, then cs (or err, and it is no longer in Upstream.principals).
// Its other fields are under Upstream.mu.
type principalSession struct {
	ready chan struct{}
	cs    *mcp.ClientSession
	err   error
	calls int         // calls holding it (waiting for it, or using it)
	last  time.Time   // when the last call let go of it
	idle  *time.Timer // closes it Config.PrincipalIdle after the last call let go
	ends  uint64      // counts the calls that let go: an idle timer set before a later one does nothing
}

func (ps *principalSession) stopIdle() {
	if ps.idle != nil {
		ps.idle.Stop()
	}
}

// dialPrincipal makes ps, principal p's session, and closes ps.ready.
func (u *Upstream) dialPrincipal(ctx context.Context, p string, ps *principalSession) {
	// The session outlives this call: its context ends only the dial.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), connectTimeout)
	defer cancel()
	cs, err := u.dialAs(dctx, &p)
	if te := (*tool.Error)(nil); errors.As(err, &te) {
		err = te // auth_required: the principal has not signed in
	} else if err != nil {
		err = u.unavailable(err, 0)
	}
	u.mu.Lock()
	if err == nil && u.closed {
		err = tool.Errorf(tool.Unavailable, "upstream %s is closed", u.cfg.Name)
	}
	if err != nil {
		if u.principals[p] == ps {
			delete(u.principals, p)
		}
	} else {
		ps.cs = cs
		if ps.calls == 0 { // every call that waited for it has gone
			u.idleLocked(p, ps)
		}
	}
	ps.err = err
	close(ps.ready)
	u.mu.Unlock()
	if err != nil {
		if cs != nil {
			cs.Close()
		}
		return
	}
	go func() { // a session that ends is made again on the next call
		cs.Wait()
		u.mu.Lock()
		if u.principals[p] == ps {
			delete(u.principals, p)
			ps.stopIdle()
		}
		u.mu.Unlock()
	}()
}

// release lets go of ps for one call; the last to let go of a made session
// starts its idle timer (dialPrincipal does, for a session made after every
// call that waited for it has gone).
func (u *Upstream) release(p string, ps *principalSession) {
	u.mu.Lock()
	defer u.mu.Unlock()
	ps.calls--
	ps.ends++
	ps.last = time.Now()
	if ps.calls > 0 || ps.cs == nil || u.principals[p] != ps {
		return
	}
	u.idleLocked(p, ps)
}

// idleLocked starts ps's idle timer, under mu: it closes ps after
// Config.PrincipalIdle unless a call has held it since.
func (u *Upstream) idleLocked(p string, ps *principalSession) {
	ends := ps.ends
	ps.idle = time.AfterFunc(u.cfg.PrincipalIdle, func() {
		u.mu.Lock()
		if u.principals[p] != ps || ps.calls > 0 || ps.ends != ends {
			u.mu.Unlock()
			return
		}
		delete(u.principals, p)
		u.mu.Unlock()
		ps.cs.Close()
	})
}

// makeRoomLocked makes room for one more principal's session under
// Config.MaxPrincipals: it takes out the session let go of longest ago
// that no call holds, and returns it for the caller to close (outside
// mu); full says that every session is held.
func (u *Upstream) makeRoomLocked() (evicted *mcp.ClientSession, full bool) {
	if len(u.principals) < u.cfg.MaxPrincipals {
		return nil, false
	}
	var oldest string
	var victim *principalSession
	for p, ps := range u.principals {
		if ps.calls == 0 && ps.cs != nil && (victim == nil || ps.last.Before(victim.last)) {
			oldest, victim = p, ps
		}
	}
	if victim == nil {
		return nil, true
	}
	delete(u.principals, oldest)
	victim.stopIdle()
	return victim.cs, false
}

// watch marks the upstream down when cs ends.
func (u *Upstream) watch(cs *mcp.ClientSession) {
	u.down(cs, cs.Wait())
}

// down marks the upstream down when its session is cs, which ended (err:
// why, when known): the next call reconnects at once. A call that found
// cs closed calls it too, before watch's Wait returns (which waits for
// the transport's Close: a boxed upstream's takes up to seconds), so that
// the call after it does not take the dead session again.
func (u *Upstream) down(cs *mcp.ClientSession, err error) {
	u.mu.Lock()
	if u.cs != cs {
		u.mu.Unlock()
		return
	}
	u.cs = nil
	u.lastErr = errors.New("the connection ended")
	if err != nil {
		u.lastErr = fmt.Errorf("the connection ended: %w", err)
	}
	u.retryAt = time.Time{} // the next call reconnects at once
	closed := u.closed
	u.mu.Unlock()
	if !closed {
		u.log.Warn("upstream went away; the next call reconnects", "err", err)
	}
}

// Session returns the live session, reconnecting when the upstream is down
// and the backoff allows. Its error is a retryable "unavailable"
// *tool.Error.
func (u *Upstream) Session(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	cs, closed := u.cs, u.closed
	u.mu.Unlock()
	if cs != nil {
		return cs, nil
	}
	if closed {
		return nil, tool.Errorf(tool.Unavailable, "upstream %s is closed", u.cfg.Name).
			WithSuggestion("the gateway is shutting down; do not retry")
	}
	u.connecting.Lock()
	defer u.connecting.Unlock()
	u.mu.Lock()
	cs, retryAt, last := u.cs, u.retryAt, u.lastErr
	u.mu.Unlock()
	if cs != nil { // another call reconnected meanwhile
		return cs, nil
	}
	if wait := time.Until(retryAt); wait > 0 {
		return nil, u.unavailable(last, wait)
	}
	cs, err := u.dial(ctx)
	var tools []tool.Tool
	if err == nil {
		if tools, err = u.listTools(ctx, cs); err != nil {
			cs.Close()
		}
	}
	u.mu.Lock()
	if te := (*tool.Error)(nil); errors.As(err, &te) && te.Type == tool.AuthRequired {
		u.mu.Unlock() // waits for a person, not for the server: no backoff
		return nil, te
	}
	if err != nil {
		u.wait = min(max(2*u.wait, minBackoff), maxBackoff)
		u.retryAt = time.Now().Add(u.wait)
		u.lastErr = err
		wait := u.wait
		u.mu.Unlock()
		u.log.Warn("reconnecting failed", "err", err, "retry_in", wait)
		return nil, u.unavailable(err, wait)
	}
	if u.closed {
		u.mu.Unlock()
		cs.Close()
		return nil, tool.Errorf(tool.Unavailable, "upstream %s is closed", u.cfg.Name)
	}
	u.cs, u.tools, u.wait, u.lastErr, u.listed = cs, tools, 0, nil, true
	u.mu.Unlock()
	go u.watch(cs)
	u.log.Info("reconnected")
	u.changed(reconnected)
	return cs, nil
}

// awaitSignIn tries to connect every poll (default 5 s) until it does or
// the upstream is closed; connecting registers its tools (Session tells
// the gateway it reconnected). A try without a sign-in costs nothing
// upstream: the credentials say auth_required before any request.
func (u *Upstream) awaitSignIn(poll time.Duration) {
	if poll <= 0 {
		poll = 5 * time.Second
	}
	for {
		time.Sleep(poll)
		u.mu.Lock()
		up, closed := u.cs != nil, u.closed
		u.mu.Unlock()
		if up || closed {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
		_, err := u.Session(ctx)
		cancel()
		if err == nil {
			return
		}
	}
}

// unavailable is the error of a call made while the upstream is down.
func (u *Upstream) unavailable(cause error, wait time.Duration) *tool.Error {
	msg := fmt.Sprintf("upstream MCP server %s is unavailable", u.cfg.Name)
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return tool.Errorf(tool.Unavailable, "%s", msg).WithRetry(wait).
		WithSuggestion("retry later; if it keeps failing, the upstream server is down or misconfigured")
}

// changed tells the gateway what may have changed.
func (u *Upstream) changed(k changeKind) {
	if f := u.onChange; f != nil {
		f(k)
	}
}

// refreshTools lists the tools again after tools/list_changed.
func (u *Upstream) refreshTools() {
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	u.mu.Lock()
	cs := u.cs
	u.mu.Unlock()
	if cs == nil {
		return
	}
	tools, err := u.listTools(ctx, cs)
	if err != nil {
		u.log.Warn("listing tools after list_changed failed", "err", err)
		return
	}
	u.mu.Lock()
	if u.cs == cs {
		u.tools = tools
	}
	u.mu.Unlock()
	u.changed(changedTools)
}
