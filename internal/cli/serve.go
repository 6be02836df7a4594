package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/procs"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/telemetry"
)

func newServeCmd(s *streams) *cobra.Command {
	var c common
	var addr string
	var allowRemote, deferTools, stateless bool
	var maxRequest int64
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the governed tools over MCP (stdio, or streamable HTTP with --http)",
		Long: `Serve the built-in tools to MCP clients (Claude Desktop, Claude Code, Cursor,
VS Code, …). Every tools/call runs through the governed pipeline: policy,
limits, output budget and the audit log apply as for 'toolgate call', and the
audit records name the client (its clientInfo.name) and the MCP session.

Without --http the server speaks MCP on standard input and output (one client);
it then runs its Go code on one processor, which costs less CPU per call, and
gives a search the others while it runs (GOMAXPROCS in the environment wins).
With --http ADDR it serves streamable HTTP at http://ADDR/mcp (many sessions,
SSE streams), on one processor too while calls come one at a time and on all
of them while they overlap; ` + statelessLong + `
With the policy's auth block (docs/auth.md) every request needs
a bearer token (a JWT of the configured issuer, or an API key): the caller is
the call's principal, sees only the tools the policy lets it call, and the
resource metadata is served at /.well-known/oauth-protected-resource. Without
it, requests whose Host or Origin is not this machine are refused, and only
loopback addresses are accepted unless --allow-remote is given (anyone who
can reach the port could use the tools).

The roots (--root, default the current folder) are offered as resources,
files through the file:///{+path} template (reads are governed read_file
calls), with the prompts code_review and explore_project. A client that
offers roots narrows the folders the tools may touch to the parts of its
roots that lie inside --root folders; it never widens them.

With the policy's sandbox.backend runner (or kubernetes) the file and command
tools run in one sandbox per principal and conversation, on a toolgate runner
(or a pod), reached from every replica and still governed here; --root is
then refused, and http_request stays here (docs/deploy.md).

` + commandToolsLong,
		Example: `  toolgate serve --root ~/src/project
  toolgate serve --root . --policy toolgate.yaml --http 127.0.0.1:8765
  claude mcp add toolgate -- toolgate serve --root "$PWD"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var ln net.Listener
			if addr != "" {
				if _, _, err := net.SplitHostPort(addr); err != nil {
					return usageErr("--http %q: want HOST:PORT, e.g. 127.0.0.1:8765", addr)
				}
			}
			roots := c.roots
			if len(roots) == 0 {
				roots = []string{"."}
			}
			// apply_patch names its files inside the patch: refused while a
			// client's roots narrow the session.
			paths := mcpserver.Opaque(mcpserver.DefaultPaths, "apply_patch")
			if stateless && addr == "" {
				return usageErr("--stateless is for --http: stdio is one session")
			}
			ui := newWebConsole(addr)
			c.approver = func(pol *policy.Policy, rc *redis.Client) (policy.Approver, []func() error, error) {
				return mcpApprover(pol, rc, s.err, addr != "" && (stateless || pol.HTTP.Stateless), ui)
			}
			c.warm = true
			c.learn = deferTools
			tel, err := startTelemetry(cmd.Context(), s)
			if err != nil {
				return err
			}
			defer stopTelemetry(tel, s)
			c.clientRoots = mcpserver.ClientRoots(nil, paths)
			st, err := c.build(engine.Options{Limiter: ui.limiter(), TracerProvider: tel.Tracer, MeterProvider: tel.Meter, TelemetryArgumentNames: tel.ArgumentNames})
			if err != nil {
				return err
			}
			defer st.Close()
			if st.unsealed && st.procs != nil {
				slog.New(slog.NewTextHandler(os.Stderr, nil)).Warn("state.redis is set but no secret seals what the replicas share of their processes: " +
					"each process's command line and output stay on the replica that runs it (read_process through another replica answers that they are withheld). " +
					"Set $" + tokenKeyEnv + ", or the variable approvals.state_key_env names (32 bytes or more, the same on every replica; e.g. openssl rand -hex 32), to share them sealed")
			}
			var endSession func(string)
			if st.procs != nil {
				endSession = st.procs.EndSession
			}
			if st.sandboxes != nil {
				// The files are the sandboxes': no folder of this replica is
				// offered as resources. One replica at a time deletes the
				// idle sandboxes (sandbox idle).
				roots = nil
				reap, stop := context.WithCancel(cmd.Context())
				defer stop()
				go st.sandboxes.Reaper(reap)
			}
			var authn *auth.Authenticator
			if addr != "" {
				if err := checkHTTPAddr(addr, allowRemote, st.policy, "the server"); err != nil {
					return err
				}
				if authn, err = authenticator(st.policy); err != nil {
					return err
				}
			}
			logger := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: slog.LevelWarn}))
			if deferTools {
				if err := st.deferTools(tel.Meter, logger); err != nil {
					return err
				}
			}
			srv, err := mcpserver.New(mcpserver.Options{Engine: st.engine, Version: version, Roots: roots, Logger: logger,
				TracerProvider: tel.Tracer, MeterProvider: tel.Meter, OnSessionEnd: endSession})
			if err != nil {
				return usageErr("%v", err)
			}
			defer srv.Close()
			ctx := cmd.Context()
			if addr == "" {
				procs.Narrow() // one client, mostly one call at a time: see internal/procs
				if err := srv.Run(ctx, stdioTransport(s)); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
					return &exitError{exitTool, fmt.Errorf("serving MCP on stdio: %w", err)}
				}
				return nil
			}
			ln, err = net.Listen("tcp", addr)
			if err != nil {
				return &exitError{exitTool, fmt.Errorf("listening on %s: %w", addr, err)}
			}
			o := mcpserver.HTTPOptions{Loopback: mcpserver.IsLoopback(addr), MaxRequestBytes: maxRequest, Stateless: stateless || st.policy.HTTP.Stateless}
			return serveHTTP(ctx, s, srv, ln, o, authn, st.ready, st.level, ui.handler(st.policy, st.engine, c.auditPath, authn, o.Loopback))
		},
	}
	c.register(cmd)
	c.registerComposites(cmd)
	f := cmd.Flags()
	f.BoolVar(&deferTools, "defer-tools", false, "list only tool_search and run_plan at first; tool_search(query) loads the matching tools (tools/list_changed) and learns from the calls that follow (docs/selection.md)")
	f.StringVar(&addr, "http", "", "serve streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:8765) instead of stdio")
	f.BoolVar(&allowRemote, "allow-remote", false, "allow --http on a non-loopback address without the policy's auth block (something in front must authenticate clients)")
	f.Int64Var(&maxRequest, "max-request-bytes", 4<<20, "largest HTTP request body accepted")
	f.BoolVar(&stateless, "stateless", false, statelessHelp)
	return cmd
}

// commandToolsLong says where the command tools are offered.
const commandToolsLong = `The command tools (execute_command, run_code and the process tools) run in
toolgate's command sandbox, which needs Linux: on macOS and Windows they are
not offered (the file, web and other tools work), and a command never runs
unconfined. A server measures at start how strong the sandbox is here:
full (every namespace, Landlock, seccomp), reduced (where no namespace may
be made, as in a restricted pod: Landlock, seccomp and rlimits without
namespaces; or namespaces without Landlock, as under gVisor) or none (the
command tools are not offered); /readyz, the audit log (tool "sandbox") and
the metric toolgate.sandbox.level say which, and what is missing. Below the
policy's sandbox.require (full unless it says reduced) the command tools
answer sandbox_violation, naming what is missing and what gives it.`

// statelessHelp and statelessLong describe --stateless to serve and proxy.
const (
	statelessHelp = "with --http: no Mcp-Session-Id, every request answered on its own by any replica (also http.stateless in the policy); approvals go to the console's approvals page"
	statelessLong = `with --stateless (or http.stateless
in the policy) it keeps no sessions: every POST is answered on its own, with
no Mcp-Session-Id, so replicas behind a load balancer (sharing state.redis)
answer any request. Elicitation needs a session: a stateless server asks a
person only through the console's approvals page (console.approvals, or
approvals.http); the loop guard and
the denial breaker count per conversation the client names in
params._meta["toolgate/conversation"], per principal without one.
/healthz answers 200 while the process is up and /readyz 200 while its
stores answer (Redis with state.redis), else 503 with a short JSON reason;
both are served without authentication and reveal nothing else.`
)

// serveHTTP serves srv at /mcp on ln until ctx ends; with authn, only to
// authenticated callers, and with the resource metadata published. The
// probes /healthz and /readyz (ready: nil, or it returns nil) are served
// beside it to anyone: they say nothing but up, ready or a short reason,
// and /readyz the sandbox's level (level, when measured).
// The web console ui (nil: none) is served under /ui/; it authenticates
// its users itself, as /mcp does.
// More documents (more: path → handler, e.g. a Client ID Metadata
// Document) are served beside them to anyone. Its Go code runs on one
// processor while the requests to /mcp come one at a time, on all of them
// while they overlap (countCalls).
func serveHTTP(ctx context.Context, s *streams, srv *mcpserver.Server, ln net.Listener, o mcpserver.HTTPOptions, authn *auth.Authenticator, ready func(context.Context) error, level *sandbox.Level, ui http.Handler, more ...map[string]http.Handler) error {
	mux := http.NewServeMux()
	for _, m := range more {
		for path, h := range m {
			mux.Handle("GET "+path, h)
		}
	}
	probes(mux, ready, level)
	h := srv.Handler(o)
	if authn != nil {
		h = authn.Middleware(h)
		for _, p := range authn.MetadataPaths() {
			mux.Handle(p, authn.MetadataHandler())
		}
	}
	procs.Narrow() // and widened while requests overlap: see countCalls
	mux.Handle("/mcp", countCalls(&procs.Demand{Calm: 100 * time.Millisecond}, h))
	if ui != nil {
		mux.Handle("/ui/", ui)
	}
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          nil,
	}
	mode := "sessions"
	if o.Stateless {
		mode = "stateless"
	}
	fmt.Fprintf(s.err, "toolgate: serving MCP at http://%s/mcp (%s, %s)\n", ln.Addr(), authNote(authn), mode)
	if ui != nil {
		note := ""
		if n, ok := ui.(interface{ Note() string }); ok {
			note = n.Note()
		}
		fmt.Fprintf(s.err, "toolgate: console at http://%s/ui/%s\n", ln.Addr(), note)
		if c, ok := ui.(interface{ Close() }); ok {
			hs.RegisterOnShutdown(c.Close) // its event streams would hold the shutdown
		}
	}
	return serveUntil(ctx, hs, ln)
}

// countCalls counts the requests to next, the MCP endpoint, on d (Begin
// to End), so the process widens while calls overlap, but for GETs: a GET
// to an MCP endpoint is a session's standalone stream, open as long as the
// session and idle, and counting it would keep the process wide for a
// client whose calls come one at a time beside it.
func countCalls(d *procs.Demand, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			d.Begin()
			defer d.End()
		}
		next.ServeHTTP(w, r)
	})
}

// probes adds /healthz (200 while the process is up) and /readyz (200
// while ready answers nil, else 503 and its reason) to mux, as JSON;
// /readyz also carries the sandbox's level (level, level.missing) when
// it was measured. A level below sandbox.require is not unreadiness: the
// other tools work, and the command tools say what is missing.
func probes(mux *http.ServeMux, ready func(context.Context) error, level *sandbox.Level) {
	answer := func(w http.ResponseWriter, code int, body map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(body)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		answer(w, http.StatusOK, map[string]any{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		body := map[string]any{"status": "ready"}
		if level != nil {
			body["sandbox"] = level
		}
		if ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			defer cancel()
			if err := ready(ctx); err != nil {
				body["status"], body["reason"] = "unavailable", err.Error()
				answer(w, http.StatusServiceUnavailable, body)
				return
			}
		}
		answer(w, http.StatusOK, body)
	})
}

// startTelemetry sets up OpenTelemetry from the OTEL_* variables (off
// unless they ask for it), its console exporters writing to standard error
// (never into MCP's standard output). Call it once per process; hand the
// providers to the engine, mcpserver and mcpclient, and stopTelemetry them
// at the end.
func startTelemetry(ctx context.Context, s *streams) (*telemetry.Providers, error) {
	p, err := telemetry.Setup(ctx, telemetry.Options{Stderr: s.err, ServiceVersion: version})
	if err != nil {
		return nil, usageErr("telemetry: %v", err)
	}
	return p, nil
}

// stopTelemetry flushes what the exporters hold, for at most 5 seconds
// (the process is stopping, its context already cancelled).
func stopTelemetry(p *telemetry.Providers, s *streams) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		fmt.Fprintf(s.err, "toolgate: telemetry: %v\n", err)
	}
}

// readyTimeout bounds the check of /readyz, below a probe's usual timeout.
const readyTimeout = 900 * time.Millisecond

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// serveUntil serves hs on ln until ctx ends, then shuts it down: requests
// in flight get 5 s, and a connection whose first request has not come
// whole is closed at once. net/http serves no request it reads once
// Shutdown has begun, but its Shutdown waits for such a connection's
// first request up to 5 s: a client's spare connection, dialed and never
// used, held every stop for the whole 5 s. (It sets hs.ConnState.) A
// listener that fails first is an exit error.
func serveUntil(ctx context.Context, hs *http.Server, ln net.Listener) error {
	var (
		mu      sync.Mutex
		fresh   = map[net.Conn]struct{}{} // in StateNew
		stopped bool
	)
	hs.ConnState = func(nc net.Conn, st http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case st != http.StateNew:
			delete(fresh, nc)
		case stopped:
			nc.Close()
		default:
			fresh[nc] = struct{}{}
		}
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return &exitError{exitTool, fmt.Errorf("serving HTTP: %w", err)}
	case <-ctx.Done():
	}
	mu.Lock()
	stopped = true
	for nc := range fresh {
		nc.Close()
	}
	mu.Unlock()
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(shut)
	return nil
}
