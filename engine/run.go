package engine

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/tool"
)

// run calls the tool with a deadline, on a worker (Options.Inline, or an
// Inliner: on the caller's goroutine). A panic becomes an internal error
// (the stack goes to the log, not to the model); a tool on a worker that
// ignores its context is abandoned at the deadline, one inline is waited
// for, and either's late result is discarded.
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
	deadline := time.Now().Add(e.opts.Timeout)
	if e.opts.Inline || inlined(p.tool) {
		// No wake channel: nothing waits for an inline run but its
		// caller, on this goroutine (expire wakes no one without one).
		c := &runCtx{parent: ctx, deadline: deadline, list: &e.deadlines}
		defer c.end()
		res := e.invoke(c, p)
		if ctx.Err() == nil && time.Now().Before(c.deadline) {
			return res
		}
		// Late (its context ended first): the outcome a worker's run has,
		// the result discarded, whatever it was.
		c.state.Store(expired)
		return e.unfinished(ctx, p)
	}
	c := newRunCtx(ctx, deadline, &e.deadlines)
	defer c.end()
	e.deadlines.add(c)
	e.workers.dispatch(job{c, p})
	if parent := ctx.Done(); parent != nil {
		select {
		case <-c.wake:
		case <-parent:
			c.state.CompareAndSwap(running, expired)
		}
	} else {
		<-c.wake
	}
	e.deadlines.remove(c)
	if c.state.Load() == finished {
		return c.res
	}
	return e.unfinished(ctx, p)
}

// unfinished is the result of a run that its caller's context or the
// engine's deadline ended.
func (e *Engine) unfinished(ctx context.Context, p *pending) tool.Result {
	err := ctx.Err()
	if err == nil {
		err = context.DeadlineExceeded
	}
	te := tool.AsError(err)
	te.Message = fmt.Sprintf("%s did not finish: %v", p.def.Name, err)
	if err == context.DeadlineExceeded {
		te.Message = fmt.Sprintf("%s did not finish within %s", p.def.Name, e.opts.Timeout)
	}
	return tool.ErrorResult(te)
}

// Inliner is a tool that runs on the goroutine that called Execute, as
// Options.Inline runs every tool, when its Inline says so: one that
// honours its context (it returns as soon as the context ends) and mostly
// waits for another process, such as a call forwarded to a sandbox.
type Inliner interface {
	Inline() bool
}

func inlined(t tool.Tool) bool {
	i, ok := t.(Inliner)
	return ok && i.Inline()
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
	c *runCtx
	p *pending
}

// workers run tools on goroutines that outlive a call, so a call neither
// pays for a new goroutine's stack growth nor waits for a tool that ignores
// its context: a stuck tool holds only its own worker, and a new worker
// starts whenever none is idle. An idle worker waits on the job channel
// alone (a select with a timer would double the cost of a hand-off); every
// idleWorker a look tells the idle workers to go, all of them when no job
// came since the last look, else half.
type workers struct {
	e    *Engine
	jobs chan job // a job without a call tells a worker to go

	idle  atomic.Int32 // workers waiting for a job
	alive atomic.Int32
	used  atomic.Bool // a job was handed over since the last look

	mu    sync.Mutex
	every time.Duration // between looks: idleWorker
	look  *time.Timer
	armed bool
}

// idleWorker is how often idle workers are told to go.
const idleWorker = 10 * time.Second

func (w *workers) dispatch(j job) {
	select {
	case w.jobs <- j:
		if !w.used.Load() {
			w.used.Store(true)
		}
	default:
		w.alive.Add(1)
		w.mu.Lock()
		if !w.armed {
			w.armed = true
			if w.look == nil {
				w.look = time.AfterFunc(w.every, w.retire)
			} else {
				w.look.Reset(w.every)
			}
		}
		w.mu.Unlock()
		go w.work(j)
	}
}

func (w *workers) work(j job) {
	defer w.alive.Add(-1)
	for {
		j.c.finish(w.e.invoke(j.c, j.p))
		w.idle.Add(1)
		j = <-w.jobs
		w.idle.Add(-1)
		if j.p == nil {
			return
		}
	}
}

// retire tells idle workers to go and looks again later while any live.
func (w *workers) retire() {
	n := w.idle.Load()
	if w.used.Swap(false) {
		n /= 2
	}
	for ; n > 0; n-- {
		select {
		case w.jobs <- job{}:
		default:
			n = 0
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.alive.Load() > 0 {
		w.look.Reset(w.every)
	} else {
		w.armed = false
	}
}
