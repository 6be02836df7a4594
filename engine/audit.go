package engine

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// Auditor records one entry per call. *audit.Log is one.
type Auditor interface {
	Append(ctx context.Context, rec audit.Record) error
}

// audit writes one record per call, whatever became of it. It fails closed:
// once the log cannot be written, calls are refused until the engine is
// rebuilt with a working log.
func (e *Engine) audit(next handler) handler {
	if e.opts.Auditor == nil {
		return next
	}
	var broken atomic.Pointer[error]
	return func(ctx context.Context, p *pending) tool.Result {
		p.start = time.Now()
		if errp := broken.Load(); errp != nil {
			return tool.ErrorResult(tool.Errorf(tool.Unavailable, "the audit log cannot be written (%v), so no call may run", *errp).
				WithSuggestion("stop and tell the user that toolgate's audit log is failing"))
		}
		res := next(ctx, p)
		rec := record(p, res)
		if r := e.opts.Redactor; r != nil {
			// The arguments are read as a string in place, not copied:
			// Redact keeps nothing of its input, and only a text it made
			// (n > 0) is kept. Redact returns after its scan for the
			// literals when it finds none (no pattern can match).
			raw := unsafe.String(unsafe.SliceData(rec.Arguments), len(rec.Arguments))
			if args, n := r.Redact(raw); n > 0 {
				rec.Arguments = json.RawMessage(args)
			}
		}
		if err := e.opts.Auditor.Append(p.detached(ctx), rec); err != nil {
			failed := err // a copy, so that err is not moved to the heap on every call
			broken.Store(&failed)
			e.log.Error("audit log write failed; refusing further calls", "err", err)
			res = withMeta(res, "audit_error", err.Error())
		}
		return res
	}
}

// detached is ctx without its cancellation (context.WithoutCancel), and
// ctx itself when it is Background or TODO. It does not ask ctx for Done
// to learn whether it has a cancellation to remove: a call's context (a
// cancelCtx of the MCP request, under values) would make its Done channel
// for that alone, 96 bytes per call, where WithoutCancel costs 16; and
// the context it returns is p's (p.det): no allocation of its own.
func (p *pending) detached(ctx context.Context) context.Context {
	if ctx == context.Background() || ctx == context.TODO() {
		return ctx
	}
	p.det.parent = ctx
	return &p.det
}

// detachedCtx is context.WithoutCancel(parent), kept in a call's pending:
// never done, no deadline, its parent's values but for the one by which
// package context finds a context's own cancelation (cancelKey), as
// WithoutCancel's context answers.
type detachedCtx struct {
	parent context.Context
}

func (*detachedCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*detachedCtx) Done() <-chan struct{}       { return nil }
func (*detachedCtx) Err() error                  { return nil }

func (c *detachedCtx) Value(key any) any {
	if key == cancelKey {
		return nil
	}
	return c.parent.Value(key)
}

// record describes a finished call for the audit log.
func record(p *pending, res tool.Result) audit.Record {
	rec := audit.Record{
		Time:      p.start.UTC(),
		CallID:    p.call.ID,
		Session:   p.call.Session,
		Principal: p.call.Principal,
		Auth:      auditAuth(p.call.Auth),
		Tool:      p.call.Name,
		Arguments: p.call.Args,
		Decision:  string(p.decision.Effect),
		Rule:      p.decision.Rule,
		Mode:      string(p.decision.Mode),
		Duration:  time.Since(p.start),
		Outcome:   outcome(res),
	}
	if p.approval != nil {
		rec.Approver, rec.Scope = p.approval.Approver, string(p.approval.Scope)
		if p.approval.Approved {
			rec.Decision = string(policy.Allow)
		} else {
			rec.Decision = string(policy.Deny)
		}
	}
	if res.Error != nil {
		rec.ErrorType = string(res.Error.Type)
		if rec.Decision == "" && res.Error.Type == tool.PermissionDenied {
			rec.Decision = string(policy.Deny)
		}
	}
	if p.replayed {
		rec.Outcome += " (replayed)"
	}
	if len(res.Meta) == 0 { // the common case: neither look below can find anything
		return rec
	}
	// A tool wrapped with a fallback (orchestrate.Fallback) says in its
	// result's metadata that another tool answered; the record says so too.
	if fb, ok := res.Meta["fallback"].(map[string]any); ok {
		if to, ok := fb["to"].(string); ok {
			rec.Outcome += " (fallback: " + to + ")"
		}
	}
	// A check of the result (Options.ResultChecker, trust.FlaggedMeta) says what it
	// found in it.
	if kinds, ok := res.Meta["flagged"].(string); ok && kinds != "" {
		rec.Outcome += " (flagged: " + kinds + ")"
	}
	return rec
}

func outcome(res tool.Result) string {
	if res.Error == nil {
		return "ok"
	}
	switch res.Error.Type {
	case tool.PermissionDenied, tool.ApprovalDenied, tool.CircuitOpen:
		return "denied"
	case tool.InvalidArguments, tool.UnknownTool:
		return "invalid"
	case tool.RateLimited, tool.LoopDetected:
		return "limited"
	}
	return "error"
}

// auditAuth is the audit log's form of a call's credential.
func auditAuth(c *tool.Credential) audit.Auth {
	if c == nil {
		return audit.Auth{Kind: audit.AuthLocal}
	}
	return audit.Auth{Kind: c.Kind, Issuer: c.Issuer, JTI: c.JTI, Key: c.Key}
}
