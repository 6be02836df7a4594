package engine

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/toolgate/toolgate/tool"
)

type runKey struct{}

// keptKey is the key of the value derived's WithTimeoutValue keeps.
type keptKey struct{}

// derived makes every kind of context a tool derives from c: package
// context's cancel, timeout and AfterFunc, and WithTimeout's own.
func derived(t *testing.T, c *runCtx) (kids []context.Context, called chan struct{}) {
	t.Helper()
	called = make(chan struct{})
	wc, cancel := context.WithCancel(c)
	t.Cleanup(cancel)
	wt, cancel := context.WithTimeout(c, time.Hour)
	t.Cleanup(cancel)
	ot, cancel := c.WithTimeout(time.Hour)
	t.Cleanup(cancel)
	ot.Done()
	ov, cancel := c.WithTimeoutValue(time.Hour, keptKey{}, "kept")
	t.Cleanup(cancel)
	if v := ov.Value(keptKey{}); v != "kept" {
		t.Fatalf("WithTimeoutValue's context gives %v for its key", v)
	}
	stop := context.AfterFunc(c, func() { close(called) })
	t.Cleanup(func() { stop() })
	return []context.Context{wc, wt, ot, ov}, called
}

func ended(t *testing.T, what string, ctx context.Context, want error) {
	t.Helper()
	<-ctx.Done()
	if err := ctx.Err(); err != want {
		t.Errorf("%s: Err %v, want %v", what, err, want)
	}
	if err := context.Cause(ctx); err != want {
		t.Errorf("%s: Cause %v, want %v", what, err, want)
	}
}

// TestRunCtxNoGoroutine: contexts derived from a run's context are
// registered with it, not watched by a goroutine, and let go when they end.
func TestRunCtxNoGoroutine(t *testing.T) {
	var d deadlines
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newRunCtx(parent, time.Now().Add(time.Hour), &d)
	before := runtime.NumGoroutine()
	var stops []context.CancelFunc
	for range 10 {
		ctx, cancel := context.WithTimeout(c, time.Minute)
		stops = append(stops, cancel)
		ctx, cancel = context.WithCancel(ctx)
		stops = append(stops, cancel)
		_, cancel = c.WithTimeout(time.Minute)
		stops = append(stops, cancel)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines more", n-before)
	}
	c.mu.Lock()
	n := len(c.afters)
	c.mu.Unlock()
	if n != 10 {
		t.Errorf("%d registered, want the 10 derived from it directly", n)
	}
	for _, stop := range stops {
		stop()
	}
	c.mu.Lock()
	n = len(c.afters)
	c.mu.Unlock()
	if n != 0 || d.head != c || d.tail != c {
		t.Errorf("after their cancel: %d still registered; list head %p tail %p, want only %p", n, d.head, d.tail, c)
	}
	c.end()
	if d.head != nil {
		t.Error("the run ended and is still on the list")
	}
}

// TestRunCtxParentCancels: the caller's cancellation ends the context and
// everything derived from it with the caller's error.
func TestRunCtxParentCancels(t *testing.T) {
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), runKey{}, "v"))
	c := newRunCtx(parent, time.Now().Add(time.Hour), &deadlines{})
	if c.Err() != nil {
		t.Fatal(c.Err())
	}
	kids, called := derived(t, c)
	cancel(errors.New("why"))
	ended(t, "run", c, context.Canceled)
	for i, k := range kids {
		ended(t, "derived "+string(rune('a'+i)), k, context.Canceled)
		if k.Value(runKey{}) != "v" {
			t.Errorf("derived %d lost the caller's value", i)
		}
	}
	<-called
	c.end()
	if c.Err() != context.Canceled {
		t.Errorf("the end changed the error to %v", c.Err())
	}

	// Only a WithTimeout's Done asked (as an upstream call does): the
	// caller's cancellation still reaches it.
	parent, cancel = context.WithCancelCause(context.Background())
	c = newRunCtx(parent, time.Now().Add(time.Hour), &deadlines{})
	kid, stop := c.WithTimeout(time.Hour)
	defer stop()
	kid.Done()
	cancel(errors.New("why"))
	ended(t, "WithTimeout alone", kid, context.Canceled)
}

// TestRunCtxDeadline: the engine's list ends the context at its deadline
// with DeadlineExceeded, and everything derived from it; WithTimeout's
// shorter deadline ends only the derived context.
func TestRunCtxDeadline(t *testing.T) {
	var d deadlines
	// A shorter WithTimeout ends alone: its run, an hour away, goes on
	// (however long the machine stalls between the two).
	long := newRunCtx(context.Background(), time.Now().Add(time.Hour), &d)
	d.add(long)
	short, cancel := long.WithTimeout(time.Millisecond)
	defer cancel()
	ended(t, "shorter WithTimeout", short, context.DeadlineExceeded)
	if sd, _ := short.Deadline(); !sd.Before(long.deadline) {
		t.Errorf("WithTimeout's deadline %v is not before the run's %v", sd, long.deadline)
	}
	select {
	case <-long.Done():
		t.Fatal("the run ended with its shorter child")
	default:
	}
	d.remove(long)
	long.end()

	// The run's own deadline ends it and everything derived from it
	// (derived before or after it passed: either way with its error).
	c := newRunCtx(context.Background(), time.Now().Add(50*time.Millisecond), &d)
	d.add(c)
	kids, called := derived(t, c)
	ended(t, "run", c, context.DeadlineExceeded)
	<-c.wake // the caller is woken

	// Only a WithTimeout's Done asked: the run's deadline still reaches it.
	r := newRunCtx(context.Background(), time.Now().Add(time.Millisecond), &d)
	kid, stop := r.WithTimeout(time.Hour)
	defer stop()
	kid.Done()
	ended(t, "WithTimeout alone", kid, context.DeadlineExceeded)
	if c.state.Load() != expired {
		t.Errorf("state %d, want expired", c.state.Load())
	}
	for i, k := range kids {
		ended(t, "derived "+string(rune('a'+i)), k, context.DeadlineExceeded)
	}
	<-called
	c.end()
	if c.Err() != context.DeadlineExceeded {
		t.Errorf("the end changed the error to %v", c.Err())
	}
}

// TestRunCtxErrWithoutDone: past its deadline, Err says so and Done is
// closed, though nothing asked for Done (nor listed the run) before.
func TestRunCtxErrWithoutDone(t *testing.T) {
	var d deadlines
	c := newRunCtx(context.Background(), time.Now().Add(-time.Second), &d)
	if dl, ok := c.Deadline(); !ok || !dl.Equal(c.deadline) {
		t.Errorf("Deadline %v %v", dl, ok)
	}
	if err := c.Err(); err != context.DeadlineExceeded {
		t.Fatalf("Err %v", err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Err is set and Done is not closed")
	}
	if d.head != nil {
		t.Error("an ended context was listed")
	}
}

// TestRunCtxEnd: the end cancels with context.Canceled, unless the run
// expired: then with DeadlineExceeded, or the caller's error when the
// caller's context ended; what was derived sees the same.
func TestRunCtxEnd(t *testing.T) {
	for _, tc := range []struct {
		name     string
		expired  bool
		cancel   bool
		want     error
		deadline time.Duration // of the caller's context; 0: none
	}{
		{"finished", false, false, context.Canceled, 0},
		{"expired", true, false, context.DeadlineExceeded, 0},
		{"expired, the caller cancelled", true, true, context.Canceled, 0},
		{"the caller's deadline passed", true, false, context.DeadlineExceeded, -time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.deadline != 0 {
				parent, cancel = context.WithTimeout(parent, tc.deadline)
				defer cancel()
			}
			var d deadlines
			c := newRunCtx(parent, time.Now().Add(time.Hour), &d)
			if tc.expired {
				c.state.Store(expired)
			}
			kids, called := derived(t, c)
			if tc.cancel {
				cancel()
			}
			c.end()
			ended(t, "run", c, tc.want)
			for i, k := range kids {
				ended(t, "derived "+string(rune('a'+i)), k, tc.want)
			}
			<-called
			d.mu.Lock() // the parent's end may have taken it off, on its own goroutine
			listed := d.head != nil
			d.mu.Unlock()
			if listed {
				t.Error("the run ended and is still on the list")
			}
		})
	}
}

// TestRunCtxAfterFunc: stop before the cancellation keeps f from being
// called and says so once; f registered after it is called anyway.
func TestRunCtxAfterFunc(t *testing.T) {
	c := newRunCtx(context.Background(), time.Now().Add(time.Hour), &deadlines{})
	n := 0
	stop := c.AfterFunc(func() { n++ })
	keep := c.AfterFunc(func() { n += 10 })
	if !stop() || stop() {
		t.Error("stop: want true, then false")
	}
	c.end()
	if n != 10 {
		t.Errorf("called %d, want only the one kept (10)", n)
	}
	if keep() {
		t.Error("stop after the call says it stopped it")
	}
	late := make(chan struct{})
	if c.AfterFunc(func() { close(late) })() {
		t.Error("stop of a function registered after the end says it stopped it")
	}
	<-late
	kid, cancel := c.WithTimeout(time.Hour) // made after the end: ended with it
	defer cancel()
	ended(t, "WithTimeout after the end", kid, context.Canceled)
}

// TestRunCtxValue: the caller's values pass; package context's own key
// finds no cancelable context (so context.Cause is Err).
func TestRunCtxValue(t *testing.T) {
	if cancelKey == nil {
		t.Fatal("package context's key was not found")
	}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), runKey{}, "v"))
	defer cancel()
	c := newRunCtx(parent, time.Now().Add(time.Hour), &deadlines{})
	if c.Value(runKey{}) != "v" || c.Value(cancelKey) != nil || parent.Value(cancelKey) == nil {
		t.Errorf("values: %v, %v; the parent's %v", c.Value(runKey{}), c.Value(cancelKey), parent.Value(cancelKey))
	}
}

// TestRunCtxWithTimeoutValue: WithTimeoutValue's context carries its value
// (and its parent's), ends at its own deadline with DeadlineExceeded while
// the parent runs on, refuses the keys context.WithValue refuses, and
// tool.WithTimeoutValue gives the same on a context not the engine's.
func TestRunCtxWithTimeoutValue(t *testing.T) {
	type other struct{}
	var d deadlines
	c := newRunCtx(context.WithValue(context.Background(), other{}, "parent's"), time.Now().Add(time.Hour), &d)
	d.add(c)
	defer func() { d.remove(c); c.end() }()
	kid, cancel := c.WithTimeoutValue(20*time.Millisecond, runKey{}, "kid's")
	defer cancel()
	if kid.Value(runKey{}) != "kid's" || kid.Value(other{}) != "parent's" || c.Value(runKey{}) != nil {
		t.Errorf("values: kid %v/%v, parent %v", kid.Value(runKey{}), kid.Value(other{}), c.Value(runKey{}))
	}
	ended(t, "WithTimeoutValue's context at its deadline", kid, context.DeadlineExceeded)
	if c.Err() != nil {
		t.Errorf("the parent ended with its kid: %v", c.Err())
	}
	for _, key := range []any{nil, []byte("x")} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("WithTimeoutValue took the key %#v", key)
				}
			}()
			c.WithTimeoutValue(time.Hour, key, 1)
		}()
	}
	plain, cancel := tool.WithTimeoutValue(context.Background(), time.Hour, runKey{}, "plain")
	defer cancel()
	if _, ok := plain.Deadline(); !ok || plain.Value(runKey{}) != "plain" {
		t.Error("tool.WithTimeoutValue on a context not the engine's: no deadline or no value")
	}
	cancel()
	if plain.Err() != context.Canceled {
		t.Errorf("tool.WithTimeoutValue's cancel: Err %v", plain.Err())
	}
}
