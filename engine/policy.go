package engine

import (
	"context"
	"errors"
	"time"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// authorize applies the policy; a call it asks about goes to the Approver.
// With a Breaker, a session whose calls were refused again and again is
// stopped here, and every refusal or run is counted for it.
func (e *Engine) authorize(next handler) handler {
	return func(ctx context.Context, p *pending) tool.Result {
		p.decision = e.policy.DecideParsed(p.def, p.call, p.args)
		b := e.opts.Breaker
		if b == nil {
			return e.decided(ctx, p, next)
		}
		// The session's key is made once, for the check and the record,
		// and only when the breaker looks at it: a read the policy allows
		// and that is not refused (most calls) needs it for neither.
		var caller string
		open, n := false, 0
		if b.Guards(p.def.Level, p.decision.Effect) {
			caller = p.call.Caller()
			n, open = b.Open(caller, p.def.Level, p.decision.Effect, time.Now())
		}
		var res tool.Result
		if open {
			res = tool.ErrorResult(tool.Errorf(tool.CircuitOpen, "%d calls in a row were refused in this session, so calls that change anything are stopped for a while", n).
				WithSuggestion("stop calling tools: tell the user what you were trying to do, what was refused and why, and ask how to proceed").
				WithDetail("rule", p.decision.Rule))
		} else {
			res = e.decided(ctx, p, next)
		}
		var refused bool
		switch {
		case res.Error == nil, res.Meta["flagged"] != nil: // a result withheld by the check: the call ran
		case policy.Refusal(res.Error.Type):
			refused = true
		case res.Error.Type != tool.RateLimited && res.Error.Type != tool.LoopDetected && res.Error.Type != tool.InputRequired:
			// it ran, and failed
		default:
			return res // neither ran nor was refused: not counted
		}
		if b.Counts(p.def.Level, refused) {
			if caller == "" { // never a made key, which holds a NUL
				caller = p.call.Caller()
			}
			b.Record(caller, p.def.Level, refused, time.Now())
		}
		return res
	}
}

// decided carries out the policy's decision.
func (e *Engine) decided(ctx context.Context, p *pending, next handler) tool.Result {
	switch p.decision.Effect {
	case policy.Allow:
		return e.runAsking(ctx, p, next)
	case policy.Ask:
		if err := e.approve(ctx, p); err != nil {
			return tool.ErrorResult(err)
		}
		return e.runAsking(ctx, p, next)
	}
	return tool.ErrorResult(tool.Errorf(tool.PermissionDenied, "%s", p.decision.Reason).
		WithSuggestion("do not retry this call; if the task needs it, tell the user which permission is missing").
		WithDetail("rule", p.decision.Rule))
}

// approve asks the Approver and returns nil when the call may run.
func (e *Engine) approve(ctx context.Context, p *pending) *tool.Error {
	if e.opts.Approver == nil {
		return tool.Errorf(tool.ApprovalDenied, "%s, and no one is available to approve it", p.decision.Reason).
			WithSuggestion("ask the user to approve this call (for the CLI: --yes) or to allow the tool in the policy").
			WithDetail("rule", p.decision.Rule)
	}
	actx, span := e.approving(ctx, p)
	a, err := e.opts.Approver.Approve(actx, policy.Request{Call: p.call, Definition: p.def, Decision: p.decision})
	var te *tool.Error
	if errors.As(err, &te) && (te.Type == tool.Unavailable || te.Type == tool.InputRequired) {
		e.answered(ctx, span, p, nil, te)
		return te // no one could be asked (a shared queue is down), or the client asks its user and calls again
	}
	if err != nil {
		a = policy.Approval{Approved: false, Reason: "the approval failed: " + err.Error()}
	}
	e.answered(ctx, span, p, &a, nil)
	p.approval = &a
	if a.Approved {
		return nil
	}
	msg := "the user did not approve this call"
	if p.decision.Reason != "" { // what was asked: the model learns why it needed a yes
		msg = p.decision.Reason + "; " + msg
	}
	if a.Reason != "" {
		msg += ": " + a.Reason
	}
	return tool.Errorf(tool.ApprovalDenied, "%s", msg).
		WithSuggestion("do not retry the same call; change the approach or ask the user how to proceed").
		WithDetail("rule", p.decision.Rule)
}

// runAsking runs the call; when the tool itself asks for a human's approval
// of this particular call (tool.NeedsApproval: a dangerous command, say) and
// the Approver says yes, it runs the call once more, approved.
func (e *Engine) runAsking(ctx context.Context, p *pending, next handler) tool.Result {
	res := next(ctx, p)
	if !res.Error.AsksApproval() || e.opts.Approver == nil {
		return res
	}
	reason, _ := res.Error.Details["reason"].(string)
	p.decision = policy.Decision{Effect: policy.Ask, Rule: "tool:" + p.def.Name, Mode: p.decision.Mode,
		Reason: p.def.Name + " asks for approval: " + reason, Confirm: true, ToolAsked: true}
	if err := e.approve(ctx, p); err != nil {
		return tool.ErrorResult(err)
	}
	return next(tool.WithApproval(ctx), p)
}
