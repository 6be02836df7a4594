package policy

import (
	"context"
	"testing"

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
