package tool

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// TestWithEncodedContext: WithEncoded's context (one allocation, not
// context.WithValue's two) answers as context.WithValue's would: its own
// key, every other key from its parent, the parent's deadline, and it
// ends, with its children, when the parent does.
func TestWithEncodedContext(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithTimeout(context.WithValue(context.Background(), key{}, "v"), time.Hour)
	ctx := WithEncoded(parent)
	if e, ok := ctx.Value(encodedKey{}).(*encoded); !ok || e == nil || ctx.Value(encodedKey{}) != e {
		t.Fatalf("encoded: %#v", ctx.Value(encodedKey{}))
	}
	if ctx.Value(key{}) != "v" || ctx.Value("other") != nil {
		t.Fatalf("parent's values: %v, %v", ctx.Value(key{}), ctx.Value("other"))
	}
	if d, ok := ctx.Deadline(); !ok || d != func() time.Time { d, _ := parent.Deadline(); return d }() {
		t.Fatalf("deadline %v, %v", d, ok)
	}
	child, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan struct{})
	context.AfterFunc(ctx, func() { close(ran) })
	cancel()
	<-ctx.Done()
	<-child.Done()
	<-ran
	if ctx.Err() != context.Canceled || child.Err() != context.Canceled {
		t.Fatalf("errors %v, %v", ctx.Err(), child.Err())
	}
	if n := testing.AllocsPerRun(100, func() { encodedSink = WithEncoded(parent) }); n != 1 {
		t.Fatalf("WithEncoded: %v allocations, want 1", n)
	}
}

var encodedSink context.Context

// TestWithEncodedLogger: WithEncodedLogger's context answers as
// WithEncoded(WithLogger(ctx, l)) does: l for Logger (a nil l a discarding
// logger, not the parent's), its own encoded, every other key from its
// parent; WithEncoded's answers the parent's logger.
func TestWithEncodedLogger(t *testing.T) {
	type key struct{}
	outer := slog.New(slog.DiscardHandler)
	parent := WithLogger(context.WithValue(context.Background(), key{}, "v"), outer)
	l := slog.New(slog.DiscardHandler)
	for _, c := range []struct {
		ctx, want context.Context
	}{
		{WithEncodedLogger(parent, l), WithEncoded(WithLogger(parent, l))},
		{WithEncodedLogger(parent, nil), WithEncoded(WithLogger(parent, nil))},
		{WithEncoded(parent), WithEncoded(parent)},
	} {
		if got, want := Logger(c.ctx), Logger(c.want); got != want && (got == outer || want == outer || got == l || want == l) {
			t.Errorf("Logger: %p, want %p", got, want)
		}
		if e, ok := c.ctx.Value(encodedKey{}).(*encoded); !ok || e == nil {
			t.Errorf("encoded: %#v", c.ctx.Value(encodedKey{}))
		}
		if c.ctx.Value(key{}) != "v" || c.ctx.Value("other") != nil {
			t.Errorf("parent's values: %v %v", c.ctx.Value(key{}), c.ctx.Value("other"))
		}
	}
	if Logger(WithEncodedLogger(parent, l)) != l || Logger(WithEncoded(parent)) != outer || Logger(WithEncodedLogger(parent, nil)) == outer {
		t.Error("WithEncodedLogger does not answer its logger")
	}
}
