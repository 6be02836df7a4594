package engine

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/tool"
)

// run calls the tool with a deadline. A panic becomes an internal error (the
// stack goes to the log, not to the model); a tool that ignores its context
// is abandoned at the deadline and its late result discarded.
func (e *Engine) run(ctx context.Context, p *pending) (res tool.Result) {
	if err := ctx.Err(); err != nil {
		te := tool.AsError(err)
		te.Message = fmt.Sprintf("%s was not started: %v", p.def.Name, err)
		return tool.ErrorResult(te)
	}
	if e.tel.tracer != nil {
		var span trace.Span
		ctx, span = e.running(ctx, p)
		defer func() { endRun(span, res) }()
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	done := make(chan tool.Result, 1)
	e.workers.dispatch(job{ctx, p, done})
	select {
	case res := <-done:
		return res
	case <-ctx.Done():
		err := tool.AsError(ctx.Err())
		err.Message = fmt.Sprintf("%s did not finish: %v", p.def.Name, ctx.Err())
		if ctx.Err() == context.DeadlineExceeded {
			err.Message = fmt.Sprintf("%s did not finish within %s", p.def.Name, e.opts.Timeout)
		}
		return tool.ErrorResult(err)
	}
}

func (e *Engine) invoke(ctx context.Context, p *pending) (res tool.Result) {
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("tool panicked", "tool", p.def.Name, "call", p.call.ID, "panic", r, "stack", string(debug.Stack()))
			res = tool.ErrorResult(tool.Errorf(tool.Internal, "%s failed unexpectedly (it panicked: %v)", p.def.Name, r).
				WithSuggestion("this is a bug in the tool, not in your call; try another way to reach the goal"))
		}
	}()
	res, err := p.tool.Run(ctx, p.call)
	if err != nil {
		te := tool.AsError(err)
		if ctx.Err() != nil && te.Type == tool.Internal {
			te = tool.AsError(ctx.Err())
		}
		return tool.ErrorResult(te)
	}
	if res.Error != nil && len(res.Content) == 0 {
		res.Content = []tool.Content{tool.TextContent(res.Error.Text())}
	}
	return res
}

// job is one tool run handed to a worker.
type job struct {
	ctx  context.Context
	p    *pending
	done chan<- tool.Result
}

// workers run tools on goroutines that outlive a call, so a call neither
// pays for a new goroutine's stack growth nor waits for a tool that ignores
// its context: a stuck tool holds only its own worker, and a new worker
// starts whenever none is idle.
type workers struct {
	e    *Engine
	jobs chan job
}

// idleWorker is how long a worker waits for another job before it exits.
const idleWorker = 10 * time.Second

func (w *workers) dispatch(j job) {
	select {
	case w.jobs <- j:
	default:
		go w.work(j)
	}
}

func (w *workers) work(j job) {
	idle := time.NewTimer(idleWorker)
	defer idle.Stop()
	for {
		j.done <- w.e.invoke(j.ctx, j.p)
		idle.Reset(idleWorker)
		select {
		case j = <-w.jobs:
		case <-idle.C:
			return
		}
	}
}
