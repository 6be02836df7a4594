package policy

import (
	"context"
	"fmt"
	"testing"
	"unsafe"

	"github.com/toolgate/toolgate/tool"
)

// TestTicket: a Ticket's Release gives back the concurrency slot and
// records the result for the loop guard as the release func of
// AcquireArgs does (which is the Ticket's), and the Ticket itself
// allocates nothing: AcquireTicket and Release allocate one object less
// than AcquireArgs and its release func.
func TestTicket(t *testing.T) {
	def := tool.Definition{Name: "read"}
	call := tool.Call{Name: "read", Args: []byte(`{"p":"a"}`), Session: "s", Principal: "p"}
	args := map[string]any{"p": "a"}
	l := NewLimiter(LimitConfig{Concurrency: 1, Loop: LoopConfig{Max: 1 << 30}})
	tk, err := l.AcquireTicket(context.Background(), call, def, args)
	if err != nil {
		t.Fatal(err)
	}
	if s := l.slot("read"); len(s) != 1 {
		t.Fatalf("slot holds %d, want 1", len(s))
	}
	failure := tool.ErrorResult(tool.Errorf(tool.NotFound, "no such file"))
	tk.Release(failure)
	if s := l.slot("read"); len(s) != 0 {
		t.Fatalf("slot holds %d after Release, want 0", len(s))
	}
	if _, err := l.AcquireTicket(context.Background(), call, def, args); err == nil || err.Message != "this exact call just failed and was not run again: no such file" {
		t.Fatalf("the failure recorded by Release: %v", err)
	}

	l = NewLimiter(LimitConfig{Concurrency: 4, Loop: LoopConfig{Max: 1 << 30}})
	ctx := context.Background()
	ok := tool.Result{}
	tickets := testing.AllocsPerRun(100, func() {
		tk, _ := l.AcquireTicket(ctx, call, def, args)
		tk.Release(ok)
	})
	funcs := testing.AllocsPerRun(100, func() {
		release, _ := l.AcquireArgs(ctx, call, def, args)
		release(ok)
	})
	if tickets != funcs-1 {
		t.Fatalf("AcquireTicket and Release allocate %v, AcquireArgs and its release %v: want one less", tickets, funcs)
	}
}

// TestTicketDropped: a Ticket whose caller's history was dropped (the
// Limiter remembered too many sessions) while its call ran records the
// result in the caller's history made since, as a look-up of the caller
// at the release did.
func TestTicketDropped(t *testing.T) {
	def := tool.Definition{Name: "read"}
	ctx := context.Background()
	l := NewLimiter(LimitConfig{Loop: LoopConfig{Max: 1 << 30}})
	a := tool.Call{Name: "read", Args: []byte(`{"p":"a"}`), Session: "a"}
	first, err := l.AcquireTicket(ctx, a, def, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxSessions { // every session busy: all are dropped
		tk, err := l.AcquireTicket(ctx, tool.Call{Name: "read", Args: []byte(`{}`), Session: fmt.Sprint("s", i)}, def, nil)
		if err != nil {
			t.Fatal(err)
		}
		tk.Release(tool.Result{})
	}
	if !first.h.dropped {
		t.Fatal("the first caller's history was not dropped")
	}
	other := tool.Call{Name: "read", Args: []byte(`{"p":"b"}`), Session: "a"}
	second, err := l.AcquireTicket(ctx, other, def, nil) // makes a's history again
	if err != nil {
		t.Fatal(err)
	}
	second.Release(tool.Result{})
	first.Release(tool.ErrorResult(tool.Errorf(tool.NotFound, "no such file")))
	if _, err := l.AcquireTicket(ctx, a, def, nil); err == nil || err.Message != "this exact call just failed and was not run again: no such file" {
		t.Fatalf("the failure released after the drop: %v", err)
	}
}

// TestTicketKeyKept: the loop guard's key of a call, written on the
// stack, is kept as the caller's history's string: a Ticket holds callKey's
// key (equal after other calls reused the stack), the history the same
// string for each call with it, and repeating a call allocates nothing in
// AcquireTicket and Release (no key made); a new key is kept, and the
// loop guard still counts the repeats and refuses past its maximum.
func TestTicketKeyKept(t *testing.T) {
	def := tool.Definition{Name: "read"}
	ctx := context.Background()
	l := NewLimiter(LimitConfig{Loop: LoopConfig{Max: 1 << 30}})
	a := tool.Call{Name: "read", Args: []byte(`{"p":"a"}`), Session: "s"}
	b := tool.Call{Name: "read", Args: []byte(`{"p":"b"}`), Session: "s"}
	argsA, argsB := map[string]any{"p": "a"}, map[string]any{"p": "b"}
	first, err := l.AcquireTicket(ctx, a, def, argsA)
	if err != nil {
		t.Fatal(err)
	}
	other, err := l.AcquireTicket(ctx, b, def, argsB)
	if err != nil {
		t.Fatal(err)
	}
	if first.key != callKey(a, nil) || other.key != callKey(b, nil) {
		t.Fatalf("keys %q and %q, want %q and %q", first.key, other.key, callKey(a, nil), callKey(b, nil))
	}
	again, _ := l.AcquireTicket(ctx, a, def, argsA)
	if unsafe.StringData(again.key) != unsafe.StringData(first.key) {
		t.Fatal("a repeated call's key is not its history's string")
	}
	for _, tk := range []Ticket{first, other, again} {
		tk.Release(tool.Result{})
	}
	if n := testing.AllocsPerRun(100, func() {
		tk, _ := l.AcquireTicket(ctx, a, def, argsA)
		tk.Release(tool.Result{})
	}); n != 0 {
		t.Fatalf("a repeated call allocates %v, want 0", n)
	}
	l = NewLimiter(LimitConfig{Loop: LoopConfig{Max: 3}})
	for i := range 4 {
		tk, err := l.AcquireTicket(ctx, a, def, argsA)
		if (err != nil) != (i == 3) {
			t.Fatalf("call %d: %v (the fourth of three allowed is refused)", i, err)
		}
		if err == nil {
			tk.Release(tool.Result{})
		}
	}
}
