package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/runner"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/toolsets/exec"
)

func newRunnerCmd(s *streams) *cobra.Command {
	var addr, dir, tokenEnv, require string
	var maxConns int
	cmd := &cobra.Command{
		Use:   "runner",
		Short: "Serve sandboxes to gateways: one workspace per sandbox id",
		Long: `Serve the sandbox side of remote sandboxes: a gateway (serve with the
policy's sandbox block) calls the tools of sandbox ID with POST
http://ADDR/sandboxes/ID/call (one call, its progress and result back as
JSON lines); an MCP client reaches the same tools over MCP streamable HTTP
at http://ADDR/sandboxes/ID/mcp. Each sandbox has its workspace DIR/ID (kept
across restarts on the same --dir) and the built-in file tools,
execute_command, run_code and the process tools rooted there, every command confined by this
machine's own sandbox. The runner executes and the gateway governs: no
policy, limits, approvals or audit here.

Every request needs "Authorization: Bearer TOKEN" where TOKEN is
HMAC-SHA256 of the sandbox id under the secret in the variable --token-env
names (hex, or unpadded base64url), so any gateway replica holding the
secret can compute it; anything else is answered 401, whatever the path.
The secret is removed from this process's environment at start and never
reaches a command (commands get the sandbox's own environment). /healthz
and /readyz need no token (probes hold none); /readyz says which
protections the local sandbox reached, or 503 when it can run nothing.
Sandbox ids are 1 to 63 letters, digits, '-' and '_'.

At start the runner measures how strongly it can confine a command here
(full, reduced or none, as serve does) and says so on stderr and in
/readyz's "sandbox". Below --require the command tools answer
sandbox_violation naming what is missing; at none they are not offered.`,
		Example: `  export TOOLGATE_RUNNER_SECRET=$(openssl rand -hex 32)
  toolgate runner --listen 0.0.0.0:8790 --dir /var/lib/toolgate/sandboxes --token-env TOOLGATE_RUNNER_SECRET`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return usageErr("--listen %q: want HOST:PORT, e.g. 0.0.0.0:8790", addr)
			}
			if dir == "" {
				return usageErr("--dir is required: the folder that keeps one workspace per sandbox")
			}
			secret := []byte(os.Getenv(tokenEnv))
			if len(secret) == 0 {
				return usageErr("no runner secret: set %s (e.g. export %s=$(openssl rand -hex 32)), the same secret the gateways hold, or name another variable with --token-env", tokenEnv, tokenEnv)
			}
			if err := runner.CheckSecret(secret); err != nil {
				return usageErr("%s: %v", tokenEnv, err)
			}
			if require != sandbox.LevelFull && require != sandbox.LevelReduced {
				return usageErr("--require %q: want full or reduced", require)
			}
			if maxConns < 1 {
				return usageErr("--max-connections %d: want at least 1", maxConns)
			}
			os.Unsetenv(tokenEnv) // nothing started from here inherits it
			return runRunner(cmd.Context(), s, addr, dir, secret, require, maxConns)
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "listen", "", "address to serve on (HOST:PORT), e.g. 0.0.0.0:8790")
	f.StringVar(&dir, "dir", "", "folder of the workspaces, one per sandbox id (created if missing)")
	f.StringVar(&tokenEnv, "token-env", "TOOLGATE_RUNNER_SECRET", "environment variable holding the runner secret (at least 16 bytes)")
	f.StringVar(&require, "require", sandbox.LevelFull, "the lowest sandbox level at which commands run: full or reduced (the gateway policy's sandbox.require)")
	f.IntVar(&maxConns, "max-connections", runner.DefaultMaxConns, "connections held at once; one beyond closes the oldest that showed no token, or is answered 503 when all did")
	return cmd
}

// runRunner serves the sandboxes under dir on addr until ctx ends.
func runRunner(ctx context.Context, s *streams, addr, dir string, secret []byte, require string, maxConns int) error {
	// One local sandbox for all sandboxes, its helpers started ahead, its
	// level measured once.
	native := &sandbox.Native{Prestart: true, Executable: sandboxHelper()}
	native.Warm()
	defer native.Close()
	reduced := &sandbox.Reduced{Executable: sandboxHelper()}
	defer reduced.Close()
	leveled := &sandbox.Leveled{Backend: sandbox.NewChain(native, &sandbox.Bwrap{}, reduced), Require: require}
	level := leveled.Level(ctx)
	fmt.Fprintf(s.err, "toolgate: runner sandbox level %s (require %s)%s\n", level.Level, require, levelDetail(level))
	ready := func(context.Context) (map[string]any, error) {
		if level.Level == sandbox.LevelNone {
			return nil, fmt.Errorf("the local sandbox cannot run commands: %s", strings.Join(level.Missing, "; "))
		}
		return map[string]any{"sandbox": level}, nil
	}
	logger := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	loopback := mcpserver.IsLoopback(addr)
	r, err := runner.New(runner.Options{Dir: dir, Secret: secret, Ready: ready, MaxConns: maxConns,
		Open: func(id, ws string) (runner.Sandbox, error) {
			return openSandbox(id, ws, native, leveled, logger, loopback)
		}})
	if err != nil {
		return usageErr("%v", err)
	}
	defer r.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &exitError{exitTool, fmt.Errorf("listening on %s: %w", addr, err)}
	}
	fmt.Fprintf(s.err, "toolgate: runner serving MCP at http://%s/sandboxes/{id}/mcp (workspaces in %s)\n", ln.Addr(), r.Dir())
	if err := r.Serve(ctx, ln); err != nil {
		return &exitError{exitTool, fmt.Errorf("serving HTTP: %w", err)}
	}
	return nil
}

// openSandbox serves the built-in tools (as serve builds them, without
// http_request) rooted at the workspace ws, ungoverned: the gateway that
// calls them governs. A gateway calls them at the sandbox's call
// endpoint; an MCP client may use its MCP endpoint.
func openSandbox(id, ws string, native *sandbox.Native, leveled *sandbox.Leveled, logger *slog.Logger, loopback bool) (runner.Sandbox, error) {
	sets, err := builtinTools(&common{roots: []string{ws}, native: native, leveled: leveled, noWeb: true,
		processDir: filepath.Join(stateDir(), "processes", "runner", id), lineRules: unjudgedLines})
	if err != nil {
		return runner.Sandbox{}, err
	}
	reg := registry.New()
	if err := reg.Register(sets.tools...); err != nil {
		sets.Close()
		return runner.Sandbox{}, err
	}
	// The processes' starts, writes, stops and ends go back with the
	// sandbox's results, for the gateway's audit log, until it
	// acknowledges them.
	events := runner.NewEvents()
	if sets.procs != nil {
		sets.procs.OnEvent(func(ev exec.ProcessEvent) {
			events.Add(runner.ProcessEvent{Kind: ev.Kind, ID: ev.ID, Command: ev.Command, Reason: ev.Reason, Bytes: ev.Bytes})
		})
	}
	eng := engine.New(engine.Options{Registry: reg, Policy: ungoverned(), Logger: logger, ResultChecker: events,
		MaxResultBytes: -1,        // the gateway's budget applies, to the whole result
		Timeout:        time.Hour, // the gateway's timeout applies; its cancellation ends the request
		Inline:         true,      // each call already has its connection's goroutine; the tools honour their context
	})
	srv, err := mcpserver.New(mcpserver.Options{Engine: eng, Version: version, Roots: sets.roots.Dirs(), NoPrompts: true, NoCallLog: true, Logger: logger})
	if err != nil {
		sets.Close()
		return runner.Sandbox{}, err
	}
	srv.MCP().AddReceivingMiddleware(approvedByGateway)
	return runner.Sandbox{
		// Stateless: every gateway replica's call reaches the same sandbox
		// as the same caller, so that a process started through one is
		// read through another; no session of the runner ends a process.
		MCP: srv.Handler(mcpserver.HTTPOptions{Loopback: loopback, Stateless: true}),
		Call: func(ctx context.Context, name string, args json.RawMessage) tool.Result {
			return eng.Execute(ctx, tool.Call{Name: name, Args: args, Principal: runnerCaller})
		},
		Close:  closers{srv.Close, sets.Close}.Close,
		Events: events,
	}, nil
}

// runnerCaller is the principal of the calls a gateway sends to a
// sandbox's call endpoint: one caller, whichever replica sends them, so
// that a process started through one replica is read through another.
const runnerCaller = "toolgate-gateway"

// unjudgedLines refuses every line written to a shell or a REPL
// (write_process) in a sandbox: the gateway's policy judges a command as a
// call of execute_command, but the lines of a shell reach the runner after
// the gateway judged only the write_process call, and the runner has no
// policy to judge them by. Writes to other programs are not judged line by
// line (as with the local backend) and go through.
func unjudgedLines(tool.Definition, tool.Call) policy.Decision {
	return policy.Decision{Effect: policy.Deny, Rule: "sandbox.backend",
		Reason: "in a remote sandbox the lines written to a shell or a REPL are not judged by the gateway's policy; run each command with execute_command (or the code with run_code), which the policy judges, or use sandbox.backend: local"}
}

// approvedByGateway runs a tools/call whose request carries
// runner.ApprovedHeader as approved (tool.WithApproval): the gateway asked
// its person when the tool asked for approval, and calls again with it.
func approvedByGateway(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.CallToolRequest); ok && r.Extra != nil && r.Extra.Header.Get(runner.ApprovedHeader) == "1" {
			ctx = tool.WithApproval(ctx)
		}
		return next(ctx, method, req)
	}
}

// ungoverned is the runner's policy: everything the tools themselves
// allow runs (their own confinement and refusals still hold); the gateway
// decided before calling.
func ungoverned() *policy.Policy {
	return &policy.Policy{Mode: policy.ModeBypass, MaxLevel: tool.LevelHigh, Reasons: map[string]string{}}
}

// levelDetail is what a level lacks and what gives it, for one line.
func levelDetail(l sandbox.Level) string {
	var b strings.Builder
	if len(l.Missing) > 0 {
		b.WriteString("; missing: " + strings.Join(l.Missing, ", "))
	}
	if len(l.Remedies) > 0 {
		b.WriteString("; to get them: " + strings.Join(l.Remedies, "; "))
	}
	return b.String()
}

// closers closes each in turn.
type closers []func() error

func (c closers) Close() error {
	var errs []error
	for _, f := range c {
		errs = append(errs, f())
	}
	return errors.Join(errs...)
}
