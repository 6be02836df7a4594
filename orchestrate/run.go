package orchestrate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/tool"
)

// Status is what became of a step.
type Status string

// Statuses of a step.
const (
	StatusOK      Status = "ok"      // the tool (or the step's fallback) succeeded
	StatusFailed  Status = "failed"  // the tool failed (and so did its fallback, if any)
	StatusSkipped Status = "skipped" // not run: its condition was false, a step it needs did not succeed, the plan stopped, or it was cancelled
)

const statusOK = string(StatusOK)

// Runner validates and runs plans, each step through an engine, so every
// step is governed (policy, limits, approvals) and audited on its own. It
// is safe for concurrent use.
type Runner struct {
	engine *engine.Engine
	limits Limits
	name   string // the run_plan tool's name, which a plan may not call
}

// NewRunner returns a runner that executes steps with e, within l.
func NewRunner(e *engine.Engine, l Limits) *Runner {
	return &Runner{engine: e, limits: l.withDefaults(), name: RunPlanName}
}

// Validate checks a plan without running it: every tool exists (and is not
// run_plan), ids are unique and well formed, references and after lists
// name steps listed earlier (so there is no cycle), conditions are well
// formed, and the limits hold. The error is a *tool.Error of type
// invalid_arguments whose Details["problems"] lists every Problem.
func (r *Runner) Validate(p *Plan) error {
	if _, ps := r.validate(p, false, tool.Call{}); len(ps) > 0 {
		return ps.err("plan")
	}
	return nil
}

// StepReport is what became of one step.
type StepReport struct {
	ID     string `json:"id"`
	Tool   string `json:"tool"`
	Status Status `json:"status"`
	// Reason says why a step was skipped.
	Reason string `json:"reason,omitempty"`
	// CallID is the id of the step's call in the audit log.
	CallID     string      `json:"call_id,omitempty"`
	Text       string      `json:"text,omitempty"`
	Structured any         `json:"structured,omitempty"`
	Error      *tool.Error `json:"error,omitempty"`
	// Fallback names the on_failure tool that answered for a failed step;
	// FallbackFrom is then the step tool's own error.
	Fallback     string      `json:"fallback,omitempty"`
	FallbackFrom *tool.Error `json:"fallback_from,omitempty"`
	// Result is the step's whole result (content blocks, metadata).
	Result tool.Result `json:"-"`
}

// Report is the outcome of a plan: one StepReport per step, in the plan's
// order.
type Report struct {
	// Status is "ok" when no step stopped the plan, "failed" when one did
	// (FailedStep), "cancelled" when the context ended first.
	Status     string       `json:"status"`
	FailedStep string       `json:"failed_step,omitempty"`
	Steps      []StepReport `json:"steps"`
}

// nestingKey counts plans running inside plans in a context.
type nestingKey struct{}

// Run validates p and runs it. Steps without a dependency between them run
// in parallel (at most Limits.Parallelism at once); a step starts once
// every step it references or lists in after has finished. Each step is
// one engine call carrying parent's Session, Principal and Auth, with call id
// "<parent.ID>/<step id>". An invalid plan runs nothing: the error is
// Validate's.
func (r *Runner) Run(ctx context.Context, p *Plan, parent tool.Call) (*Report, error) {
	return r.run(ctx, p, parent, nil, false)
}

func (r *Runner) run(ctx context.Context, p *Plan, parent tool.Call, input any, hasInput bool) (*Report, error) {
	depth, _ := ctx.Value(nestingKey{}).(int)
	if depth >= r.limits.MaxNesting {
		return nil, tool.Errorf(tool.InvalidArguments, "plans are nested %d deep (composites calling composites), over the limit of %d", depth+1, r.limits.MaxNesting).
			WithSuggestion("call the atomic tools directly instead of through nested composites")
	}
	ctx = context.WithValue(ctx, nestingKey{}, depth+1)
	deps, ps := r.validate(p, hasInput, parent)
	if len(ps) > 0 {
		return nil, ps.err("plan")
	}
	x := &execution{
		r: r, plan: p, parent: parent, deps: deps,
		scope:   scope{outcomes: map[string]map[string]any{}, input: input, hasInput: hasInput},
		reports: make([]StepReport, len(p.Steps)),
		done:    make([]chan struct{}, len(p.Steps)),
		sem:     make(chan struct{}, r.limits.Parallelism),
	}
	for i := range x.done {
		x.done[i] = make(chan struct{})
	}
	var wg sync.WaitGroup
	for i := range p.Steps {
		wg.Go(func() { x.step(ctx, i) })
	}
	wg.Wait()
	rep := &Report{Status: "ok", Steps: x.reports, FailedStep: x.failed}
	switch {
	case ctx.Err() != nil && (x.cancelled || x.failed != ""):
		rep.Status = "cancelled"
	case x.failed != "":
		rep.Status = "failed"
	}
	return rep, nil
}

// execution is one run of a plan.
type execution struct {
	r       *Runner
	plan    *Plan
	parent  tool.Call
	deps    []stepDeps
	mu      sync.RWMutex // guards scope, failed and cancelled
	scope   scope
	failed  string // the step that stopped the plan
	reports []StepReport
	done    []chan struct{}
	sem     chan struct{}

	cancelled bool
}

// step waits for step i's dependencies, then decides and runs it.
func (x *execution) step(ctx context.Context, i int) {
	defer close(x.done[i])
	s := x.plan.Steps[i]
	rep := &x.reports[i]
	rep.ID, rep.Tool = s.ID, s.Tool
	for _, d := range x.deps[i] {
		<-x.done[d]
	}
	skip := func(reason string) {
		rep.Status, rep.Reason = StatusSkipped, reason
		x.record(s.ID, rep)
	}
	if reason := x.stopped(ctx); reason != "" {
		skip(reason)
		return
	}
	x.mu.RLock()
	run := s.When == nil || x.scope.eval(s.When)
	var args any
	var u *unresolved
	if run && s.Args != nil {
		args, u = x.scope.substitute(s.Args, "/args")
	}
	x.mu.RUnlock()
	switch {
	case !run:
		skip("its condition (when) is false")
		return
	case u != nil && u.dep:
		skip(fmt.Sprintf("it needs %s, but step %q did not succeed", u.ref.raw, u.ref.step))
		return
	}
	select {
	case x.sem <- struct{}{}:
	case <-ctx.Done():
		x.mu.Lock()
		x.cancelled = true
		x.mu.Unlock()
		skip("the plan was cancelled before it started")
		return
	}
	defer func() { <-x.sem }()
	if reason := x.stopped(ctx); reason != "" {
		skip(reason)
		return
	}
	var res tool.Result
	rep.CallID = x.callID(s.ID)
	if u != nil {
		res = tool.ErrorResult(tool.Errorf(tool.InvalidArguments, "step %q: the reference %s at %s has no value", s.ID, u.ref.raw, u.pointer).
			WithSuggestion("check the path against the referenced step's result (its structured output and text are in the plan's report)"))
	} else {
		res = x.call(ctx, rep.CallID, s.Tool, args)
	}
	fill(rep, res)
	if res.Error == nil {
		x.record(s.ID, rep)
		return
	}
	switch s.OnFailure.Action {
	case Skip:
		x.record(s.ID, rep)
		return
	case FallbackCall:
		x.record(s.ID, rep) // the fallback may read this step's error
		fb := s.OnFailure.Fallback
		x.mu.RLock()
		fargs, fu := x.scope.substitute(fb.Args, "/on_failure/args")
		x.mu.RUnlock()
		from := res.Error
		id := rep.CallID + "/fallback"
		if fu != nil {
			res = tool.ErrorResult(tool.Errorf(tool.InvalidArguments, "step %q: the fallback's reference %s at %s has no value", s.ID, fu.ref.raw, fu.pointer))
		} else {
			res = x.call(ctx, id, fb.Tool, fargs)
		}
		fill(rep, res)
		if res.Error == nil {
			rep.Fallback, rep.FallbackFrom, rep.CallID = fb.Tool, from, id
			x.record(s.ID, rep)
			return
		}
		rep.Error = res.Error.WithDetail("step_error", from)
	}
	x.mu.Lock()
	if x.failed == "" {
		x.failed = s.ID
	}
	x.mu.Unlock()
	x.record(s.ID, rep)
}

// stopped says why no further step may start, or "".
func (x *execution) stopped(ctx context.Context) string {
	if ctx.Err() != nil {
		x.mu.Lock()
		x.cancelled = true
		x.mu.Unlock()
		return "the plan was cancelled before it started"
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.failed != "" {
		return fmt.Sprintf("the plan stopped: step %q failed", x.failed)
	}
	return ""
}

func (x *execution) callID(step string) string {
	if x.parent.ID == "" {
		return ""
	}
	return x.parent.ID + "/" + step
}

// call runs one tool call through the engine.
func (x *execution) call(ctx context.Context, id, name string, args any) tool.Result {
	raw := json.RawMessage(`{}`)
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return tool.ErrorResult(tool.Errorf(tool.InvalidArguments, "the arguments of %s cannot be written as JSON: %v", name, err))
		}
		raw = b
	}
	return x.r.engine.Execute(ctx, tool.Call{ID: id, Name: name, Args: raw, Principal: x.parent.Principal, Session: x.parent.Session, Auth: x.parent.Auth})
}

// fill copies a result into a report.
func fill(rep *StepReport, res tool.Result) {
	rep.Result, rep.Error = res, res.Error
	rep.Text, rep.Structured = "", nil
	if res.Error == nil {
		rep.Status = StatusOK
		rep.Text, rep.Structured = res.Text(), normalize(res.Structured)
		return
	}
	rep.Status = StatusFailed
}

// record makes a finished step's outcome visible to references.
func (x *execution) record(id string, rep *StepReport) {
	o := map[string]any{fieldStatus: string(rep.Status), fieldError: nil}
	if rep.Status == StatusOK {
		o[fieldText] = rep.Text
		o[fieldStructured] = rep.Structured
	}
	if rep.Error != nil {
		o[fieldError] = normalize(rep.Error)
	}
	x.mu.Lock()
	x.scope.outcomes[id] = o
	x.mu.Unlock()
}

// Result renders a report as a tool result: a text summary of every step
// (with each successful step's text), the report as the structured value,
// and, when the plan failed or was cancelled, an error naming the step.
func (rep *Report) Result() tool.Result {
	var b strings.Builder
	for i, s := range rep.Steps {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "step %s (%s): %s", s.ID, s.Tool, s.Status)
		switch {
		case s.Reason != "":
			fmt.Fprintf(&b, " (%s)", s.Reason)
		case s.Fallback != "":
			fmt.Fprintf(&b, " (answered by the fallback %s after %s)", s.Fallback, s.FallbackFrom.Type)
		}
		switch {
		case s.Error != nil:
			b.WriteString("\n")
			b.WriteString(s.Error.Text())
		case s.Text != "":
			b.WriteString("\n")
			b.WriteString(s.Text)
		}
	}
	res := tool.Result{Content: []tool.Content{tool.TextContent(b.String())}, Structured: rep}
	switch rep.Status {
	case "failed":
		var failed StepReport
		for _, s := range rep.Steps {
			if s.ID == rep.FailedStep {
				failed = s
			}
		}
		typ, sugg := tool.Internal, ""
		if failed.Error != nil {
			typ, sugg = failed.Error.Type, failed.Error.Suggestion
		}
		msg := fmt.Sprintf("the plan stopped: step %q (%s) failed", failed.ID, failed.Tool)
		if failed.Error != nil {
			msg += ": " + failed.Error.Message
		}
		e := &tool.Error{Type: typ, Message: msg, Suggestion: sugg, Details: map[string]any{"failed_step": failed.ID, "steps": rep.Steps}}
		if e.Suggestion == "" {
			e.Suggestion = "fix that step and run the plan again; the report lists what the other steps did"
		}
		res.Error = e
	case "cancelled":
		res.Error = &tool.Error{Type: tool.Timeout, Message: "the plan was cancelled before every step ran", Details: map[string]any{"steps": rep.Steps}}
	}
	return res
}
