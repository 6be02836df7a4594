package store_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolgate/toolgate/internal/redistest"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/tool"
)

// client is one "process"'s connection to the server, closed with the test.
func client(t *testing.T, url string) *redis.Client {
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.MaxRetries = 200*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond, -1
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRedis(t *testing.T) {
	srv := redistest.Start(t)
	testStore(t, store.NewRedis(client(t, srv.URL()), store.RedisOptions{Prefix: "t:"}))
}

func TestRedisPrefixesSeparateDeployments(t *testing.T) {
	srv := redistest.Start(t)
	c := client(t, srv.URL())
	a, b := store.NewRedis(c, store.RedisOptions{Prefix: "a:"}), store.NewRedis(c, store.RedisOptions{Prefix: "b:"})
	ctx := context.Background()
	a.Put(ctx, "k", []byte("of a"), 0)
	if _, ok, _ := b.Get(ctx, "k"); ok {
		t.Error("prefix b: sees prefix a's key")
	}
	keys, _ := c.Keys(ctx, "*").Result()
	for _, k := range keys {
		if len(k) < 2 || k[:2] != "a:" {
			t.Errorf("key %q outside the prefix", k)
		}
	}
}

// TestSharedIdempotencyRunsOnce: two processes' Idempotency, each with its
// own client, race on the same keys; every key runs once and every caller
// gets its result.
func TestSharedIdempotencyRunsOnce(t *testing.T) {
	srv := redistest.Start(t)
	replicas := []*store.Idempotency{
		store.NewIdempotency(store.NewRedis(client(t, srv.URL()), store.RedisOptions{Prefix: "tg:"}), time.Hour),
		store.NewIdempotency(store.NewRedis(client(t, srv.URL()), store.RedisOptions{Prefix: "tg:"}), time.Hour),
	}
	const keys, callers = 16, 8 // callers per key, spread over both replicas
	var runs [keys]atomic.Int32
	var wg sync.WaitGroup
	results := make([][]tool.Result, keys)
	replays := make([]atomic.Int32, keys)
	for k := range keys {
		results[k] = make([]tool.Result, callers)
		for c := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, replayed := replicas[c%2].Do(context.Background(), fmt.Sprint("key", k), func() tool.Result {
					n := runs[k].Add(1)
					time.Sleep(20 * time.Millisecond) // long enough for others to arrive while it runs
					return tool.TextResult(fmt.Sprintf("key%d run%d", k, n))
				})
				results[k][c] = res
				if replayed {
					replays[k].Add(1)
				}
			}()
		}
	}
	wg.Wait()
	for k := range keys {
		if n := runs[k].Load(); n != 1 {
			t.Errorf("key%d ran %d times", k, n)
		}
		for c, res := range results[k] {
			if want := fmt.Sprintf("key%d run1", k); res.Text() != want {
				t.Errorf("key%d caller %d got %q (error %v), want %q", k, c, res.Text(), res.Error, want)
			}
		}
		if n := replays[k].Load(); n != callers-1 {
			t.Errorf("key%d: %d replays, want %d", k, n, callers-1)
		}
	}
}

// TestSharedIdempotencyRenewsALongCall: while its call runs, the owner
// renews its claim's lease, again and again, and a duplicate meanwhile
// waits for the call and replays its result. No wall-clock margin: the
// test pushes the lease an hour away, so that it cannot lapse whenever a
// renewal comes, and waits for the owner's renewal to bring it back
// within the lease (the only thing that shortens it); twice. With no
// renewal that never happens: a wait gives up after stuck (a renewal
// comes every third of the lease) and fails the test saying so, rather
// than hang until the binary's -timeout; one that dropped the lease fails
// it.
func TestSharedIdempotencyRenewsALongCall(t *testing.T) {
	srv := redistest.Start(t)
	const lease = 3 * time.Second
	a := store.NewIdempotency(store.NewRedis(client(t, srv.URL()), store.RedisOptions{Lease: lease}), time.Hour)
	b := store.NewIdempotency(store.NewRedis(client(t, srv.URL()), store.RedisOptions{Lease: lease}), time.Hour)
	watch := client(t, srv.URL())
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan tool.Result)
	go func() {
		res, _ := a.Do(ctx, "k", func() tool.Result {
			close(started)
			<-release // outlives the lease: renewed meanwhile
			return tool.TextResult("slow")
		})
		done <- res
	}()
	// Every wait is bounded: stuck is sixty renewals missed.
	const stuck = 20 * lease
	await(t, started, stuck, "the owner's call to start")
	keys, err := watch.Keys(ctx, "*lease*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("the claim's lease: %v %v", keys, err)
	}
	renewed := make(chan error, 1)
	go func() {
		defer close(release)
		for range 2 {
			if ok, err := watch.PExpire(ctx, keys[0], time.Hour).Result(); err != nil || !ok {
				renewed <- fmt.Errorf("the lease is gone while the call runs (%v)", err)
				return
			}
			deadline := time.Now().Add(stuck)
			for {
				if time.Now().After(deadline) {
					renewed <- fmt.Errorf("no renewal of the lease in %v (the owner renews it every %v while its call runs): it stays where the test pushed it", stuck, lease/3)
					return
				}
				ttl, err := watch.PTTL(ctx, keys[0]).Result()
				if err != nil || ttl <= 0 {
					renewed <- fmt.Errorf("the lease is gone while the call runs: %v (%v)", ttl, err)
					return
				}
				if ttl <= lease {
					break // the owner's renewal
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		renewed <- nil
	}()
	var ran atomic.Bool
	type duplicate struct {
		res      tool.Result
		replayed bool
	}
	dup := make(chan duplicate, 1)
	go func() {
		res, replayed := b.Do(ctx, "k", func() tool.Result { ran.Store(true); return tool.TextResult("twice") })
		dup <- duplicate{res, replayed}
	}()
	if err := <-renewed; err != nil { // bounded: the watch gives up after stuck at each wait
		t.Fatal(err)
	}
	d := await(t, dup, stuck, "the duplicate's call, once the owner's ended")
	if ran.Load() || !d.replayed || d.res.Text() != "slow" {
		t.Errorf("the duplicate ran (%v) or got %q (error %v), replayed %v", ran.Load(), d.res.Text(), d.res.Error, d.replayed)
	}
	if r := await(t, done, stuck, "the owner's call to end"); r.Text() != "slow" {
		t.Errorf("owner got %q", r.Text())
	}
}

// await returns what ch gives, failing the test if it gives nothing
// within d (what: what it waits for), so that a test that fails says so
// rather than hang until the binary's -timeout.
func await[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("waited %v for %s: nothing came", d, what)
		var zero T
		return zero
	}
}

// TestHelperClaimAndCrash is the process that claims a key and dies.
func TestHelperClaimAndCrash(t *testing.T) {
	url := os.Getenv("STORE_HELPER_REDIS")
	if url == "" {
		return
	}
	o, _ := redis.ParseURL(url)
	s := store.NewRedis(redis.NewClient(o), store.RedisOptions{Lease: 100 * time.Millisecond})
	idem := store.NewIdempotency(s, time.Hour)
	idem.Do(context.Background(), "crash", func() tool.Result {
		os.Stdout.WriteString("claimed\n")
		os.Exit(0) // dies while the call runs
		return tool.Result{}
	})
	os.Exit(4)
}

func TestSharedIdempotencyReportsACrashedOwner(t *testing.T) {
	srv := redistest.Start(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperClaimAndCrash$")
	cmd.Env = append(os.Environ(), "STORE_HELPER_REDIS="+srv.URL())
	if out, err := cmd.Output(); err != nil || string(out) != "claimed\n" {
		t.Fatalf("helper: %v %q", err, out)
	}
	idem := store.NewIdempotency(store.NewRedis(client(t, srv.URL()), store.RedisOptions{}), time.Hour)
	for range 2 { // and every later call with that key
		ran := false
		res, replayed := idem.Do(context.Background(), "crash", func() tool.Result { ran = true; return tool.TextResult("again") })
		if ran || replayed || res.Error == nil || res.Error.Type != tool.Conflict || res.Error.Details["idempotency_lapsed"] != true {
			t.Fatalf("after the owner crashed: ran %v, replayed %v, %+v", ran, replayed, res.Error)
		}
	}
	// Another key is unaffected.
	if res, _ := idem.Do(context.Background(), "other", func() tool.Result { return tool.TextResult("fine") }); res.Text() != "fine" {
		t.Errorf("other key: %+v", res)
	}
}

func TestSharedIdempotencyRetryableFailureIsNotKept(t *testing.T) {
	srv := redistest.Start(t)
	a := store.NewIdempotency(store.NewRedis(client(t, srv.URL()), store.RedisOptions{}), time.Hour)
	b := store.NewIdempotency(store.NewRedis(client(t, srv.URL()), store.RedisOptions{}), time.Hour)
	ctx := context.Background()
	a.Do(ctx, "k", func() tool.Result {
		return tool.ErrorResult(tool.Errorf(tool.Timeout, "slow upstream").WithRetry(time.Second))
	})
	if res, replayed := b.Do(ctx, "k", func() tool.Result { return tool.TextResult("second try") }); replayed || res.Text() != "second try" {
		t.Errorf("after a retryable failure elsewhere: %q %v %+v", res.Text(), replayed, res.Error)
	}
	b.Do(ctx, "final", func() tool.Result { return tool.ErrorResult(tool.Errorf(tool.NotFound, "no such file")) })
	if res, replayed := a.Do(ctx, "final", func() tool.Result { return tool.TextResult("ran again") }); !replayed || res.Error == nil || res.Error.Type != tool.NotFound {
		t.Errorf("a final failure must be replayed: %+v", res)
	}
}

func TestSharedIdempotencyRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	idem := store.NewIdempotency(store.NewRedis(client(t, srv.URL()), store.RedisOptions{}), time.Hour)
	ctx := context.Background()
	srv.Kill()
	ran := false
	res, _ := idem.Do(ctx, "k", func() tool.Result { ran = true; return tool.TextResult("x") })
	if ran || res.Error == nil || res.Error.Type != tool.Unavailable || !res.Error.Retryable || res.Error.RetryAfter <= 0 {
		t.Fatalf("with Redis down: ran %v, %+v", ran, res.Error)
	}
	srv.Restart()
	if res, _ := idem.Do(ctx, "k", func() tool.Result { return tool.TextResult("after recovery") }); res.Text() != "after recovery" {
		t.Errorf("no recovery: %+v", res)
	}
}
