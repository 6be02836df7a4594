package store_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/redistest"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/store"
)

// TestRedisProcesses: an entry put by one replica is read and listed by
// another (its tail's bytes exactly, its owner's only); once its replica's
// lease is gone a running entry is lost, and stays lost when the replica
// renews and puts it again.
func TestRedisProcesses(t *testing.T) {
	srv := redistest.Start(t)
	board := func() *store.RedisProcesses {
		c, err := store.NewClient(&policy.RedisState{URL: srv.URL()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return store.NewRedisProcesses(c, "test:")
	}
	a, b := board(), board()
	ctx := context.Background()
	if err := a.Renew(ctx, "a", time.Hour); err != nil {
		t.Fatal(err)
	}
	tail := []byte("line 1\n\x00\xff binary\n")
	e := policy.ProcessEntry{ID: "p-1", Owner: "alice\x00s1", Replica: "a", Name: "server", Command: "python3 -m http.server",
		State: "running", ExitCode: -1, Started: time.UnixMilli(1700000000000), TTY: true, Total: 1000, Tail: tail}
	if err := a.Put(ctx, e, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, policy.ProcessEntry{ID: "p-2", Owner: "bob\x00s2", Replica: "a", State: "exited", Reason: "exited"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	got, ok, err := b.Get(ctx, "p-1")
	if err != nil || !ok {
		t.Fatalf("Get from the other replica: %v %v", ok, err)
	}
	if got.State != "running" || got.Owner != e.Owner || got.Replica != "a" || !bytes.Equal(got.Tail, tail) || got.Total != 1000 ||
		!got.TTY || got.ExitCode != -1 || !got.Started.Equal(e.Started) {
		t.Fatalf("Get = %+v, want %+v", got, e)
	}
	if _, ok, _ := b.Get(ctx, "p-none"); ok {
		t.Fatal("an unknown id was found")
	}
	list, err := b.List(ctx, "alice\x00s1")
	if err != nil || len(list) != 1 || list[0].ID != "p-1" {
		t.Fatalf("List(alice) = %+v, %v; want p-1 alone", list, err)
	}

	// The lease goes (the replica died): running → lost, for good.
	if err := a.Renew(ctx, "a", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for {
		got, _, err = b.Get(ctx, "p-1")
		if err != nil {
			t.Fatal(err)
		}
		if got.State != "running" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got.State != policy.ProcessLost || got.Reason != policy.ProcessLost || !bytes.Equal(got.Tail, tail) {
		t.Fatalf("after the lease expired: %+v, want lost with its output", got)
	}
	a.Renew(ctx, "a", time.Hour)
	if err := a.Put(ctx, e, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := b.Get(ctx, "p-1"); got.State != policy.ProcessLost {
		t.Fatalf("a lost entry put again as running came back %q", got.State)
	}
	// An exited entry is not lost when its lease goes.
	if got, _, _ := b.Get(ctx, "p-2"); got.State != "exited" {
		t.Fatalf("p-2 = %q, want exited", got.State)
	}
}
