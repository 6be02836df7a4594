package sandboxes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/runner"
	"github.com/toolgate/toolgate/tool"
)

// Options configure Sandboxes.
type Options struct {
	// Backend places the sandboxes.
	Backend Backend
	// Secret is the runners' secret: the bearer of sandbox id is
	// runner.Token(Secret, id).
	Secret []byte
	// State keeps the mapping (nil: NewMemoryState, this process alone;
	// store.RedisSandboxes shares it between replicas).
	State policy.SandboxMap
	// HTTPClient reaches the sandboxes' runners (nil: a client without a
	// timeout; calls are bounded by their context). A test maps a pod's
	// address to a loopback runner with its Transport. Calls to a plain
	// http:// runner it reaches without a proxy go through the hop, which
	// dials with its *http.Transport's DialContext.
	HTTPClient *http.Client
	// Idle is how long a sandbox may go without a call before Reap
	// deletes it (0: never); Max how many may exist at once (0: no cap).
	Idle time.Duration
	Max  int
	// EnsureTimeout bounds making a sandbox and waiting until it answers
	// (0: 2 minutes); past it the call is unavailable.
	EnsureTimeout time.Duration
	// Logger receives what an operator should know (nil: discarded).
	Logger *slog.Logger
	// Workspace is the folder the gateway's path rules resolve against
	// (policy's sandbox.workspace): a forwarded call names files relative
	// to it, and an absolute path inside it is sent relative (the runner
	// keeps each workspace elsewhere); any other absolute path is refused.
	Workspace string
	// PathParams names a tool's parameters that hold paths and those that
	// hold patches, and PatchPaths the paths a patch names, as the
	// gateway's path rules read them (the CLI gives policy.PathParams and
	// policy.PatchPaths). Without them no argument is read as a path.
	PathParams func(tool.Definition) (paths, patches []string)
	PatchPaths func(patch string) []string
}

// Sandboxes forwards the calls of tools to the sandbox of their key
// (principal, conversation), making it when needed. It is safe for
// concurrent use.
type Sandboxes struct {
	o      Options
	client *http.Client
	hop    *hop // nil: every call goes through client
	log    *slog.Logger

	mu      sync.Mutex
	conns   map[string]*conn
	flights map[string]*flight
	touched map[string]time.Time
	closed  bool
	events  func(tool.Call, runner.ProcessEvent)

	evmu  sync.Mutex       // told in order, one result at a time
	acked map[string]acked // by sandbox id: what this replica told

	kmu  sync.Mutex
	keys map[[2]string]keyed // by (principal, conversation), exactly
}

// keyed is what a key (principal, conversation) hashes to: its sandbox id
// and the Key a backend labels it with.
type keyed struct {
	id  string
	key Key
}

// Keys remembered (keyOf): at most maxKeys, each of at most maxKeyBytes.
const (
	maxKeys     = 4096
	maxKeyBytes = 512
)

// keyOf is the sandbox id and Key of (principal, conversation), remembered
// so that a conversation's calls do not hash them again (three SHA-256 a
// call). The map's key is the pair itself, compared whole: no two pairs
// share an entry.
func (s *Sandboxes) keyOf(principal, conversation string) keyed {
	k := [2]string{principal, conversation}
	s.kmu.Lock()
	v, ok := s.keys[k]
	s.kmu.Unlock()
	if ok {
		return v
	}
	v = keyed{id: ID(principal, conversation), key: Key{Principal: Hash(principal), Conversation: Hash(conversation)}}
	if len(principal)+len(conversation) <= maxKeyBytes {
		s.kmu.Lock()
		if len(s.keys) >= maxKeys {
			clear(s.keys)
		}
		s.keys[k] = v
		s.kmu.Unlock()
	}
	return v
}

// conn is where this replica reaches one sandbox: its runner's call
// endpoint (through the hop when it fits) and the sandbox's bearer.
type conn struct {
	id, bearer string
	u          *url.URL
	addr       string // the hop dials: u's host and port (80 when it names none); "" through net/http
	broken     bool   // guarded by Sandboxes.mu
}

// lean says whether c's calls go through the hop.
func (c *conn) lean() bool { return c.addr != "" }

// flight is one replica's making of a conn, which other calls of the same
// id wait for.
type flight struct {
	done chan struct{}
	c    *conn
	err  error
}

// made says what acquiring a sandbox did: whether it was created, and
// whether it was created anew (its key had a sandbox that is gone).
type made struct{ created, anew bool }

// New checks o.
func New(o Options) (*Sandboxes, error) {
	if o.Backend == nil {
		return nil, errors.New("sandboxes: Options.Backend is required")
	}
	if err := runner.CheckSecret(o.Secret); err != nil {
		return nil, fmt.Errorf("sandboxes: %w", err)
	}
	if o.State == nil {
		o.State = NewMemoryState()
	}
	if o.EnsureTimeout <= 0 {
		o.EnsureTimeout = 2 * time.Minute
	}
	s := &Sandboxes{o: o, log: o.Logger, conns: map[string]*conn{}, flights: map[string]*flight{}, touched: map[string]time.Time{}, acked: map[string]acked{}, keys: map[[2]string]keyed{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.client = o.HTTPClient
	if s.client == nil {
		s.client = &http.Client{}
	}
	s.hop = newHop(s.client)
	return s, nil
}

// Close forgets this replica's sandboxes and closes its idle connections
// to them (the sandboxes stay: other replicas and the reaper own them).
func (s *Sandboxes) Close() error {
	s.mu.Lock()
	s.conns, s.closed = map[string]*conn{}, true
	s.mu.Unlock()
	s.hop.close()
	s.client.CloseIdleConnections()
	return nil
}

// Tools returns a tool for each of defs whose calls run in the caller's
// sandbox: same definition, the call forwarded. The engine that runs them
// governs them as it would local tools (policy, approvals, limits,
// redaction, budgets, audit); a tool that asks for approval (a dangerous
// command) is asked in the gateway, and its approved call runs approved
// in the sandbox.
func (s *Sandboxes) Tools(defs []tool.Definition) []tool.Tool {
	out := make([]tool.Tool, len(defs))
	for i, d := range defs {
		f := &forwarded{s: s, def: d}
		if s.o.PathParams != nil {
			f.paths, f.patches = s.o.PathParams(d)
		}
		if s.o.PatchPaths == nil {
			f.patches = nil
		}
		out[i] = f
	}
	return out
}

// forwarded is a tool whose calls run in a sandbox.
type forwarded struct {
	s              *Sandboxes
	def            tool.Definition
	paths, patches []string // its parameters holding paths and patches, as the policy reads them
}

func (f *forwarded) Definition() tool.Definition { return f.def }

// Inline says that the engine runs f on its caller's goroutine
// (engine.Inliner): a forwarded call waits for its sandbox, and returns
// as soon as its context ends (the hop closes its connection, net/http
// cancels its request; every wait before selects on it).
func (f *forwarded) Inline() bool { return true }

// MetaSandbox is the Result.Meta key naming the sandbox a call ran in:
// {"id": ID, "new": true when this call made it}.
const MetaSandbox = "toolgate/sandbox"

// Run forwards the call to the sandbox of (call.Principal, call.Session).
// A call that met a broken connection is retried once (on the same key's
// sandbox, made anew if it is gone) when the tool only reads and the call
// provably did not run (its request never reached the runner, or the
// runner answered that the sandbox is gone or the token is not its);
// otherwise it is unavailable, saying whether it may have run. No call is
// sent twice once it may have reached a sandbox.
func (f *forwarded) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	s := f.s
	args, err := f.relative(call.Args)
	if err != nil {
		return tool.ErrorResult(tool.AsError(err)), nil
	}
	call.Args = args
	k := s.keyOf(call.Principal, call.Session)
	id := k.id
	ctx = WithKey(ctx, k.key) // a backend's labels
	var m made
	for try := 0; ; try++ {
		c, mm, err := s.acquire(ctx, id)
		if err != nil {
			return tool.ErrorResult(s.acquireError(id, err)), nil
		}
		m.created, m.anew = m.created || mm.created, m.anew || mm.anew
		at := &attempt{ack: s.ack(id)}
		res := s.send(ctx, c, call, at)
		broke := at.failed
		res = s.tell(call, id, res)
		if !broke || ctx.Err() != nil {
			if ctx.Err() != nil && broke {
				s.drop(c)
			}
			return mark(res, id, m), nil
		}
		s.drop(c)
		if try == 0 && f.def.Annotations.ReadOnly && at.notRun() {
			continue // a read or a listing that did not run: once more, on the key's sandbox
		}
		what := "the connection broke while the call ran: whether it ran is unknown"
		switch {
		case !at.got.Load():
			what = "the call did not reach it, so it did not run"
		case at.turned:
			what = "it turned the call away, so it did not run"
		}
		e := tool.Errorf(tool.Unavailable, "sandbox %s is unavailable (%s; %s)", id, at.reason(res), what).WithRetry(time.Second).
			WithSuggestion("retry in a moment: the next call reaches the sandbox again, or makes a new one (its result then says that the workspace is new); check what a command changed before running it again").
			WithDetail("sandbox", id)
		return mark(tool.ErrorResult(e), id, m), nil
	}
}

// OnProcessEvent sets the function told of each event of a process in a
// sandbox, with the call whose result carried it (its principal and
// conversation are the sandbox's): the audit log's. The runner keeps each
// event until this replica has told it and acknowledged it on a later
// request (runner.Events), so an event after the last call is told at the
// next one, and one whose result was lost (an error, a timeout, a
// cancelled call) at the next result. Each is told once per replica;
// with several replicas one may be told by two of them (its Seq says so).
// Events a runner kept that no result carried are lost when the runner
// stops (or the sandbox is made anew): the next result comes from a new
// opening (epoch), and a "lost" event is told first, saying after which
// event of the old one (its Seq) and how many of its processes had not
// ended as told (its Bytes; their ends are among those lost). Nil: none.
func (s *Sandboxes) OnProcessEvent(fn func(tool.Call, runner.ProcessEvent)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = fn
}

// acked is what this replica has told of a sandbox's process events: up
// to Seq of the runner's Epoch, and the processes started that had not
// ended as told.
type acked struct {
	epoch   string
	seq     uint64
	running map[string]bool
	owner   tool.Call // the principal and session of the last call that told some
}

// ack is the runner.AckHeader value for sandbox id ("" none yet).
func (s *Sandboxes) ack(id string) string {
	s.evmu.Lock()
	defer s.evmu.Unlock()
	a, ok := s.acked[id]
	if !ok {
		return ""
	}
	return runner.Ack(a.epoch, a.seq)
}

// tell hands the process events res carries that this replica has not
// told yet to OnProcessEvent's function, notes the last as acknowledged
// (the next request says so) and takes them out of res.
func (s *Sandboxes) tell(call tool.Call, id string, res tool.Result) tool.Result {
	raw, ok := res.Meta[runner.MetaProcessEvents]
	if !ok {
		return res
	}
	meta := make(map[string]any, len(res.Meta))
	for k, v := range res.Meta {
		if k != runner.MetaProcessEvents {
			meta[k] = v
		}
	}
	res.Meta = meta
	s.mu.Lock()
	fn := s.events
	s.mu.Unlock()
	if fn == nil {
		return res
	}
	var evs runner.ProcessEvents
	if b, err := json.Marshal(raw); err != nil || json.Unmarshal(b, &evs) != nil || evs.Epoch == "" {
		s.log.Warn("a sandbox sent process events that do not decode", "sandbox", id)
		return res
	}
	s.evmu.Lock()
	defer s.evmu.Unlock()
	s.acked[id] = s.told(fn, call, s.acked[id], evs)
	return res
}

// told tells fn the events of evs after those a told (a "lost" one first
// when evs is of another opening) and returns a with them.
func (s *Sandboxes) told(fn func(tool.Call, runner.ProcessEvent), call tool.Call, a acked, evs runner.ProcessEvents) acked {
	a.owner = tool.Call{Principal: call.Principal, Session: call.Session}
	if a.epoch != evs.Epoch { // the sandbox was opened again: its numbers start again
		if a.epoch != "" {
			fn(call, lostEvents(a))
		}
		a = acked{epoch: evs.Epoch, owner: a.owner}
	}
	for _, ev := range evs.Events {
		if ev.Seq <= a.seq {
			continue
		}
		a.seq = ev.Seq
		switch ev.Kind {
		case "opened":
			continue // no process's
		case "start":
			if a.running == nil {
				a.running = map[string]bool{}
			}
			a.running[ev.ID] = true
		case "end":
			delete(a.running, ev.ID)
		}
		fn(call, ev)
	}
	return a
}

// lostEvents is the "lost" event told when the opening a told ended
// before a result carried all its events.
func lostEvents(a acked) runner.ProcessEvent {
	why := fmt.Sprintf("the sandbox's runner opened it again (the runner stopped, or the sandbox was made anew): "+
		"the events its previous opening kept after its event %d, if any, were lost", a.seq)
	if n := len(a.running); n > 0 {
		why += fmt.Sprintf(", among them the ends of %d process(es) that had not ended", n)
	}
	return runner.ProcessEvent{Kind: "lost", Seq: a.seq, Bytes: len(a.running), Reason: why}
}

// mark sets meta["toolgate/sandbox"] and, when the sandbox was made anew,
// says so first in the text.
func mark(res tool.Result, id string, m made) tool.Result {
	res.SetMeta(MetaSandbox, map[string]any{"id": id, "new": m.created})
	if m.anew {
		line := "[toolgate: sandbox " + id + " was made anew: its workspace is new; the files and processes of before are gone]"
		if res.Error != nil {
			e := *res.Error
			e.Message = line + " " + e.Message
			res.Error = &e
			res.Content = tool.ErrorResult(&e).Content
		} else {
			res.Content = append([]tool.Content{tool.TextContent(line)}, res.Content...)
		}
	}
	return res
}

// acquireError is the error of a call whose sandbox could not be had.
func (s *Sandboxes) acquireError(id string, err error) *tool.Error {
	var te *tool.Error
	switch {
	case errors.As(err, &te):
		return te
	case errors.Is(err, ErrTooMany):
		return tool.Errorf(tool.RateLimited, "no new sandbox now: %v (the policy's sandbox max)", err).WithRetry(s.retryAfter()).
			WithSuggestion("retry after retry_after, when idle sandboxes have been deleted; an existing conversation's calls still run").
			WithDetail("sandbox", id)
	case errors.Is(err, context.Canceled):
		return tool.AsError(err)
	}
	return tool.Errorf(tool.Unavailable, "sandbox %s is unavailable: %v", id, err).WithRetry(5*time.Second).
		WithSuggestion("retry in a moment; the call did not run").WithDetail("sandbox", id)
}

// retryAfter is how long a refused new sandbox should wait: until the
// reaper's next pass could free one.
func (s *Sandboxes) retryAfter() time.Duration {
	if s.o.Idle > 0 {
		return s.reapEvery()
	}
	return time.Minute
}

// acquire returns where this replica reaches sandbox id, making the
// sandbox (once, whichever replica races) when needed.
func (s *Sandboxes) acquire(ctx context.Context, id string) (*conn, made, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, made{}, tool.Errorf(tool.Unavailable, "the gateway is shutting down")
	}
	if c := s.conns[id]; c != nil && !c.broken {
		s.mu.Unlock()
		live, err := s.touch(ctx, id)
		if err != nil || live {
			return c, made{}, err
		}
		s.drop(c) // the reaper deleted it: place it again
		return s.acquire(ctx, id)
	}
	if f := s.flights[id]; f != nil {
		s.mu.Unlock()
		select {
		case <-f.done:
			if errors.Is(f.err, context.Canceled) && ctx.Err() == nil {
				return s.acquire(ctx, id) // the caller making it went away, this one has not
			}
			return f.c, made{}, f.err
		case <-ctx.Done():
			return nil, made{}, ctx.Err()
		}
	}
	f := &flight{done: make(chan struct{})}
	s.flights[id] = f
	s.mu.Unlock()

	octx, cancel := context.WithTimeout(ctx, s.o.EnsureTimeout)
	c, m, err := s.open(octx, id)
	cancel()
	s.mu.Lock()
	delete(s.flights, id)
	if err == nil {
		if s.closed {
			c, err = nil, tool.Errorf(tool.Unavailable, "the gateway is shutting down")
		} else {
			s.conns[id] = c
			s.touched[id] = time.Now()
		}
	}
	f.c, f.err = c, err
	s.mu.Unlock()
	close(f.done)
	return c, m, err
}

// open places sandbox id. Placing happens under the
// id's lease (create:ID), which one replica at a time holds to make, find
// or delete (the reaper) the sandbox, so that none of them acts on an
// entry another is changing.
func (s *Sandboxes) open(ctx context.Context, id string) (*conn, made, error) {
	var (
		endpoint string
		m        made
	)
	for endpoint == "" {
		release, got, err := s.o.State.Lock(ctx, "create:"+id, s.o.EnsureTimeout+30*time.Second)
		if err != nil {
			return nil, m, fmt.Errorf("%w: %v", errState, err)
		}
		if !got { // another replica is placing or deleting it: wait, then look again
			select {
			case <-time.After(50 * time.Millisecond):
				continue
			case <-ctx.Done():
				return nil, m, fmt.Errorf("%w: waiting for another replica to make it: %v", ErrUnavailable, ctx.Err())
			}
		}
		endpoint, m, err = s.place(ctx, id)
		release()
		if err != nil {
			return nil, m, err
		}
	}
	// The gateway calls the sandbox at its call endpoint, beside its MCP
	// endpoint (runner.CallRequest).
	base, ok := strings.CutSuffix(endpoint, "/mcp")
	if !ok {
		return nil, m, fmt.Errorf("%w: its endpoint %s is not a runner's (/sandboxes/{id}/mcp)", ErrUnavailable, endpoint)
	}
	u, err := url.Parse(base + "/call")
	if err != nil {
		return nil, m, fmt.Errorf("%w: its endpoint %s: %v", ErrUnavailable, endpoint, err)
	}
	c := &conn{id: id, u: u, bearer: "Bearer " + runner.Token(s.o.Secret, id)}
	if s.hop.fits(u) {
		port := u.Port()
		if port == "" {
			port = "80" // http://runner, http://runner:
		}
		c.addr = net.JoinHostPort(u.Hostname(), port)
	}
	return c, m, nil
}

// place returns the endpoint of sandbox id, under its lease: the one its
// entry names (made again by the backend if it vanished: anew), or, when
// its key has none or its old one is gone, a new one within Max.
func (s *Sandboxes) place(ctx context.Context, id string) (string, made, error) {
	e, had, err := s.o.State.Get(ctx, id)
	if err != nil {
		return "", made{}, fmt.Errorf("%w: %v", errState, err)
	}
	now := time.Now()
	if had && !e.Gone {
		ep, created, err := s.ensure(ctx, id, e.Endpoint)
		if err != nil {
			return "", made{}, err
		}
		if created || ep != e.Endpoint {
			e.Endpoint, e.Last = ep, now
			if created {
				e.Created = now
			}
			err = s.o.State.Put(ctx, e)
		} else {
			_, err = s.o.State.Touch(ctx, id, now) // this call is a use
		}
		if err != nil {
			return "", made{}, fmt.Errorf("%w: %v", errState, err)
		}
		return ep, made{created: created, anew: created}, nil
	}
	if s.o.Max > 0 {
		n, err := s.o.Backend.Count(ctx)
		if err != nil {
			return "", made{}, err
		}
		if n >= s.o.Max {
			return "", made{}, fmt.Errorf("%w: %d sandboxes exist, the most allowed", ErrTooMany, n)
		}
	}
	ep, created, err := s.ensure(ctx, id, "")
	if err != nil {
		return "", made{}, err
	}
	if err := s.o.State.Put(ctx, policy.SandboxEntry{ID: id, Endpoint: ep, Created: now, Last: now}); err != nil {
		return "", made{}, fmt.Errorf("%w: %v", errState, err)
	}
	if had {
		s.log.Info("sandbox made anew", "sandbox", id, "was_created", e.Created)
	}
	return ep, made{created: created, anew: created && had}, nil
}

// relocating is a Backend whose placement of an id may change while its
// sandboxes stay where they were (Runners: the list of URLs changes). It
// is told the endpoint the map has for the sandbox ("" none), so that it
// keeps using, and deletes, the sandbox there rather than leaving it
// behind.
type relocating interface {
	ensureAt(ctx context.Context, id, endpoint string) (string, bool, error)
	deleteAt(ctx context.Context, id, endpoint string) (*runner.ProcessEvents, error)
}

// ensure is Backend.Ensure, at the endpoint the map has when the backend
// is relocating.
func (s *Sandboxes) ensure(ctx context.Context, id, endpoint string) (string, bool, error) {
	if r, ok := s.o.Backend.(relocating); ok {
		return r.ensureAt(ctx, id, endpoint)
	}
	return s.o.Backend.Ensure(ctx, id)
}

// touch records a use of id, at most once per a tenth of Idle per replica
// (the reaper's resolution), none without Idle. It returns false when the
// map says the sandbox is gone (the reaper deleted it): what this replica
// knows of it is stale.
func (s *Sandboxes) touch(ctx context.Context, id string) (bool, error) {
	if s.o.Idle <= 0 {
		return true, nil
	}
	now := time.Now()
	s.mu.Lock()
	last := s.touched[id]
	fresh := now.Sub(last) < s.o.Idle/10
	if !fresh {
		s.touched[id] = now
	}
	s.mu.Unlock()
	if fresh {
		return true, nil
	}
	live, err := s.o.State.Touch(ctx, id, now)
	if err != nil {
		return false, fmt.Errorf("%w: %v", errState, err)
	}
	return live, nil
}

// drop forgets c: the next call of its id places the sandbox again.
func (s *Sandboxes) drop(c *conn) {
	s.mu.Lock()
	c.broken = true
	if s.conns[c.id] == c {
		delete(s.conns, c.id)
	}
	s.mu.Unlock()
}

// dropID forgets sandbox id, if this replica knows it.
func (s *Sandboxes) dropID(id string) {
	s.mu.Lock()
	c := s.conns[id]
	s.mu.Unlock()
	if c != nil {
		s.drop(c)
	}
}

// relative returns args with each absolute path inside the workspace made
// relative to it: the gateway's path rules judged the path against the
// workspace, and the runner, which keeps the workspace in a folder of its
// own, must read the same file. An absolute path elsewhere (the runner's
// real folder, as a command's pwd shows it) is refused: the rules did not
// judge the file it names there. A patch names its files relative.
func (f *forwarded) relative(args json.RawMessage) (json.RawMessage, error) {
	if len(f.paths) == 0 && len(f.patches) == 0 || len(args) == 0 {
		return args, nil
	}
	// An absolute path, in a parameter or a patch, holds a '/' as it is
	// written or escaped ("\/", "\u002f": a backslash); arguments with
	// neither byte name none, and are not decoded to be looked at.
	if bytes.IndexByte(args, '/') < 0 && bytes.IndexByte(args, '\\') < 0 {
		return args, nil
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	if d.Decode(&m) != nil {
		return args, nil // the engine's validation said what is wrong
	}
	ws := path.Clean("/" + filepath.ToSlash(f.s.o.Workspace))
	changed := false
	rel := func(param string, p string) (string, error) {
		p = filepath.ToSlash(p)
		if !strings.HasPrefix(p, "/") {
			return p, nil
		}
		c := path.Clean(p)
		switch {
		case c == ws:
			changed = true
			return ".", nil
		case ws == "/":
			changed = true
			return strings.TrimPrefix(c, "/"), nil
		case strings.HasPrefix(c, ws+"/"):
			changed = true
			return strings.TrimPrefix(c, ws+"/"), nil
		}
		return "", tool.Errorf(tool.PermissionDenied, "%s %q is outside the sandbox's workspace %s", param, p, ws).
			WithSuggestion("name files relative to the workspace (e.g. src/app.py), or under %s", ws)
	}
	for _, name := range f.paths {
		switch v := m[name].(type) {
		case string:
			r, err := rel(name, v)
			if err != nil {
				return nil, err
			}
			m[name] = r
		case []any:
			for i, e := range v {
				if s, ok := e.(string); ok {
					r, err := rel(name, s)
					if err != nil {
						return nil, err
					}
					v[i] = r
				}
			}
		}
	}
	for _, name := range f.patches {
		if p, ok := m[name].(string); ok {
			for _, file := range f.s.o.PatchPaths(p) {
				if strings.HasPrefix(filepath.ToSlash(file), "/") {
					return nil, tool.Errorf(tool.PermissionDenied, "the patch names %q by an absolute path", file).
						WithSuggestion("in a sandbox, a patch names its files relative to the workspace %s", ws)
				}
			}
		}
	}
	if !changed {
		return args, nil
	}
	return json.Marshal(m)
}
