package cli

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/metric"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/orchestrate"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/runner"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandboxes"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/toolsets/exec"
)

// common holds the flags that every command building an engine shares.
type common struct {
	roots      []string
	policy     string
	auditPath  string
	results    bool     // open the idempotency store (see openIdempotency)
	domains    []string // domains http_request and commands may reach (flags, then the policy's allow rules)
	warm       bool     // keep a sandbox helper started ahead (servers, agent loops)
	learn      bool     // calls go to tool_search's learning too (serve --defer-tools)
	command    bool     // the one call to run is a command's: start its sandbox helper at once
	require    string   // the policy's sandbox.require: the lowest level at which commands run
	noCommands bool     // the policy's sandbox.commands is false: no command tools
	// approver, when set, makes the approver of calls the policy asks about
	// (once the policy is loaded), with what must be closed at the end.
	approver func(*policy.Policy, *redis.Client) (policy.Approver, []func() error, error)
	// composites is a file of composite tools and fallbacks (plan.go).
	composites string
	// files is the policy's files section: settings of the file tools.
	files     policy.Files
	processes policy.Processes
	board     policy.ProcessBoard // where the replicas tell each other of their processes (state.redis); nil: none
	// lineRules judges the lines written to a shell or a REPL by the
	// policy's rules (exec.Options.Rules); nil: not by them.
	lineRules func(tool.Definition, tool.Call) policy.Decision
	// deniedDomains and askedDomains are the policy's deny and ask rules'
	// domains: refused to both (the egress proxy cannot ask).
	deniedDomains, askedDomains []string
	// meter records the sandboxed commands' durations (build takes it from
	// the engine's MeterProvider, set when telemetry is on).
	meter metric.MeterProvider
	// allowCI says which CI definitions commands may write: those the
	// policy's allow rules name (exec.Options.AllowCI); nil none.
	allowCI func(rel string) bool
	// native, when set, is the sandbox the command tools share (a
	// runner's, for all its sandboxes); builtinTools makes its own else.
	native *sandbox.Native
	// leveled, when set, is the level-checked backend the command tools
	// share, its level measured already (a runner's); builtinTools makes
	// its own over native else.
	leveled *sandbox.Leveled
	// noWeb leaves http_request out (a runner serves what runs in a
	// sandbox: files and commands; the web stays with the gateway).
	noWeb bool
	// processDir is where processes' output spills; "" the state folder's
	// processes/ (a runner gives each sandbox its own).
	processDir string
	// clientRoots, when set, narrows calls to the client's roots (serve's
	// mcpserver.ClientRoots); build chains it in with the local backend
	// alone (a remote sandbox's workspace is no folder of the client's).
	clientRoots engine.Limiter
	// remote forwards the file and command tools to remote sandboxes (the
	// policy's sandbox.backend runner or kubernetes); build sets it.
	remote *sandboxes.Sandboxes
}

func (c *common) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&c.roots, "root", nil, "folder the file tools may use (repeatable; default: the current folder)")
	f.StringVar(&c.policy, "policy", "", "policy file (YAML): mode, max_level, deny/ask/allow rules")
	f.StringVar(&c.auditPath, "audit", defaultAuditPath(), "audit log file (JSON Lines, hash-chained), or a folder DIR/ for DIR/audit-$TOOLGATE_REPLICA.jsonl (one chain per replica); \"off\" disables it")
	f.StringArrayVar(&c.domains, "allow-domain", nil, "a domain http_request and commands (through the egress proxy) may reach (repeatable; \"*.example.com\" for subdomains); none by default")
}

// approval is how a command line approves ahead of time: --yes approves
// what the policy asks about (a level or an ask rule); what a tool itself
// flags as dangerous (git reset --hard, rm -r of a computed path, code that
// removes folders) needs --allow-dangerous as well, or a person at the
// terminal. Without either flag, a terminal on standard input is asked.
type approval struct{ yes, dangerous bool }

func (a *approval) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVarP(&a.yes, "yes", "y", false, "approve calls that the policy would ask about")
	f.BoolVar(&a.dangerous, "allow-dangerous", false, "with --yes, also approve commands the dangerous-command check asks about")
}

// approver returns the Approver for the engine (nil: nothing is approved).
// tty is false when standard input carries data rather than a person.
func (a *approval) approver(s *streams, tty bool) (policy.Approver, error) {
	if a.dangerous && !a.yes {
		return nil, usageErr("--allow-dangerous only widens --yes: give both")
	}
	if a.yes {
		yes := policy.ApproveAll("cli --yes")
		return policy.ApproverFunc(func(ctx context.Context, r policy.Request) (policy.Approval, error) {
			if r.Decision.ToolAsked && !a.dangerous {
				return policy.Approval{Reason: "--yes does not cover what the tool flags as dangerous; " +
					"a person must approve it at a terminal, or the caller must add --allow-dangerous"}, nil
			}
			return yes.Approve(ctx, r)
		}), nil
	}
	if f, ok := s.in.(*os.File); ok && tty {
		if term, err := policy.NewTerminal(f, s.err); err == nil { // it refuses anything but a terminal
			return term, nil
		}
	}
	return nil, nil
}

// defaultAuditPath is $TOOLGATE_AUDIT, else audit.jsonl in the state folder.
func defaultAuditPath() string {
	if p := os.Getenv("TOOLGATE_AUDIT"); p != "" {
		return p
	}
	return filepath.Join(stateDir(), "audit.jsonl")
}

// auditLogPath is the log that --audit PATH writes: PATH itself, or for a
// folder (an existing one, or PATH ending in a separator) the file
// audit-REPLICA.jsonl in it, so that replicas sharing a volume each keep a
// chain of their own.
func auditLogPath(path string) string {
	if path == "" || path == "off" {
		return path
	}
	if fi, err := os.Stat(path); (err == nil && fi.IsDir()) || strings.HasSuffix(path, string(filepath.Separator)) || strings.HasSuffix(path, "/") {
		return filepath.Join(path, "audit-"+replicaID()+".jsonl")
	}
	return path
}

// replicaID names this replica: $TOOLGATE_REPLICA, else the host name (a
// Kubernetes pod's name), reduced to [A-Za-z0-9._-].
func replicaID() string {
	id := os.Getenv("TOOLGATE_REPLICA")
	if id == "" {
		id, _ = os.Hostname()
	}
	id = strings.Map(func(r rune) rune {
		if r < 128 && (r == '.' || r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '_'
	}, id)
	if strings.Trim(id, ".") == "" {
		return "replica"
	}
	return id
}

// stateDir is where toolgate keeps its state: $TOOLGATE_STATE, else
// toolgate in the XDG state folder ($XDG_STATE_HOME, or ~/.local/state).
func stateDir() string {
	if d := os.Getenv("TOOLGATE_STATE"); d != "" {
		return d
	}
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "toolgate")
}

// openIdempotency opens the result store: the policy's Redis, through the
// client of the shared limits (govern's), or the embedded store in the
// state folder.
func (s *setup) openIdempotency(shared *policy.Shared) (*store.Idempotency, error) {
	if rl, ok := sharedRedis(shared); ok {
		return store.NewIdempotency(store.NewRedis(rl.Client(), store.RedisOptions{Prefix: rl.Prefix()}), 0), nil
	}
	db, err := store.OpenBolt(filepath.Join(stateDir(), "idempotency.db"), store.BoltOptions{})
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, db.Close)
	return store.NewIdempotency(db, 0), nil
}

// sharedRedis returns the Redis of the shared limits, if they are in one.
func sharedRedis(shared *policy.Shared) (*store.RedisLimits, bool) {
	if shared == nil {
		return nil, false
	}
	rl, ok := shared.Store.(*store.RedisLimits)
	return rl, ok
}

// setup is what a command that runs tools needs.
type setup struct {
	registry  *registry.Registry
	engine    *engine.Engine
	policy    *policy.Policy
	runner    *orchestrate.Runner  // plans, run_plan and composites (plan.go)
	procs     *exec.Processes      // start_process's registry: its sessions end with the MCP server's (nil: remote sandboxes)
	sandboxes *sandboxes.Sandboxes // the remote sandboxes' forwarding (nil: the local backend)
	closers   []func() error
	ready     func(context.Context) error // for /readyz; nil: always ready
	redis     *redis.Client               // the policy's state.redis; nil: none
	unsealed  bool                        // the replicas' process board there has no sealing key
	learn     *learnHook                  // tool_search's view of the calls (c.learn); nil: none
	level     *sandbox.Level              // the sandbox's level, when measured at start (for /readyz)
}

func (s *setup) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// build assembles the registry with the built-in tools and the governance
// of the policy file (see govern) into an engine, with the result store
// when c.results is set.
func (c *common) build(opts engine.Options) (*setup, error) {
	pol, err := loadPolicy(c.policy)
	if err != nil {
		return nil, err
	}
	if pol.Sandbox.Remote() && (len(c.roots) > 0 || len(pol.Roots) > 0) {
		return nil, usageErr("--root and the policy's roots are for the local backend: with sandbox.backend %s the file and command tools work in each conversation's sandbox (its workspace %s), and nothing of a call is written here; remove them, or set sandbox.backend: local", pol.Sandbox.Backend, pol.Sandbox.WorkspaceDir())
	}
	if len(c.roots) == 0 {
		c.roots = pol.Roots
	}
	c.domains = append(c.domains, pol.AllowedDomains()...)
	c.deniedDomains, c.askedDomains = pol.DeniedDomains(), pol.AskedDomains()
	c.files = pol.Files
	c.allowCI = pol.AllowsChange
	c.lineRules = pol.Decide
	c.processes = pol.Processes
	c.require, c.noCommands = pol.Sandbox.RequiredLevel(), pol.Sandbox.CommandsOff()
	s := &setup{registry: registry.New(), policy: pol}
	c.meter = opts.MeterProvider
	rc, err := openState(pol)
	if err != nil {
		return nil, err
	}
	if rc != nil {
		s.closers = append(s.closers, rc.Close) // closed after everything that uses it
		// The replicas tell each other of their processes there, the
		// command lines and output sealed.
		seal, err := processSealer(pol)
		if err != nil {
			rc.Close()
			return nil, err
		}
		c.board = store.NewRedisProcesses(rc, pol.State.Redis.KeyPrefix(), seal)
		s.unsealed = seal == nil
	}
	s.redis = rc
	if pol.Sandbox.Remote() {
		if c.remote, err = openSandboxes(pol, rc, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))); err != nil {
			s.Close()
			return nil, err
		}
		s.sandboxes = c.remote
		s.closers = append(s.closers, c.remote.Close)
	} else if c.clientRoots != nil {
		opts.Limiter = engine.ChainLimiters(c.clientRoots, opts.Limiter)
	}
	sets, err := builtinTools(c)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.closers = append(s.closers, sets.Close)
	if err := s.registry.Register(sets.tools...); err != nil {
		s.Close()
		return nil, err
	}
	spillRoot := ""
	if sets.roots != nil {
		pol.Roots = sets.roots.Dirs() // path rules resolve as the file tools do
		spillRoot = pol.Roots[0]
	} else {
		// Path rules resolve against the sandbox's workspace; a result over
		// the budget is cut with a preview, never spilled here.
		pol.Roots = []string{pol.Sandbox.WorkspaceDir()}
		if err := notCarried(pol, c.domains); err != nil {
			s.Close()
			return nil, err
		}
	}
	if c.approver != nil && opts.Approver == nil {
		a, closers, err := c.approver(pol, rc)
		s.closers = append(s.closers, closers...)
		if err != nil {
			s.Close()
			return nil, err
		}
		opts.Approver = a
	}
	opts.Registry = s.registry
	closers, err := govern(&opts, pol, rc, c.auditPath, spillRoot, false)
	s.closers = append(s.closers, closers...)
	// The processes end (server_stopped) before the audit log closes, so
	// that their ends are recorded.
	s.procs = sets.procs
	if log, ok := opts.Auditor.(*audit.Log); ok && sets.procs != nil {
		sets.procs.OnEvent(processRecorder(log))
	}
	if log, ok := opts.Auditor.(*audit.Log); ok && s.sandboxes != nil {
		rec := processRecorder(log)
		s.sandboxes.OnProcessEvent(func(call tool.Call, ev runner.ProcessEvent) {
			if ev.Kind == "dropped" {
				ev.Reason = fmt.Sprintf("the runner kept no more unacknowledged events: %d lost, up to its event %d", ev.Bytes, ev.Seq)
			}
			rec(exec.ProcessEvent{Kind: ev.Kind, ID: ev.ID, Owner: call.Principal, Session: call.Session, Command: ev.Command, Reason: ev.Reason, Bytes: ev.Bytes})
		})
	}
	if sets.procs != nil {
		s.closers = append(s.closers, sets.procs.Close)
		// Every tool's result tells of the caller's processes that ended,
		// and every call starts its idle clock again.
		opts.ResultChecker = resultChecks{opts.ResultChecker, sets.procs}
	}
	s.ready = readiness(&opts)
	if err != nil {
		s.Close()
		return nil, err
	}
	if s.level = sets.level; s.level != nil {
		reportLevel(context.Background(), *s.level, c.require, opts.Auditor, opts.MeterProvider)
	}
	if c.learn {
		s.learn = &learnHook{next: opts.Auditor}
		opts.Auditor = s.learn
	}
	if c.results {
		idem, err := s.openIdempotency(opts.Breaker.Shared)
		if err != nil {
			s.Close()
			return nil, &exitError{exitTool, err}
		}
		opts.Idempotency = idem
	}
	s.engine = engine.New(opts)
	if err := s.addOrchestration(c); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// resultChecks runs result checks one after the other (nil ones skipped).
type resultChecks []engine.ResultChecker

func (rc resultChecks) Check(ctx context.Context, def tool.Definition, call tool.Call, res tool.Result) tool.Result {
	for _, c := range rc {
		if c != nil {
			res = c.Check(ctx, def, call, res)
		}
	}
	return res
}

// processSealer seals what the replicas tell each other in state.redis of
// their processes (command lines and output, which may hold secrets) with
// a key of its own derived from replicaSecret; nil without a secret: then
// they are not shared, and another replica's read_process says why.
func processSealer(pol *policy.Policy) (store.Sealer, error) {
	secret := replicaSecret(pol)
	if secret == nil {
		return nil, nil
	}
	if len(secret) < policy.MinStateSecret {
		return nil, usageErr("the secret that seals what replicas share in state.redis ($%s, or the variable approvals.state_key_env names) is %d bytes: give %d or more, the same on every replica (e.g. openssl rand -hex 32)", tokenKeyEnv, len(secret), policy.MinStateSecret)
	}
	key, err := hkdf.Key(sha256.New, secret, nil, "toolgate/process-board", 32)
	if err != nil {
		return nil, err
	}
	return auth.NewSealer(key)
}
