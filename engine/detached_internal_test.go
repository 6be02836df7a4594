package engine

import (
	"context"
	"testing"
	"time"
)

// TestDetached: the audit's context (pending.detached) answers as
// context.WithoutCancel's does: the parent's values, no deadline, never
// done, no error nor cause once the parent ended; a context derived from
// it is not cancelled by the parent.
func TestDetached(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), time.Now().Add(time.Hour))
	var p pending
	got, want := p.detached(parent), context.WithoutCancel(parent)
	cancel()
	for _, c := range []context.Context{got, want} {
		if c.Value(key{}) != "v" || c.Value("other") != nil {
			t.Errorf("%T: values %v %v", c, c.Value(key{}), c.Value("other"))
		}
		if d, ok := c.Deadline(); ok || !d.IsZero() {
			t.Errorf("%T: deadline %v %v", c, d, ok)
		}
		if c.Done() != nil || c.Err() != nil || context.Cause(c) != nil {
			t.Errorf("%T: done %v, err %v, cause %v", c, c.Done(), c.Err(), context.Cause(c))
		}
		kid, stop := context.WithCancel(c)
		if kid.Err() != nil {
			t.Errorf("%T: a child ended with the parent: %v", c, kid.Err())
		}
		stop()
	}
	for _, c := range []context.Context{context.Background(), context.TODO()} {
		if p.detached(c) != c {
			t.Errorf("detached(%v) is not itself", c)
		}
	}
}
