package engine

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// goid is the calling goroutine's number, as its stack trace names it.
func goid() string {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	f := bytes.Fields(b)
	return string(f[1])
}

// inliner is a tool that asks to run inline (Inliner).
type inliner struct{ tool.Tool }

func (inliner) Inline() bool { return true }

// TestInline: with Options.Inline a tool runs on the goroutine that called
// Execute (without, on a worker; an Inliner always inline), a panic is
// still an internal error, and the tool's context ends at the engine's
// deadline, said as for a worker's.
func TestInline(t *testing.T) {
	var ran string
	reg := registry.New()
	reg.Register(
		inliner{tool.New("inliner", "Says where it ran.", func(ctx context.Context, in struct{}) (string, error) {
			ran = goid()
			return "ok", nil
		}, tool.ReadOnly())},
		tool.New("where", "Says where it ran.", func(ctx context.Context, in struct{}) (string, error) {
			ran = goid()
			return "ok", nil
		}, tool.ReadOnly()),
		tool.New("panics", "Panics.", func(ctx context.Context, in struct{}) (string, error) {
			panic("boom")
		}, tool.ReadOnly()),
		tool.New("waits", "Waits for its context.", func(ctx context.Context, in struct{}) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}, tool.ReadOnly()),
	)
	for _, inline := range []bool{false, true} {
		e := New(Options{Registry: reg, Inline: inline, Timeout: 50 * time.Millisecond})
		if res := e.Execute(context.Background(), tool.Call{Name: "where", Args: []byte(`{}`)}); res.IsError() {
			t.Fatal(res.Text())
		}
		if same := ran == goid(); same != inline {
			t.Errorf("Inline %v: the tool ran on the caller's goroutine: %v", inline, same)
		}
		if res := e.Execute(context.Background(), tool.Call{Name: "inliner", Args: []byte(`{}`)}); res.IsError() || ran != goid() {
			t.Errorf("Inline %v: an Inliner did not run on the caller's goroutine (%v)", inline, res.Text())
		}
		res := e.Execute(context.Background(), tool.Call{Name: "panics", Args: []byte(`{}`)})
		if res.Error == nil || res.Error.Type != tool.Internal || !strings.Contains(res.Error.Message, "panicked: boom") {
			t.Errorf("Inline %v: a panic gave %+v", inline, res.Error)
		}
		res = e.Execute(context.Background(), tool.Call{Name: "waits", Args: []byte(`{}`)})
		// (On a worker the tool's own error may come before the engine's
		// deadline fires; inline, the engine says it.)
		if res.Error == nil || res.Error.Type != tool.Timeout || inline && !strings.Contains(res.Error.Message, "waits did not finish within 50ms") {
			t.Errorf("Inline %v: a call past the deadline gave %+v", inline, res.Error)
		}
	}
}

// TestInlineLate: a tool that ignores its context and returns, or panics,
// after the deadline or after its caller's cancellation has the same
// outcome inline as on a worker: the engine's error, not its result.
func TestInlineLate(t *testing.T) {
	reg := registry.New()
	reg.Register(
		tool.New("late", "Returns late.", func(ctx context.Context, in struct{}) (string, error) {
			time.Sleep(150 * time.Millisecond)
			return "ok", nil
		}, tool.ReadOnly()),
		tool.New("panics", "Panics late.", func(ctx context.Context, in struct{}) (string, error) {
			time.Sleep(150 * time.Millisecond)
			panic("late boom")
		}, tool.ReadOnly()),
	)
	for _, inline := range []bool{false, true} {
		for _, name := range []string{"late", "panics"} {
			e := New(Options{Registry: reg, Inline: inline, Timeout: 30 * time.Millisecond})
			res := e.Execute(context.Background(), tool.Call{Name: name, Args: []byte(`{}`)})
			if res.Error == nil || res.Error.Type != tool.Timeout || res.Error.Message != name+" did not finish within 30ms" {
				t.Errorf("Inline %v: %s past the deadline: %+v %q", inline, name, res.Error, res.Text())
			}
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			e = New(Options{Registry: reg, Inline: inline, Timeout: time.Hour})
			res = e.Execute(ctx, tool.Call{Name: name, Args: []byte(`{}`)})
			if res.Error == nil || res.Error.Message != name+" did not finish: context canceled" {
				t.Errorf("Inline %v: %s after its caller's cancellation: %+v %q", inline, name, res.Error, res.Text())
			}
		}
	}
}
