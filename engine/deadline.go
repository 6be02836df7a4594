package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// States of a run: whichever of the tool's result and the deadline comes
// first moves it on from running, and wakes the caller.
const (
	running int32 = iota
	finished
	expired
)

// runCtx is the context a tool runs with: the caller's, with the engine's
// deadline. It costs two allocations until something asks for its Done
// channel, its error after the deadline or its parent's cancellation, or a
// value that is a context: only then is the context.WithDeadline made that
// answers from there on, so a tool that never looks at its context pays
// for no timer. The caller's wait for the deadline is the engine's
// deadline list, one timer for every run.
type runCtx struct {
	parent   context.Context
	deadline time.Time

	mu     sync.Mutex
	ctx    context.Context // context.WithDeadline(parent, deadline), once asked for
	cancel context.CancelFunc
	ended  bool // the run is over: the context is cancelled

	state atomic.Int32  // running, finished or expired
	res   tool.Result   // the tool's result, once finished
	done  chan struct{} // signalled once, when state leaves running

	prev, next *runCtx // in the deadline list, sorted by deadline
	listed     bool
}

func newRunCtx(parent context.Context, deadline time.Time) *runCtx {
	return &runCtx{parent: parent, deadline: deadline, done: make(chan struct{}, 1)}
}

// Deadline is the earlier of the parent's deadline and the engine's.
func (c *runCtx) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

func (c *runCtx) Done() <-chan struct{} { return c.real().Done() }

func (c *runCtx) Err() error {
	c.mu.Lock()
	made, ended := c.ctx != nil, c.ended
	c.mu.Unlock()
	if !made && !ended && c.parent.Err() == nil && time.Until(c.deadline) > 0 {
		return nil
	}
	return c.real().Err()
}

// Value is the parent's value for key, unless that value is a context (as
// the value of the key by which package context finds a cancelable
// parent): then it is the deadline context's.
func (c *runCtx) Value(key any) any {
	v := c.parent.Value(key)
	if _, ok := v.(context.Context); ok {
		return c.real().Value(key)
	}
	return v
}

// real returns the deadline context, making it on first use (cancelled
// when the run is over).
func (c *runCtx) real() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil {
		c.ctx, c.cancel = context.WithDeadline(c.parent, c.deadline)
		if c.ended {
			c.cancel()
		}
	}
	return c.ctx
}

// end cancels the context: the run is over. When the run expired (the
// deadline passed or the caller's context ended), the context is made now
// if it was not yet and end waits until it is done, so that the tool, and
// anything it left running, sees context.DeadlineExceeded or the caller's
// error, and never the context.Canceled of the end or of whatever the
// caller does next.
func (c *runCtx) end() {
	c.mu.Lock()
	expired := c.state.Load() == expired
	c.ended = true
	if c.ctx == nil && !expired {
		c.mu.Unlock()
		return // the tool finished without looking: nothing to cancel
	}
	if c.ctx == nil {
		c.ctx, c.cancel = context.WithDeadline(c.parent, c.deadline)
	}
	ctx, cancel := c.ctx, c.cancel
	c.mu.Unlock()
	if expired {
		<-ctx.Done()
	}
	cancel()
}

// finish delivers the tool's result, unless the run expired first.
func (c *runCtx) finish(res tool.Result) {
	c.res = res
	if c.state.CompareAndSwap(running, finished) {
		c.done <- struct{}{}
	}
}

// expire wakes the caller at the deadline, unless the result came first.
func (c *runCtx) expire() {
	if c.state.CompareAndSwap(running, expired) {
		c.done <- struct{}{}
	}
}

// deadlines keeps the runs in progress by deadline and expires them with
// one timer, armed for the earliest; with one Timeout for every call,
// deadlines come in the order runs start and a run is added at the tail.
type deadlines struct {
	mu         sync.Mutex
	head, tail *runCtx
	timer      *time.Timer
	armed      time.Time // when the timer fires; zero: not armed
}

func (d *deadlines) add(c *runCtx) {
	d.mu.Lock()
	defer d.mu.Unlock()
	at := d.tail
	for at != nil && at.deadline.After(c.deadline) {
		at = at.prev
	}
	c.prev, c.listed = at, true
	if at == nil {
		c.next, d.head = d.head, c
	} else {
		c.next, at.next = at.next, c
	}
	if c.next == nil {
		d.tail = c
	} else {
		c.next.prev = c
	}
	if d.armed.IsZero() || c.deadline.Before(d.armed) {
		d.arm(c.deadline)
	}
}

func (d *deadlines) remove(c *runCtx) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unlink(c)
}

func (d *deadlines) unlink(c *runCtx) {
	if !c.listed {
		return
	}
	if c.prev == nil {
		d.head = c.next
	} else {
		c.prev.next = c.next
	}
	if c.next == nil {
		d.tail = c.prev
	} else {
		c.next.prev = c.prev
	}
	c.prev, c.next, c.listed = nil, nil, false
}

// arm sets the timer to fire at t (the caller holds d.mu).
func (d *deadlines) arm(t time.Time) {
	d.armed = t
	if d.timer == nil {
		d.timer = time.AfterFunc(time.Until(t), d.fire)
	} else {
		d.timer.Reset(time.Until(t))
	}
}

// fire expires the runs past their deadline and arms the timer for the
// next one. It may find none due: the run it was armed for ended.
func (d *deadlines) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	d.armed = time.Time{}
	for d.head != nil && !d.head.deadline.After(now) {
		c := d.head
		d.unlink(c)
		c.expire()
	}
	if d.head != nil {
		d.arm(d.head.deadline)
	}
}
