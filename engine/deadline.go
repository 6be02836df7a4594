package engine

import (
	"context"
	"reflect"
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
// channel or registers with it (a child, an AfterFunc): only then is the
// run put on the engine's deadline list (one timer for every run) and,
// when the caller's context can end, under a context.AfterFunc of it; the
// channel is made for Done alone. It is cancelled by
// whichever comes first of the deadline (context.DeadlineExceeded), the
// caller's context (its error) and the end of the run (context.Canceled,
// unless the run expired: then the deadline's or the caller's error, so
// that the tool never sees the end's). A context derived from it is
// registered by its AfterFunc method, without a goroutine, as package
// context does for its own; one derived by its WithTimeout
// (tool.WithTimeout) is a runCtx too, on the same list.
type runCtx struct {
	parent   context.Context
	deadline time.Time
	list     *deadlines // the engine's
	key, val any        // WithTimeoutValue's; key nil: none

	mu     sync.Mutex
	done   chan struct{} // made when first asked; closed once err is set
	err    error
	afters []after     // run when err is set
	first  [1]after    // afters' first room
	seq    uint64      // of afters' ids
	stop   func() bool // stops the context.AfterFunc of parent
	kid    bool        // on its parent runCtx's afters
	armed  bool        // on the list and registered with its parent

	state atomic.Int32  // running, finished or expired
	res   tool.Result   // the tool's result, once finished
	wake  chan struct{} // signalled once, when state leaves running; nil: an inline run's or WithTimeout's

	prev, next *runCtx // in the deadline list, sorted by deadline
	listed     bool
}

// after is a function registered by AfterFunc, or a runCtx made by
// WithTimeout.
type after struct {
	id  uint64
	f   func()
	kid *runCtx
}

func newRunCtx(parent context.Context, deadline time.Time, list *deadlines) *runCtx {
	return &runCtx{parent: parent, deadline: deadline, list: list, wake: make(chan struct{}, 1)}
}

// WithTimeout is context.WithTimeout(c, d) with its deadline on c's list.
func (c *runCtx) WithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	t := &runCtx{parent: c, deadline: time.Now().Add(d), list: c.list}
	return t, t.end
}

// WithTimeoutValue is context.WithValue(c.WithTimeout(d), key, val), the
// value kept by the derived context itself (tool.WithTimeoutValue).
func (c *runCtx) WithTimeoutValue(d time.Duration, key, val any) (context.Context, context.CancelFunc) {
	if key == nil {
		panic("nil key")
	}
	if !reflect.TypeOf(key).Comparable() {
		panic("key is not comparable")
	}
	t := &runCtx{parent: c, deadline: time.Now().Add(d), list: c.list, key: key, val: val}
	return t, t.end
}

// Deadline is the earlier of the parent's deadline and the engine's.
func (c *runCtx) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

func (c *runCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watch()
	return c.done
}

// watch makes the Done channel, unless it was made (or the context
// ended), and arms the context (c.mu held).
func (c *runCtx) watch() {
	if c.done != nil {
		return
	}
	c.done = make(chan struct{})
	c.arm()
}

// arm has the deadline and the parent end the context from then on,
// unless they already do (c.mu held, c not cancelled). It makes no Done
// channel: a context that only a child or an AfterFunc registered with
// ends them without one (cancel runs them), and Done makes it if it is
// ever asked.
func (c *runCtx) arm() {
	if c.armed {
		return
	}
	c.armed = true
	c.list.add(c)
	if p, ok := c.parent.(*runCtx); ok {
		if c.kid = p.adopt(c); !c.kid {
			go c.parentEnded()
		}
	} else if c.parent.Done() != nil {
		c.stop = context.AfterFunc(c.parent, c.parentEnded)
	}
}

func (c *runCtx) parentEnded() { c.cancel(c.parent.Err()) }

// Err is the error the context was cancelled with, nil before. Asked
// after its parent or its deadline ended it, it cancels it then, whether
// or not anything asked for Done.
func (c *runCtx) Err() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if err = c.parent.Err(); err == nil && !time.Now().Before(c.deadline) {
		err = context.DeadlineExceeded
	}
	if err == nil {
		return nil
	}
	return c.cancel(err)
}

// Value is the parent's value for key, but for the key by which package
// context finds a context's own cancelation (cancelKey): none, as for a
// context of a type of its own, so that context.Cause answers Err and a
// child registers through AfterFunc; and for WithTimeoutValue's key: its
// value.
func (c *runCtx) Value(key any) any {
	if key == cancelKey {
		return nil
	}
	if c.key != nil && c.key == key {
		return c.val
	}
	return c.parent.Value(key)
}

// cancelKey is the key package context asks a context's Value for its
// cancelation: context.Cause asks it of a context that has ended.
var cancelKey = func() any {
	var p keyProbe
	context.Cause(&p)
	return p.key
}()

// keyProbe is an ended context that keeps the last key it was asked.
type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Value(key any) any { p.key = key; return nil }
func (p *keyProbe) Err() error        { return context.Canceled }

// AfterFunc arranges to call f once the context is cancelled (at once, on
// a goroutine of its own, when it already is), as a cancelable context of
// package context does for a child: f runs on the goroutine that cancels,
// so f must not block. stop unregisters f; it reports whether that stopped
// f from being called.
func (c *runCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	c.seq++
	id := c.seq
	c.push(after{id: id, f: f})
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, a := range c.afters {
			if a.id == id {
				c.afters = append(c.afters[:i], c.afters[i+1:]...)
				return true
			}
		}
		return false
	}
}

// adopt registers kid, to be cancelled with c, unless c already is; it
// reports whether it did.
func (c *runCtx) adopt(kid *runCtx) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return false
	}
	c.push(after{kid: kid})
	return true
}

// push registers a, arming the context if nothing did yet (c.mu held,
// c not cancelled).
func (c *runCtx) push(a after) {
	c.arm()
	if c.afters == nil {
		c.afters = c.first[:0]
	}
	c.afters = append(c.afters, a)
}

// forget unregisters kid.
func (c *runCtx) forget(kid *runCtx) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, a := range c.afters {
		if a.kid == kid {
			c.afters = append(c.afters[:i], c.afters[i+1:]...)
			return
		}
	}
}

// cancel ends the context with err, unless it already ended, takes it
// off the list and returns the error it ended with.
func (c *runCtx) cancel(err error) error {
	c.mu.Lock()
	if c.err != nil {
		defer c.mu.Unlock()
		return c.err
	}
	c.err = err
	if c.done == nil {
		c.done = closed
	} else {
		close(c.done)
	}
	afters, stop, kid := c.afters, c.stop, c.kid
	c.afters, c.stop, c.kid = nil, nil, false
	c.mu.Unlock()
	c.list.remove(c)
	if stop != nil {
		stop()
	}
	if kid {
		c.parent.(*runCtx).forget(c)
	}
	for _, a := range afters {
		if a.kid != nil {
			a.kid.parentEnded()
		} else {
			a.f()
		}
	}
	return err
}

// closed is the Done of a context cancelled before anything asked for it.
var closed = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// end cancels the context: the run is over. A run that expired (its
// deadline passed or its caller's context ended) ends with that error, so
// that the tool, and anything it left running, never sees the
// context.Canceled of the end or of whatever the caller does next.
func (c *runCtx) end() {
	err := c.parent.Err()
	if err == nil && c.state.Load() == expired {
		err = context.DeadlineExceeded
	}
	if err == nil {
		err = context.Canceled
	}
	c.cancel(err)
}

// finish delivers the tool's result, unless the run expired first.
func (c *runCtx) finish(res tool.Result) {
	c.res = res
	if c.state.CompareAndSwap(running, finished) {
		c.wake <- struct{}{}
	}
}

// expire wakes the caller at the deadline, unless the result came first,
// and ends the tool's context.
func (c *runCtx) expire() {
	if c.state.CompareAndSwap(running, expired) && c.wake != nil {
		c.wake <- struct{}{}
	}
	c.cancel(context.DeadlineExceeded)
}

// deadlines keeps the runs in progress (and contexts made by their
// WithTimeout) by deadline and expires them with one timer, armed for the
// earliest; with one Timeout for every call, deadlines mostly come in the
// order they are added, and one is added walking back from the tail.
type deadlines struct {
	mu         sync.Mutex
	head, tail *runCtx
	timer      *time.Timer
	armed      time.Time // when the timer fires; zero: not armed
}

// add puts c on the list, unless it is on it.
func (d *deadlines) add(c *runCtx) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c.listed {
		return
	}
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

// fire expires the runs past their deadline (after letting go of the
// list: expiring cancels their contexts, which calls what was registered
// with them) and arms the timer for the next one. It may find none due:
// the run it was armed for ended.
func (d *deadlines) fire() {
	d.mu.Lock()
	now := time.Now()
	d.armed = time.Time{}
	var due []*runCtx
	for d.head != nil && !d.head.deadline.After(now) {
		c := d.head
		d.unlink(c)
		due = append(due, c)
	}
	if d.head != nil {
		d.arm(d.head.deadline)
	}
	d.mu.Unlock()
	for _, c := range due {
		c.expire()
	}
}
