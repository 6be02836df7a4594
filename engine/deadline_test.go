package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

type ctxKey struct{}

// TestTimeoutWhateverTheToolDoes: every way a tool can wait, honouring its
// context or not, ends in a timeout error at the engine's deadline, and
// what the tool sees of its context is what context.WithTimeout gives.
func TestTimeoutWhateverTheToolDoes(t *testing.T) {
	hang := make(chan struct{}) // never closed: a tool waiting on it hangs
	t.Cleanup(func() { close(hang) })
	seen := make(chan string, 100)
	waits := map[string]func(ctx context.Context) error{
		"ignores its context": func(context.Context) error { <-hang; return nil },
		"waits for Done":      func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
		"polls Err": func(ctx context.Context) error {
			for ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			return ctx.Err()
		},
		"derives a context": func(ctx context.Context) error {
			child, cancel := context.WithCancel(ctx)
			defer cancel()
			<-child.Done()
			return child.Err()
		},
		"derives a timeout": func(ctx context.Context) error {
			child, cancel := context.WithTimeout(ctx, time.Hour)
			defer cancel()
			<-child.Done()
			return child.Err()
		},
		"registers AfterFunc": func(ctx context.Context) error {
			done := make(chan struct{})
			context.AfterFunc(ctx, func() { close(done) })
			<-done
			return ctx.Err()
		},
		"sleeps to its Deadline": func(ctx context.Context) error {
			d, ok := ctx.Deadline()
			if !ok {
				return errors.New("no deadline")
			}
			time.Sleep(time.Until(d))
			<-ctx.Done()
			return ctx.Err()
		},
		"waits then returns Cause": func(ctx context.Context) error {
			<-ctx.Done()
			return context.Cause(ctx)
		},
		"asks a value first": func(ctx context.Context) error {
			if ctx.Value(ctxKey{}) != "v" {
				return errors.New("the caller's value is lost")
			}
			<-ctx.Done()
			return ctx.Err()
		},
	}
	reg := registry.New()
	var names []string
	for name, wait := range waits {
		n := fmt.Sprintf("t%d", len(names))
		names = append(names, n)
		err := reg.Register(tool.New(n, name, func(ctx context.Context, _ struct{}) (string, error) {
			err := wait(ctx)
			seen <- fmt.Sprintf("%s: %v", name, err)
			return "", err
		}, tool.ReadOnly()))
		if err != nil {
			t.Fatal(err)
		}
	}
	e := engine.New(engine.Options{Registry: reg, Timeout: 50 * time.Millisecond})
	parents := map[string]func() (context.Context, context.CancelFunc){
		"background": func() (context.Context, context.CancelFunc) { return context.Background(), func() {} },
		"cancelable": func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
		"far deadline": func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Hour)
		},
	}
	for pname, parent := range parents {
		var wg sync.WaitGroup
		for _, n := range names { // all at once: one deadline list, many runs
			wg.Go(func() {
				ctx, cancel := parent()
				defer cancel()
				ctx = context.WithValue(ctx, ctxKey{}, "v")
				res := e.Execute(ctx, tool.Call{Name: n, Args: []byte(`{}`)})
				if res.Error == nil || res.Error.Type != tool.Timeout {
					t.Errorf("%s, parent %s: want a timeout, got %+v", n, pname, res)
				}
			})
		}
		wg.Wait()
	}
	// The tools that honour their context saw DeadlineExceeded, as with
	// context.WithTimeout.
	for range (len(names) - 1) * len(parents) {
		if s := <-seen; s[len(s)-len("context deadline exceeded"):] != "context deadline exceeded" {
			t.Errorf("a tool saw %s", s)
		}
	}
}

// TestRunContext: a tool's context carries the caller's values and the
// earlier of the two deadlines, and is cancelled once the call is over
// (a goroutine the tool left behind learns it).
func TestRunContext(t *testing.T) {
	type out struct {
		deadline time.Time
		value    any
		err      error
	}
	got := make(chan out, 1)
	kept := make(chan context.Context, 1)
	reg := registry.New()
	err := reg.Register(tool.New("look", "Looks at its context.", func(ctx context.Context, _ struct{}) (string, error) {
		d, _ := ctx.Deadline()
		got <- out{d, ctx.Value(ctxKey{}), ctx.Err()}
		kept <- ctx
		return "ok", nil
	}, tool.ReadOnly()))
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(engine.Options{Registry: reg, Timeout: time.Hour})
	for _, tc := range []struct {
		name   string
		parent time.Duration // 0: no deadline
		want   time.Duration
	}{
		{"engine's deadline", 0, time.Hour},
		{"caller's earlier deadline", time.Minute, time.Minute},
		{"caller's later deadline", 2 * time.Hour, time.Hour},
	} {
		ctx := context.WithValue(context.Background(), ctxKey{}, "v")
		if tc.parent > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, tc.parent)
			defer cancel()
		}
		start := time.Now()
		if res := e.Execute(ctx, tool.Call{Name: "look", Args: []byte(`{}`)}); res.IsError() {
			t.Fatal(res.Text())
		}
		o := <-got
		if o.value != "v" || o.err != nil {
			t.Errorf("%s: value %v, err %v", tc.name, o.value, o.err)
		}
		if d := o.deadline.Sub(start); d < tc.want-time.Minute/2 || d > tc.want+time.Minute/2 {
			t.Errorf("%s: deadline in %s, want %s", tc.name, d, tc.want)
		}
		ctx2 := <-kept
		<-ctx2.Done() // the call is over: this returns
		if !errors.Is(ctx2.Err(), context.Canceled) {
			t.Errorf("%s: after the call the tool's context says %v", tc.name, ctx2.Err())
		}
	}
}

// TestCallerCancels: cancelling the caller's context ends a call whose
// tool ignores it, with the cancellation as the error.
func TestCallerCancels(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	started := make(chan struct{}, 1)
	reg := registry.New()
	reg.Register(tool.New("hang", "Hangs.", func(context.Context, struct{}) (string, error) {
		started <- struct{}{}
		<-hang
		return "", nil
	}, tool.ReadOnly()))
	e := engine.New(engine.Options{Registry: reg, Timeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	res := e.Execute(ctx, tool.Call{Name: "hang", Args: []byte(`{}`)})
	if res.Error == nil || res.Error.Type != tool.Timeout {
		t.Fatalf("want a cancellation error, got %+v", res)
	}
	t.Log(res.Text())
}
