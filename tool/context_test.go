package tool_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolgate/toolgate/tool"
)

type timeoutKey struct{}

// TestWithTimeout: on a context that has no WithTimeout of its own, it is
// context.WithTimeout: the caller's values, the deadline, DeadlineExceeded
// at it, Canceled by its cancel, and the caller's cancellation.
func TestWithTimeout(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), timeoutKey{}, "v"))
	defer cancelParent()
	ctx, cancel := tool.WithTimeout(parent, time.Millisecond)
	defer cancel()
	<-ctx.Done()
	if ctx.Err() != context.DeadlineExceeded || ctx.Value(timeoutKey{}) != "v" {
		t.Errorf("past its timeout: %v, value %v", ctx.Err(), ctx.Value(timeoutKey{}))
	}
	start := time.Now()
	ctx, cancel = tool.WithTimeout(parent, time.Hour)
	if d, ok := ctx.Deadline(); !ok || d.Before(start.Add(time.Hour)) {
		t.Errorf("deadline %v, %v", d, ok)
	}
	cancel()
	if ctx.Err() != context.Canceled {
		t.Errorf("cancelled: %v", ctx.Err())
	}
	ctx, cancel = tool.WithTimeout(parent, time.Hour)
	defer cancel()
	cancelParent()
	<-ctx.Done()
	if ctx.Err() != context.Canceled {
		t.Errorf("the caller cancelled: %v", ctx.Err())
	}
}
