package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/redistest"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/sandboxes"
	"github.com/toolgate/toolgate/store"
)

// TestSandboxMaps: the map the replicas share in Redis and the one of a
// process's memory keep the same contract (sandboxMapContract), the Redis
// one seen through two clients as two replicas see it.
func TestSandboxMaps(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t)
		m := func() policy.SandboxMap {
			c, err := store.NewClient(&policy.RedisState{URL: srv.URL()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return store.NewRedisSandboxes(c, "test:")
		}
		sandboxMapContract(t, m(), m())
	})
	t.Run("memory", func(t *testing.T) {
		m := sandboxes.NewMemoryState()
		sandboxMapContract(t, m, m)
	})
}

// sandboxMapContract: an entry put through a is read through b; a touch
// moves the last use forward, never back, and says whether the entry is
// live; Idle lists what is not gone and idle; Retire retires an idle entry
// once and keeps one used meanwhile; a retired entry put back is idle
// again; a lock is held by one at a time, and a release after its ttl
// passed does not free the next holder's.
func sandboxMapContract(t *testing.T, a, b policy.SandboxMap) {
	ctx := context.Background()
	t0 := time.UnixMilli(1_700_000_000_000)
	if _, ok, err := b.Get(ctx, "sb-1"); ok || err != nil {
		t.Fatalf("Get of nothing: %v %v", ok, err)
	}
	e := policy.SandboxEntry{ID: "sb-1", Endpoint: "http://r1:8790/sandboxes/sb-1/mcp", Created: t0, Last: t0}
	if err := a.Put(ctx, e); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := b.Get(ctx, "sb-1"); !ok || err != nil || got != e {
		t.Fatalf("Get: %+v %v %v, want %+v", got, ok, err, e)
	}
	if live, err := b.Touch(ctx, "sb-1", t0.Add(-time.Second)); !live || err != nil {
		t.Fatalf("Touch back: %v %v", live, err)
	}
	if got, _, _ := a.Get(ctx, "sb-1"); !got.Last.Equal(t0) {
		t.Errorf("a touch moved the last use back: %v", got.Last)
	}
	t1 := t0.Add(time.Second)
	if live, err := b.Touch(ctx, "sb-1", t1); !live || err != nil {
		t.Fatalf("Touch: %v %v", live, err)
	}
	if live, err := b.Touch(ctx, "sb-none", t1); live || err != nil {
		t.Errorf("Touch of nothing: %v %v", live, err)
	}
	if idle, err := a.Idle(ctx, t1); len(idle) != 0 || err != nil {
		t.Errorf("Idle before the last use: %v %v", idle, err)
	}
	if idle, err := a.Idle(ctx, t1.Add(time.Millisecond)); len(idle) != 1 || idle[0].ID != "sb-1" || err != nil {
		t.Errorf("Idle after the last use: %v %v", idle, err)
	}
	if _, ok, err := a.Retire(ctx, "sb-1", t1); ok || err != nil {
		t.Errorf("Retire of an entry used at the bound: %v %v", ok, err)
	}
	if _, ok, err := a.Retire(ctx, "sb-none", t1.Add(time.Hour)); ok || err != nil {
		t.Errorf("Retire of nothing: %v %v", ok, err)
	}
	was, ok, err := a.Retire(ctx, "sb-1", t1.Add(time.Millisecond))
	if !ok || err != nil || was.Gone || !was.Last.Equal(t1) || was.Endpoint != e.Endpoint {
		t.Fatalf("Retire: %+v %v %v", was, ok, err)
	}
	if _, ok, _ := b.Retire(ctx, "sb-1", t1.Add(time.Hour)); ok {
		t.Error("an entry was retired twice")
	}
	if got, _, _ := b.Get(ctx, "sb-1"); !got.Gone {
		t.Errorf("retired, not gone: %+v", got)
	}
	if live, _ := b.Touch(ctx, "sb-1", t1.Add(time.Hour)); live {
		t.Error("a gone entry is touched live")
	}
	if idle, _ := b.Idle(ctx, t1.Add(time.Hour)); len(idle) != 0 {
		t.Errorf("Idle lists a gone entry: %v", idle)
	}
	if err := b.Put(ctx, was); err != nil { // a failed delete puts it back
		t.Fatal(err)
	}
	if idle, _ := a.Idle(ctx, t1.Add(time.Hour)); len(idle) != 1 || idle[0].Gone {
		t.Errorf("an entry put back is not idle: %v", idle)
	}

	release, ok, err := a.Lock(ctx, "create:sb-1", time.Minute)
	if !ok || err != nil {
		t.Fatalf("Lock: %v %v", ok, err)
	}
	if _, ok, err := b.Lock(ctx, "create:sb-1", time.Minute); ok || err != nil {
		t.Errorf("a held lock taken again: %v %v", ok, err)
	}
	if rel, ok, _ := b.Lock(ctx, "create:sb-2", time.Minute); !ok {
		t.Error("another name's lock is not free")
	} else {
		rel()
	}
	release()
	stale, ok, _ := b.Lock(ctx, "create:sb-1", 50*time.Millisecond)
	if !ok {
		t.Fatal("a released lock is not free")
	}
	time.Sleep(100 * time.Millisecond) // past its ttl: a lower bound
	next, ok, _ := a.Lock(ctx, "create:sb-1", time.Minute)
	if !ok {
		t.Fatal("a lock past its ttl is not free")
	}
	stale()
	if _, ok, _ := b.Lock(ctx, "create:sb-1", time.Minute); ok {
		t.Error("a stale release freed the next holder's lock")
	}
	next()
}
