package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// Options configure a Runner.
type Options struct {
	// Dir holds one workspace folder per sandbox id (created if missing).
	Dir string
	// Secret is the runner secret tokens are derived from (CheckSecret).
	Secret []byte
	// Open serves sandbox id whose workspace is the folder dir. It is
	// called once per id, on the first authorised request, and the result
	// kept until Close.
	Open func(id, dir string) (Sandbox, error)
	// Ready reports what /readyz shows beside "ready" (e.g. the
	// protections of the local sandbox), or why the runner cannot serve.
	// Nil: always ready.
	Ready func(context.Context) (map[string]any, error)
	// MaxConns caps the connections Serve holds at once (those it serves
	// and those it handed to net/http). One beyond takes the slot of the
	// oldest on which no request has shown a token and none is in
	// (closed), and is answered 503 and closed when every one has shown a
	// token or has its request in. 0 means DefaultMaxConns.
	MaxConns int
}

// DefaultMaxConns is Options.MaxConns when it is 0: far more than the
// gateways keep (a few per replica), few enough that connections that
// send nothing cannot hold the runner's fds and goroutines unbounded.
const DefaultMaxConns = 1024

// Runner serves sandboxes over HTTP; see the package doc.
type Runner struct {
	opts Options
	dir  string
	root *os.Root

	mu       sync.Mutex
	open     map[string]*Sandbox
	deleting map[string]bool   // being deleted: neither opened nor made until it is gone
	macs     map[string][]byte // the MAC of each id whose token was presented
	closed   bool
}

// Sandbox is what serves one sandbox (Options.Open).
type Sandbox struct {
	// MCP answers its MCP requests (/sandboxes/{id}/mcp).
	MCP http.Handler
	// Call runs one call of a tool, ungoverned, for POST
	// /sandboxes/{id}/call (see Call); ctx ends when the caller goes away
	// and carries the call's progress function (tool.WithProgress) and,
	// for a call the gateway's person approved, tool.WithApproval.
	Call func(ctx context.Context, name string, args json.RawMessage) tool.Result
	// Close ends what it holds (its processes).
	Close func() error
	// Events keeps its process events until a request acknowledges them
	// (AckHeader, on a request to either endpoint); nil: none.
	Events *Events
}

// New checks o and opens Dir.
func New(o Options) (*Runner, error) {
	if err := CheckSecret(o.Secret); err != nil {
		return nil, err
	}
	if o.Open == nil {
		return nil, errors.New("runner: Options.Open is required")
	}
	if o.Dir == "" {
		return nil, errors.New("runner: Options.Dir is required")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("workspaces folder: %w", err)
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("workspaces folder: %w", err)
	}
	return &Runner{opts: o, dir: dir, root: root, open: map[string]*Sandbox{}, macs: map[string][]byte{}}, nil
}

// Dir is the absolute folder of the workspaces.
func (r *Runner) Dir() string { return r.dir }

// maxConns is Options.MaxConns, or DefaultMaxConns.
func (r *Runner) maxConns() int {
	if r.opts.MaxConns > 0 {
		return r.opts.MaxConns
	}
	return DefaultMaxConns
}

// Close ends every open sandbox; the workspaces stay on disk.
func (r *Runner) Close() error {
	r.mu.Lock()
	open := r.open
	r.open, r.closed = nil, true
	r.mu.Unlock()
	var errs []error
	for _, s := range open {
		errs = append(errs, s.Close())
	}
	errs = append(errs, r.root.Close())
	return errors.Join(errs...)
}

// Handler serves the probes, /sandboxes/{id}/mcp and /sandboxes/{id}/call
// (see the package doc).
func (r *Runner) Handler() http.Handler {
	return http.HandlerFunc(r.serveHTTP)
}

func (r *Runner) serveHTTP(w http.ResponseWriter, req *http.Request) {
	switch req.URL.Path {
	case "/healthz", "/readyz":
		r.probe(w, req)
		return
	}
	// The token first: nothing else is looked at for a request without
	// the token of the id its path names (ListID's for the listing).
	id, rest, sub := "", "", false
	if req.URL.Path == "/sandboxes" {
		id = ListID
	} else if after, ok := strings.CutPrefix(req.URL.Path, "/sandboxes/"); ok {
		id, rest, sub = strings.Cut(after, "/")
		if ValidID(id) != nil {
			id = ""
		}
	}
	if id == "" || !r.authorized(id, req.Header.Get("Authorization")) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolgate-runner"`)
		answer(w, http.StatusUnauthorized, map[string]any{"error": "unauthorized",
			"message": "every request needs Authorization: Bearer with the token of the sandbox id in its path"})
		return
	}
	if !r.proveRequest(req) {
		return // its connection was closed to free its slot (Serve)
	}
	switch {
	case id == ListID:
		r.list(w, req)
	case !sub:
		r.manage(w, req, id)
	case rest == "mcp" || rest == "call":
		s, err := r.sandbox(id)
		if errors.Is(err, fs.ErrNotExist) {
			answer(w, http.StatusNotFound, map[string]any{"error": "not_found",
				"message": fmt.Sprintf("sandbox %s does not exist on this runner (it was deleted, or the runner started on another --dir): make it with PUT /sandboxes/%s", id, id)})
			return
		}
		if err != nil {
			answer(w, http.StatusServiceUnavailable, map[string]any{"error": "unavailable", "message": err.Error()})
			return
		}
		if epoch, seq, ok := ParseAck(req.Header.Get(AckHeader)); ok && s.Events != nil {
			s.Events.Ack(epoch, seq)
		}
		if rest == "call" {
			serveCall(w, req, s.Call)
			return
		}
		s.MCP.ServeHTTP(w, req)
	default:
		answer(w, http.StatusNotFound, map[string]any{"error": "not_found", "message": "this runner serves /sandboxes/{id}/mcp and /sandboxes/{id}/call"})
	}
}

// authorized says whether authorization presents the token of id. The
// MAC of an id is kept once its token was presented, so that a sandbox's
// calls do not each compute it again (only ids a holder of the secret
// named are kept, so a caller without it cannot grow the map); Delete
// drops it.
func (r *Runner) authorized(id, authorization string) bool {
	r.mu.Lock()
	want := r.macs[id]
	r.mu.Unlock()
	if want != nil {
		return presents(authorization, want)
	}
	want = mac(r.opts.Secret, id)
	if !presents(authorization, want) {
		return false
	}
	r.mu.Lock()
	r.macs[id] = want
	r.mu.Unlock()
	return true
}

// manage answers /sandboxes/{id}: PUT makes the sandbox unless it exists
// (201 made, 200 it was there), DELETE ends it and removes its workspace
// (204, also when there was none; 200 with DeletedEvents when it kept
// process events no result carried, which a 500 carries too).
func (r *Runner) manage(w http.ResponseWriter, req *http.Request, id string) {
	switch req.Method {
	case http.MethodPut:
		created, err := r.Ensure(id)
		if err != nil {
			answer(w, http.StatusServiceUnavailable, map[string]any{"error": "unavailable", "message": err.Error()})
			return
		}
		code := http.StatusOK
		if created {
			code = http.StatusCreated
		}
		answer(w, code, map[string]any{"id": id, "created": created})
	case http.MethodDelete:
		evs, err := r.remove(id)
		switch {
		case err != nil && evs != nil: // its processes stopped: their events go all the same
			answer(w, http.StatusInternalServerError, map[string]any{"error": "internal", "message": err.Error(), "process_events": *evs})
		case err != nil:
			answer(w, http.StatusInternalServerError, map[string]any{"error": "internal", "message": err.Error()})
		case evs != nil:
			answer(w, http.StatusOK, map[string]any{"process_events": *evs})
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	default:
		w.Header().Set("Allow", "PUT, DELETE")
		answer(w, http.StatusMethodNotAllowed, map[string]any{"error": "method_not_allowed", "message": "PUT makes a sandbox, DELETE removes it"})
	}
}

// list answers GET /sandboxes: the ids of the workspaces under Dir.
func (r *Runner) list(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		answer(w, http.StatusMethodNotAllowed, map[string]any{"error": "method_not_allowed"})
		return
	}
	ids, err := r.List()
	if err != nil {
		answer(w, http.StatusInternalServerError, map[string]any{"error": "internal", "message": err.Error()})
		return
	}
	answer(w, http.StatusOK, map[string]any{"sandboxes": ids})
}

// Ensure makes the workspace of sandbox id unless it exists, and says
// whether it made it.
func (r *Runner) Ensure(id string) (created bool, err error) {
	if err := ValidID(id); err != nil {
		return false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false, errors.New("the runner is stopping")
	}
	if r.deleting[id] {
		return false, fmt.Errorf("sandbox %s is being deleted: ask again when it is gone", id)
	}
	err = r.root.Mkdir(id, 0o700)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return false, fmt.Errorf("sandbox %s: creating its workspace: %w", id, err)
	}
	// A real folder, never a link planted in Dir.
	if fi, err := r.root.Lstat(id); err != nil || !fi.IsDir() {
		return false, fmt.Errorf("sandbox %s: its workspace is not a folder", id)
	}
	return err == nil, nil
}

// Delete ends sandbox id (what its Open returned is closed: its processes
// stop) and removes its workspace; one that does not exist is no error.
func (r *Runner) Delete(id string) error {
	_, err := r.remove(id)
	return err
}

// remove is Delete, returning the process events the sandbox kept that no
// result carried, once its processes stopped (their ends among them); nil
// when none.
func (r *Runner) remove(id string) (*ProcessEvents, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.deleting[id] {
		r.mu.Unlock()
		return nil, fmt.Errorf("sandbox %s is being deleted", id)
	}
	s := r.open[id]
	delete(r.open, id)
	delete(r.macs, id)
	if r.deleting == nil {
		r.deleting = map[string]bool{}
	}
	r.deleting[id] = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.deleting, id)
		r.mu.Unlock()
	}()
	var errs []error
	var kept *ProcessEvents
	if s != nil {
		errs = append(errs, s.Close())
		if s.Events != nil {
			if evs, ok := s.Events.Pending(); ok {
				kept = &evs
			}
		}
	}
	if err := r.root.RemoveAll(id); err != nil {
		errs = append(errs, fmt.Errorf("sandbox %s: removing its workspace: %w", id, err))
	}
	return kept, errors.Join(errs...)
}

// List returns the ids of the workspaces under Dir, sorted.
func (r *Runner) List() ([]string, error) {
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return nil, err
	}
	ids := []string{}
	for _, e := range entries {
		if e.IsDir() && ValidID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// sandbox returns the open sandbox id, opening it on its first request
// since the runner started; its workspace must exist (Ensure), else the
// error is fs.ErrNotExist.
func (r *Runner) sandbox(id string) (*Sandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("the runner is stopping")
	}
	if r.deleting[id] {
		return nil, fs.ErrNotExist // as good as gone
	}
	if s, ok := r.open[id]; ok {
		return s, nil
	}
	fi, err := r.root.Lstat(id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fs.ErrNotExist
	}
	if err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("sandbox %s: its workspace is not a folder", id)
	}
	s, err := r.opts.Open(id, filepath.Join(r.dir, id))
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", id, err)
	}
	r.open[id] = &s
	return &s, nil
}

// probe answers /healthz (up) and /readyz (Options.Ready), GET or HEAD.
func (r *Runner) probe(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		answer(w, http.StatusMethodNotAllowed, map[string]any{"error": "method_not_allowed"})
		return
	}
	if req.URL.Path == "/healthz" {
		answer(w, http.StatusOK, map[string]any{"status": "ok"})
		return
	}
	body := map[string]any{}
	if r.opts.Ready != nil {
		ctx, cancel := context.WithTimeout(req.Context(), 900*time.Millisecond)
		defer cancel()
		extra, err := r.opts.Ready(ctx)
		if err != nil {
			answer(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "reason": err.Error()})
			return
		}
		for k, v := range extra {
			body[k] = v
		}
	}
	body["status"] = "ready"
	answer(w, http.StatusOK, body)
}

func answer(w http.ResponseWriter, code int, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(body)
}
