package tool

import (
	"context"
	"log/slog"
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
