package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/console"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/tool"
)

// loadPolicy reads the policy file, or returns the default policy when
// there is none.
func loadPolicy(file string) (*policy.Policy, error) {
	if file == "" {
		return policy.Default(), nil
	}
	p, err := policy.Load(file)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return p, nil
}

// openState opens the client of the policy's state.redis, once per
// process for everything shared through it (limits, loop guard, breaker,
// idempotency, approvals, input requests); nil without state.redis. The
// caller closes it after all of those.
func openState(pol *policy.Policy) (*redis.Client, error) {
	rc, err := store.NewClient(pol.State.Redis)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if rc != nil {
		redis.SetLogger(redisLog{}) // toolgate logs an outage once, not every dial
	}
	return rc, nil
}

// govern turns a policy into engine options, the same for every command:
// the policy itself, its rate limits and loop guard (after any limiter
// already in opts), the denial breaker, secret redaction, output budgets,
// the approver in opts behind a Gate (session and always scopes, timeouts,
// the denial streak), the result check of every tool (trust.results) and
// the audit log. rc is the client of the policy's state.redis (nil:
// none, see openState). Results over the budget spill into spillRoot's
// .toolgate/spill, where read_file reaches them ("" : no spill unless the
// policy names a folder). With rawAudit the log makes raw system calls
// (audit.Options.RawCalls: toolgate proxy, see sysmon.go). It returns what
// must be closed at the end.
func govern(opts *engine.Options, pol *policy.Policy, rc *redis.Client, auditPath, spillRoot string, rawAudit bool) ([]func() error, error) {
	opts.Policy = pol
	var closers []func() error
	var shared *policy.Shared
	if rc != nil {
		shared = store.NewShared(rc, pol.State.Redis)
	}
	cfg := pol.Limits.Config()
	cfg.Shared = shared
	limiter := policy.NewLimiter(cfg)
	opts.Limiter = engine.ChainLimiters(opts.Limiter, limiter)
	opts.Breaker = &policy.Breaker{Threshold: pol.Approvals.DenialStreak, Shared: shared}
	red, err := policy.NewRedactor(pol.Secrets.All())
	if err != nil {
		return closers, usageErr("%v", err)
	}
	opts.Redactor = red
	if pol.Output.MaxBytes != 0 {
		opts.MaxResultBytes = pol.Output.MaxBytes
	}
	opts.MaxResultBytesPerTool = pol.Output.Tools
	switch {
	case pol.Output.SpillDir != "":
		opts.Spill = engine.Spill{Root: pol.Output.SpillDir, ShowAs: pol.Output.SpillDir}
	case spillRoot != "":
		opts.Spill = engine.Spill{Root: spillRoot, Dir: ".toolgate/spill", ShowAs: ".toolgate/spill"}
	}
	if opts.Approver != nil {
		opts.Approver = policy.NewGate(opts.Approver, pol)
	}
	check, err := resultCheck(pol.Trust, opts.Logger)
	if err != nil {
		return closers, err
	}
	opts.ResultChecker = check
	if auditPath == "off" || auditPath == "" {
		return closers, nil
	}
	auditPath = auditLogPath(auditPath)
	log, err := audit.Open(auditPath, audit.Options{RawCalls: rawAudit})
	if err != nil {
		return closers, &exitError{exitTool, fmt.Errorf("opening the audit log: %w (use --audit FILE or --audit off)", err)}
	}
	opts.Auditor = log
	if shared != nil {
		shared.OnOutage = outageRecorder(log, shared.OnError)
	}
	if shared == nil { // with state.redis, Redis remembers the calls of other processes
		window := max(pol.Limits.Config().Loop.Window, opts.Breaker.Cooldown, time.Minute) // their defaults are a minute
		replayRecent(limiter, opts.Breaker, levels(opts), auditPath, window)
	}
	return append(closers, log.Close), nil
}

// outageRecorder writes the start and the end of each Redis outage into
// the audit log, as records of the pseudo-tool "state.redis" (outcome
// "outage" or "recovered"), so that the calls run under this replica's own
// limits (on_error: allow) or refused (deny) meanwhile can be told apart.
func outageRecorder(log *audit.Log, mode policy.OnError) func(bool, error) {
	if mode == "" {
		mode = policy.OnErrorDeny
	}
	return func(down bool, err error) {
		rec := audit.Record{Tool: "state.redis", Mode: "on_error: " + string(mode), Outcome: "recovered", Rule: "Redis answers again: limits, loops and approvals are shared again"}
		if down {
			then := "calls are refused as unavailable"
			if mode == policy.OnErrorAllow {
				then = "calls run under this replica's own limits"
			}
			rec.Outcome, rec.Rule = "outage", fmt.Sprintf("Redis cannot be reached (%v): %s until it answers", err, then)
		}
		if err := log.Append(context.Background(), rec); err != nil {
			slog.Error("audit log write failed", "err", err)
		}
	}
}

// readiness returns the check of /readyz for the stores govern put in
// opts: Redis answers a ping (state.redis), or nil (nothing to wait for).
// Its error is a short reason that names no address.
func readiness(opts *engine.Options) func(context.Context) error {
	if opts.Breaker == nil || opts.Breaker.Shared == nil {
		return nil
	}
	shared := opts.Breaker.Shared
	return func(ctx context.Context) error {
		if shared.Ping(ctx) != nil {
			return errors.New("the shared state store (Redis) does not answer")
		}
		return nil
	}
}

// redisLog sends go-redis's own messages (a line per failed dial) to the
// debug log.
type redisLog struct{}

func (redisLog) Printf(ctx context.Context, format string, v ...any) {
	slog.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}

// replayRecent gives the loop guard and the denial breaker the calls the
// audit log holds that can still count (of its last 256 records): `toolgate
// call` lives for one call, and a model that repeats a call, or is refused
// again and again, process after process, is looping or lost all the same.
// Those are the calls of the last window (the longer of the loop guard's
// window and the breaker's cool-down), and before them each call within a
// window of the next (a streak of refusals goes on while they are less than
// a cool-down apart); the log is read back only that far, so a quiet log
// costs one line. Only calls that reached them count, as in one process:
// the loop guard sees calls that passed the policy, the breaker calls that
// passed validation. Best effort: an unreadable log replays nothing.
func replayRecent(limiter *policy.Limiter, breaker *policy.Breaker, level func(string) tool.Level, auditPath string, window time.Duration) {
	f, err := os.Open(auditPath)
	if err != nil {
		return
	}
	defer f.Close()
	since := time.Now().Add(-window)
	recs, err := audit.TailWhile(f, 256, func(t time.Time) bool {
		if t.Before(since) {
			return false
		}
		if t.Add(-window).Before(since) {
			since = t.Add(-window)
		}
		return true
	})
	if err != nil {
		return
	}
	for _, r := range recs {
		if r.Outcome == audit.OutcomeInvalid {
			continue
		}
		call := tool.Call{Name: r.Tool, Args: r.Arguments, Session: r.Session, Principal: r.Principal}
		limited := r.ErrorType == string(tool.LoopDetected) || r.ErrorType == string(tool.RateLimited)
		// A result the check marked or withheld: the call ran.
		flagged := strings.Contains(r.Outcome, " (flagged: ")
		if !limited {
			breaker.Record(call.Caller(), level(r.Tool), policy.Refusal(tool.ErrorType(r.ErrorType)) && !flagged, r.Time)
		}
		if (r.Outcome == audit.OutcomeOK || r.Outcome == audit.OutcomeError || flagged) && !limited {
			limiter.Replay(call, r.Time)
		}
	}
}

// levels returns the permission level of a tool of opts' registry by name;
// a tool it does not know (gone since, or an upstream's) counts as medium.
func levels(opts *engine.Options) func(string) tool.Level {
	return func(name string) tool.Level {
		if opts.Registry != nil {
			if d, ok := opts.Registry.Definition(name); ok {
				return d.Level
			}
		}
		return tool.LevelMedium
	}
}

func closeAll(fs []func() error) {
	for _, f := range fs {
		f()
	}
}

// pageOptions configures the approvals of a policy's page: secrets
// redacted from what it shows, and with a Redis client (state.redis) the
// queue every replica shares and what a call gets while Redis is down. It
// also returns the API token decisions carry (X-Toolgate-Token): the one
// approvals.token_env names, else a random one of this process.
func pageOptions(pol *policy.Policy, rc *redis.Client) (policy.QueueOptions, string, error) {
	red, err := policy.NewRedactor(pol.Secrets.All())
	if err != nil {
		return policy.QueueOptions{}, "", usageErr("%v", err)
	}
	o := policy.QueueOptions{Redactor: red, Replica: replicaID()}
	token := rand.Text()
	if env := pol.Approvals.TokenEnv; env != "" {
		switch token = os.Getenv(env); {
		case token == "":
			return o, "", usageErr("approvals.token_env names %s, which is not set", env)
		case len(token) < 16:
			return o, "", usageErr("approvals.token_env: $%s is %d bytes long: give at least 16", env, len(token))
		}
	}
	if rc != nil {
		o.Queue = store.NewRedisApprovals(rc, store.RedisApprovalsOptions{Prefix: pol.State.Redis.KeyPrefix()})
		o.OnQueueError = pol.State.Redis.Mode()
	}
	return o, token, nil
}

// inputRequests asks through the client's next call (MCP input requests)
// when approvals.state_key_env names the secret that seals the state, used
// once in Redis (state.redis) or in this process; else nil.
func inputRequests(pol *policy.Policy, rc *redis.Client) (*policy.InputRequests, error) {
	env := pol.Approvals.StateKeyEnv
	if env == "" {
		return nil, nil
	}
	secret := os.Getenv(env)
	if secret == "" {
		return nil, usageErr("approvals.state_key_env names %s, which is not set", env)
	}
	ttl := pol.Approvals.Timeout
	if ttl == 0 {
		ttl = policy.DefaultApprovalTimeout
	}
	sealer, err := policy.NewStateSealer([]byte(secret), ttl)
	if err != nil {
		return nil, usageErr("approvals.state_key_env: %v", err)
	}
	var once policy.OnceStore = &policy.MemoryOnce{}
	if rc != nil {
		once = store.NewRedisOnce(rc, pol.State.Redis.KeyPrefix())
	}
	return &policy.InputRequests{Sealer: sealer, Once: once,
		MessageKey: mcpserver.InputMessage, SchemaKey: mcpserver.InputSchema, StateKey: mcpserver.InputState,
		Answer: func(ctx context.Context) (string, string, map[string]any, bool) {
			a, ok := mcpserver.InputAnswerFromContext(ctx)
			return a.State, a.Action, a.Content, ok
		}}, nil
}

// mcpApprover asks the user of the MCP client that made a call, through
// elicitation, when the client supports it and the server keeps sessions
// (a stateless server cannot send the client a request); otherwise the
// approvals page: the console's on the /mcp listener (wc, nil: none) with
// console.approvals or approvals.http, and with approvals.http the
// console's approvals page and API alone on that address (for stdio, which
// has no listener); with state.redis the calls wait in Redis, listed and
// answered by the page of every replica; otherwise no one (the call is
// refused, with a reason). A client's user who is asked too races the
// console: the first answer counts. rc, the client of state.redis (nil:
// none), shares the queue and the input requests' single use with the
// other replicas. It returns what must be closed.
func mcpApprover(pol *policy.Policy, rc *redis.Client, log io.Writer, stateless bool, wc *webConsole) (policy.Approver, []func() error, error) {
	elicit := policy.Elicitation{Elicit: func(ctx context.Context, msg string, schema map[string]any) (string, map[string]any, error) {
		ss := mcpserver.SessionFromContext(ctx)
		if ss == nil {
			return "", nil, errors.New("no MCP session")
		}
		res, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: msg, RequestedSchema: schema})
		if err != nil {
			return "", nil, err
		}
		return res.Action, res.Content, nil
	}}
	var closers []func() error
	fail := func(err error) (policy.Approver, []func() error, error) {
		closeAll(closers)
		return nil, nil, err
	}
	ui := wc.shows(pol)
	paged := pol.Approvals.HTTP != "" || ui && pol.Console.Approvals
	if !paged && pol.Approvals.StateKeyEnv == "" {
		rc = nil // nothing of the approvals is shared
	}
	input, err := inputRequests(pol, rc)
	if err != nil {
		return fail(err)
	}
	var page *policy.QueueApprover
	if addr := pol.Approvals.HTTP; paged {
		o, token, err := pageOptions(pol, rc)
		if err != nil {
			return fail(err)
		}
		shared := ""
		if o.Queue != nil {
			shared = ", calls of every replica sharing state.redis"
		}
		if o.Queue == nil {
			o.Queue = policy.NewMemoryQueue()
		}
		queue := policy.Watch(o.Queue) // the consoles follow it live
		o.Queue = queue
		page = policy.NewQueueApprover(o)
		if ui {
			wc.page, wc.queue, wc.token = page, queue, token
		}
		if addr != "" {
			hs, err := servePage(addr, console.Options{Approvals: page, Changes: queue.Subscribe, Token: token, Policy: pol}, log, shared)
			if err != nil {
				return fail(err)
			}
			closers = append(closers, hs.Close)
		}
	}
	return policy.ApproverFunc(func(ctx context.Context, req policy.Request) (policy.Approval, error) {
		if _, answered := mcpserver.InputAnswerFromContext(ctx); input != nil && (answered || mcpserver.TakesInputRequests(ctx)) {
			return input.Approve(ctx, req)
		}
		if ss := mcpserver.SessionFromContext(ctx); ss != nil && !stateless {
			if ip := ss.InitializeParams(); ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil {
				if ui && page != nil { // the client's user and the console: the first answer counts
					return policy.FirstAnswer(elicit, page).Approve(ctx, req)
				}
				return elicit.Approve(ctx, req)
			}
		}
		if page != nil {
			return page.Approve(ctx, req)
		}
		if stateless {
			return policy.Approval{Approver: "none", Reason: "a stateless server cannot ask the MCP client's user (elicitation needs a session; input requests need approvals.state_key_env and a client of protocol 2026-07-28) and no approvals page is configured (console.approvals or approvals.http in the policy)"}, nil
		}
		return policy.Approval{Approver: "none", Reason: "the MCP client cannot ask its user (no elicitation) and no approvals page is configured (console.approvals or approvals.http in the policy)"}, nil
	}), closers, nil
}

// servePage serves the approvals page of the console and its API alone at
// addr (approvals.http), to this machine's clients, and says where.
func servePage(addr string, o console.Options, log io.Writer, shared string) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &exitError{exitTool, fmt.Errorf("approvals.http %s: %w", addr, err)}
	}
	o.ApprovalsOnly, o.Loopback = true, true
	c := console.New(o)
	hs := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	hs.RegisterOnShutdown(c.Close)
	go hs.Serve(ln)
	token := o.Token
	if env := o.Policy.Approvals.TokenEnv; env != "" {
		token = "in $" + env
	}
	fmt.Fprintf(log, "toolgate: approve calls at http://%s/ui/ (API token %s%s)\n", ln.Addr(), token, shared)
	return hs, nil
}
