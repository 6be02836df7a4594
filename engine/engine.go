package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/tool"
)

// Options configure an Engine. Only Registry is required.
type Options struct {
	Registry *registry.Registry
	Policy   *policy.Policy  // nil: policy.Default()
	Approver policy.Approver // decides calls the policy asks about; nil: such calls are refused
	Auditor  Auditor         // nil: no audit log

	Limiter     Limiter          // rate limits and loop guard; nil: none
	Breaker     *policy.Breaker  // stops a session after refusals in a row; nil: none
	Idempotency IdempotencyStore // recorded results by key; nil: none
	// KeyByCallID makes a caller-given call ID an idempotency key: set it
	// only when IDs are unique across sessions and restarts (as model
	// providers' tool-call IDs are), never for small per-connection counters.
	KeyByCallID bool
	// KeyByArgs, when positive, makes identical calls (tool, session and
	// canonical arguments) within the same window of this length one call.
	// Off by default: "run the tests" twice is two different calls when the
	// files changed in between.
	KeyByArgs time.Duration

	Timeout        time.Duration // per call; 0: 60 s
	MaxResultBytes int           // text returned to the model; 0: 64 KiB; < 0: unlimited
	// MaxResultBytesPerTool overrides MaxResultBytes for some tools: keys
	// are tool names or globs over them (path.Match syntax), decided by the
	// one glob rule (policy.GlobMap); where two globs tie, the smallest
	// budget of those matching applies.
	MaxResultBytesPerTool map[string]int
	Spill                 Spill            // where over-budget results are kept in full; zero: nowhere
	Redactor              *policy.Redactor // secrets to redact from results and the audit log; nil: none
	// ResultChecker sees every tool's result before the budget stage does
	// (trust.ResultCheck finds injected instructions); nil: none.
	ResultChecker ResultChecker
	Parallelism   int          // ExecuteAll's bound; 0: 8
	Logger        *slog.Logger // nil: slog.Default()

	// TracerProvider, when set, makes each call an INTERNAL span
	// "execute_tool {tool}" with the GenAI and toolgate attributes, and
	// child spans for the approval wait and the run; a tool can start its
	// own child spans from the context it is given. nil or a no-op
	// provider: no spans, and no cost.
	TracerProvider trace.TracerProvider
	// MeterProvider, when set, records toolgate.calls, toolgate.approvals,
	// toolgate.rate_limited and toolgate.loop_detected. nil or a no-op
	// provider: nothing, and no cost.
	MeterProvider metric.MeterProvider
	// TelemetryArgumentNames adds the names of a call's arguments (never
	// their values) to its span as toolgate.argument.names. Off by default.
	TelemetryArgumentNames bool

	// Inline runs each tool on the goroutine that called Execute instead of
	// handing it to one of the engine's workers (two wake-ups a call): for
	// a caller with a goroutine of its own per call (a server's connection)
	// whose tools honour their context. Such a tool's context still ends at
	// the deadline, but a tool that ignores it is not abandoned there: the
	// call returns when the tool does, with the outcome it has on a worker
	// (a result that comes after the deadline or the caller's cancellation
	// is the same Timeout or cancellation error, not the result).
	Inline bool
}

// Engine executes calls. It is safe for concurrent use.
type Engine struct {
	opts      Options
	policy    *policy.Policy
	log       *slog.Logger
	chain     handler
	schemas   sync.Map // tool name → *compiled
	idBase    string
	idSeq     atomic.Uint64
	workers   workers
	deadlines deadlines
	tel       instruments // telemetry.go
	// budgets is Options.MaxResultBytesPerTool; budgetsTie is set when its
	// globs tie.
	budgets    policy.GlobMap[int]
	budgetsTie bool
}

// pending is one call on its way down the chain; stages fill it in.
type pending struct {
	call        tool.Call
	start       time.Time // when the audit stage took the call; zero without an Auditor
	tool        tool.Tool
	def         tool.Definition
	schema      *schema.Schema
	args        map[string]any
	repairs     []schema.Repair
	decision    policy.Decision
	approval    *policy.Approval
	replayed    bool        // the result came from the idempotency store
	generatedID bool        // the engine made up call.ID
	det         detachedCtx // the audit's context (detached)
}

// handler is one stage and everything after it.
type handler func(ctx context.Context, p *pending) tool.Result

// stage wraps the rest of the chain, as net/http middleware wraps a Handler.
type stage func(next handler) handler

// New returns an engine over o.Registry.
func New(o Options) *Engine {
	e := &Engine{opts: o, policy: o.Policy, log: o.Logger}
	if e.policy == nil {
		e.policy = policy.Default()
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.opts.Timeout <= 0 {
		e.opts.Timeout = 60 * time.Second
	}
	if e.opts.MaxResultBytes == 0 {
		e.opts.MaxResultBytes = 64 << 10
	}
	if e.opts.Parallelism <= 0 {
		e.opts.Parallelism = 8
	}
	var b [6]byte
	rand.Read(b[:])
	e.workers = workers{e: e, jobs: make(chan job), every: idleWorker}
	var err error
	e.budgets, err = policy.NewGlobMap("output.tools", o.MaxResultBytesPerTool)
	e.budgetsTie = err != nil
	e.idBase = "call_" + hex.EncodeToString(b[:]) + "_"
	e.tel = newInstruments(o)

	// The path of one call, top to bottom.
	e.chain = chain(e.run,
		e.observe,
		e.audit,
		e.lookup,
		e.arguments,
		e.validate,
		e.authorize,
		e.limits,
		e.idempotency,
		e.budget,
		e.check,
	)
	return e
}

// chain composes stages so that the first one listed runs first.
func chain(last handler, stages ...stage) handler {
	h := last
	for i := len(stages) - 1; i >= 0; i-- {
		h = stages[i](h)
	}
	return h
}

// Execute runs one call through the governed pipeline. It never panics and
// never returns a Go error: every failure is a Result carrying a tool.Error.
// A call without an ID gets one.
func (e *Engine) Execute(ctx context.Context, call tool.Call) tool.Result {
	p := &pending{call: call}
	if call.ID == "" {
		// idBase and the number written in one buffer on the stack: one
		// allocation, the string's (FormatUint makes one of its own).
		var buf [64]byte
		id := strconv.AppendUint(append(buf[:0], e.idBase...), e.idSeq.Add(1), 10)
		p.call.ID, p.generatedID = string(id), true
	}
	return e.chain(ctx, p)
}

// Registry returns the registry the engine executes from.
func (e *Engine) Registry() *registry.Registry { return e.opts.Registry }
