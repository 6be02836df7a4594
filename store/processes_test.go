package store_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolgate/toolgate/auth"
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
	seal := sealer(t, "k")
	board := func() *store.RedisProcesses {
		return store.NewRedisProcesses(redisClient(t, srv), "test:", seal)
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

func redisClient(t *testing.T, srv *redistest.Server) redis.UniversalClient {
	t.Helper()
	c, err := store.NewClient(&policy.RedisState{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// sealer is the sealer the CLI gives the board (auth's, 32 bytes of key).
func sealer(t *testing.T, key string) store.Sealer {
	t.Helper()
	s, err := auth.NewSealer([]byte(strings.Repeat(key, 32)[:32]))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRedisProcessesSealed: what a process printed, its command line and
// its name (secrets among them) are nowhere in Redis in the clear: every value of
// every key the board wrote is read raw and holds neither. A replica with
// the same key reads both; one with another key, or none, gets neither
// and is told why (Withheld), as is every reader of a replica that has no
// key, which writes neither to Redis at all. A sealed tail does not open
// as another process's.
func TestRedisProcessesSealed(t *testing.T) {
	srv := redistest.Start(t)
	raw := redisClient(t, srv)
	ctx := context.Background()
	const secret = "sk-live-5f3a9c0d7e1b2a4c6e8f"
	command := "curl -H 'Authorization: Bearer " + secret + "' https://api.example/v1 && python3 serve.py"
	tail := []byte("token=" + secret + "\nlistening on :3000\n")
	e := policy.ProcessEntry{ID: "p-1", Owner: "alice\x00s1", Replica: "a", Name: "curl -H 'Authorization: Bearer " + secret, Command: command,
		State: "running", ExitCode: -1, Started: time.UnixMilli(1700000000000), Total: 5000, Tail: tail}

	a := store.NewRedisProcesses(redisClient(t, srv), "test:", sealer(t, "k"))
	if err := a.Renew(ctx, "a", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, e, time.Minute); err != nil {
		t.Fatal(err)
	}
	// Every value under the prefix, raw.
	dump := func() string {
		t.Helper()
		keys, err := raw.Keys(ctx, "test:*").Result()
		if err != nil || len(keys) == 0 {
			t.Fatalf("keys: %v %v", keys, err)
		}
		var all strings.Builder
		for _, k := range keys {
			switch typ := raw.Type(ctx, k).Val(); typ {
			case "hash":
				for f, v := range raw.HGetAll(ctx, k).Val() {
					all.WriteString(k + " " + f + "=" + v + "\n")
				}
			case "set":
				all.WriteString(k + " " + strings.Join(raw.SMembers(ctx, k).Val(), " ") + "\n")
			case "string":
				all.WriteString(k + " " + raw.Get(ctx, k).Val() + "\n")
			default:
				t.Fatalf("key %s of type %s", k, typ)
			}
		}
		return all.String()
	}
	all := dump()
	for _, plain := range []string{secret, "serve.py", "listening on"} {
		if strings.Contains(all, plain) {
			t.Fatalf("Redis holds %q in the clear:\n%q", plain, all)
		}
	}
	if !strings.Contains(all, " state=running") || !strings.Contains(all, " total=5000") {
		t.Fatalf("the entry's plain fields are missing:\n%q", all)
	}

	// A replica with the same key reads both.
	got, ok, err := store.NewRedisProcesses(redisClient(t, srv), "test:", sealer(t, "k")).Get(ctx, "p-1")
	if err != nil || !ok || got.Name != e.Name || got.Command != command || !bytes.Equal(got.Tail, tail) || got.Withheld != "" || got.Total != 5000 {
		t.Fatalf("the same key reads %+v %v %v", got, ok, err)
	}
	// Another key, or none: the state, not the command nor the output.
	for name, seal := range map[string]store.Sealer{"another key": sealer(t, "j"), "no key": nil} {
		got, ok, err := store.NewRedisProcesses(redisClient(t, srv), "test:", seal).Get(ctx, "p-1")
		if err != nil || !ok || got.State != "running" || got.Name != "" || got.Command != "" || len(got.Tail) != 0 || !strings.Contains(got.Withheld, "key") {
			t.Fatalf("%s reads %+v %v %v", name, got, ok, err)
		}
	}
	// p-1's sealed value copied onto p-2 does not open there.
	if err := a.Put(ctx, policy.ProcessEntry{ID: "p-2", Owner: e.Owner, Replica: "a", State: "running", ExitCode: -1, Tail: []byte("x")}, time.Minute); err != nil {
		t.Fatal(err)
	}
	k1, k2 := "", ""
	for _, k := range raw.Keys(ctx, "test:proc:*").Val() {
		switch raw.HGet(ctx, k, "id").Val() {
		case "p-1":
			k1 = k
		case "p-2":
			k2 = k
		}
	}
	raw.HSet(ctx, k2, "sealed", raw.HGet(ctx, k1, "sealed").Val())
	if got, _, _ := a.Get(ctx, "p-2"); got.Withheld == "" || len(got.Tail) != 0 {
		t.Fatalf("p-1's sealed value opened as p-2's: %+v", got)
	}
	// Nor does p-1's own value once its owner is rewritten in Redis (to
	// a principal whose read_process would then pass the owner check).
	raw.HSet(ctx, k1, "owner", "mallory")
	if got, _, _ := a.Get(ctx, "p-1"); got.Withheld == "" || len(got.Tail) != 0 || got.Command != "" {
		t.Fatalf("p-1's sealed value opened under another owner: %+v", got)
	}

	// A replica without a key writes neither; its readers, keyed or not,
	// are told why.
	if err := store.NewRedisProcesses(redisClient(t, srv), "test:", nil).Put(ctx, e, time.Minute); err != nil {
		t.Fatal(err)
	}
	if all := dump(); strings.Contains(all, secret) || strings.Contains(all, "serve.py") {
		t.Fatalf("an unkeyed replica wrote the command or output:\n%q", all)
	}
	got, _, err = store.NewRedisProcesses(redisClient(t, srv), "test:", sealer(t, "k")).Get(ctx, "p-1")
	if err != nil || got.Command != "" || len(got.Tail) != 0 || !strings.Contains(got.Withheld, "no sealing key") || got.State != "running" {
		t.Fatalf("the entry of an unkeyed replica reads %+v %v", got, err)
	}
}
