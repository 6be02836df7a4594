package tool

import (
	"context"
	"log/slog"
	"time"
)

// ProgressFunc receives a running tool's progress: done out of total (total
// 0 when unknown) and an optional message.
type ProgressFunc func(done, total float64, message string)

type progressKey struct{}
type loggerKey struct{}

// WithProgress returns a context whose tools report progress to fn. The
// caller of a tool (e.g. an MCP server whose client asked for progress)
// sets it; tools call ReportProgress.
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ReportProgress tells the caller how far a long-running tool has come: done
// out of total (0 when unknown), with an optional message. It does nothing
// when no one listens, so tools may call it unconditionally.
func ReportProgress(ctx context.Context, done, total float64, message string) {
	if fn, ok := ctx.Value(progressKey{}).(ProgressFunc); ok && fn != nil {
		fn(done, total, message)
	}
}

// WithLogger returns a context whose tools log to l (for an MCP client, its
// log notifications).
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// Logger returns the logger a tool should write messages for its caller to:
// the one set with WithLogger, else one that discards everything. It never
// returns nil.
func Logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

type approvedKey struct{}

// WithApproval returns a context saying that a human approved this call
// after the tool asked for it (see NeedsApproval). Only the engine sets it.
func WithApproval(ctx context.Context) context.Context {
	return context.WithValue(ctx, approvedKey{}, true)
}

// Approved reports whether the call running with ctx was approved by a
// human after the tool asked for it.
func Approved(ctx context.Context) bool {
	v, _ := ctx.Value(approvedKey{}).(bool)
	return v
}

// NeedsApproval returns an error by which a tool asks for a human's approval
// of this particular call (a dangerous command, say): permission_denied with
// Details["needs_approval"] = true and the reason. The engine asks its
// Approver and, on yes, runs the call again with a context for which
// Approved is true; without an approver the error stands.
func NeedsApproval(reason string) *Error {
	return Errorf(PermissionDenied, "this call needs a human's approval: %s", reason).
		WithSuggestion("ask the user to approve it, or do the task another way").
		WithDetail("needs_approval", true).WithDetail("reason", reason)
}

// AsksApproval reports whether e is a tool's request for approval.
func (e *Error) AsksApproval() bool {
	if e == nil {
		return false
	}
	v, _ := e.Details["needs_approval"].(bool)
	return v
}

// WithTimeout is context.WithTimeout(ctx, d) for a tool: on the context
// the engine runs a tool with, it costs no timer of its own (the engine
// keeps every deadline with one), and the derived context is cancelled
// when ctx is, with no goroutine.
func WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if t, ok := ctx.(interface {
		WithTimeout(time.Duration) (context.Context, context.CancelFunc)
	}); ok {
		return t.WithTimeout(d)
	}
	return context.WithTimeout(ctx, d)
}

// WithTimeoutValue is context.WithValue(WithTimeout(ctx, d)) with key
// and val: on the context the engine runs a tool with, the derived
// context carries val itself, one allocation fewer.
func WithTimeoutValue(ctx context.Context, d time.Duration, key, val any) (context.Context, context.CancelFunc) {
	if t, ok := ctx.(interface {
		WithTimeoutValue(time.Duration, any, any) (context.Context, context.CancelFunc)
	}); ok {
		return t.WithTimeoutValue(d, key, val)
	}
	ctx, cancel := WithTimeout(ctx, d)
	return context.WithValue(ctx, key, val), cancel
}
