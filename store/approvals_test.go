package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/console"
	"github.com/toolgate/toolgate/internal/redistest"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/tool"
)

var _ policy.ApprovalQueue = (*store.RedisApprovals)(nil)

// queues returns two handles on one queue, as two replicas have: for
// Redis, each with its own client.
type queues func(t *testing.T) (a, b policy.ApprovalQueue)

func approvalQueues(t *testing.T) map[string]queues {
	srv := redistest.Start(t)
	return map[string]queues{
		"memory": func(*testing.T) (policy.ApprovalQueue, policy.ApprovalQueue) {
			q := policy.NewMemoryQueue()
			return q, q
		},
		"redis": func(t *testing.T) (policy.ApprovalQueue, policy.ApprovalQueue) {
			prefix := fmt.Sprintf("%s:", t.Name())
			o := store.RedisApprovalsOptions{Prefix: prefix, Poll: 50 * time.Millisecond}
			return store.NewRedisApprovals(client(t, srv.URL()), o), store.NewRedisApprovals(client(t, srv.URL()), o)
		},
	}
}

// waitAsync waits on q in the background.
func waitAsync(ctx context.Context, q policy.ApprovalQueue, id, entry string, ttl time.Duration) chan result {
	ch := make(chan result, 1)
	go func() {
		a, err := q.Wait(ctx, id, []byte(entry), ttl)
		ch <- result{string(a), err}
	}()
	return ch
}

type result struct {
	answer string
	err    error
}

// listed waits (bounded by the test's patience) until q lists n entries.
func listed(t *testing.T, q policy.ApprovalQueue, n int) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		l, err := q.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(l) == n {
			out := make([]string, len(l))
			for i, e := range l {
				out[i] = string(e)
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("listed %d entries, want %d", len(l), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestApprovalQueueAnsweredOnAnotherReplica(t *testing.T) {
	for name, mk := range approvalQueues(t) {
		t.Run(name, func(t *testing.T) {
			a, b := mk(t)
			ctx := context.Background()
			got := waitAsync(ctx, a, "call1", `{"tool":"write_file"}`, time.Minute)
			if l := listed(t, b, 1); l[0] != `{"tool":"write_file"}` {
				t.Fatalf("b lists %q", l)
			}
			if e, err := b.Get(ctx, "call1"); err != nil || string(e) != `{"tool":"write_file"}` {
				t.Fatalf("b gets %q, %v", e, err)
			}
			if err := b.Answer(ctx, "call1", []byte(`{"approved":true}`)); err != nil {
				t.Fatal(err)
			}
			if r := <-got; r.err != nil || r.answer != `{"approved":true}` {
				t.Fatalf("a got %+v", r)
			}
			listed(t, b, 0)
			for _, q := range []policy.ApprovalQueue{a, b} {
				if err := q.Answer(ctx, "call1", []byte(`{"approved":false}`)); !errors.Is(err, fs.ErrExist) {
					t.Errorf("a second answer: %v, want fs.ErrExist", err)
				}
				if _, err := q.Get(ctx, "call1"); !errors.Is(err, fs.ErrExist) {
					t.Errorf("getting an answered id: %v, want fs.ErrExist", err)
				}
			}
		})
	}
}

// TestApprovalQueueFirstAnswerWins: answers race from both replicas; one
// is taken, every other is told it came late, and the waiter gets the one
// taken.
func TestApprovalQueueFirstAnswerWins(t *testing.T) {
	for name, mk := range approvalQueues(t) {
		t.Run(name, func(t *testing.T) {
			a, b := mk(t)
			ctx := context.Background()
			for round := range 5 {
				id := fmt.Sprintf("race%d", round)
				got := waitAsync(ctx, a, id, "{}", time.Minute)
				listed(t, b, 1)
				var wg sync.WaitGroup
				var mu sync.Mutex
				var won []string
				late := 0
				for i := range 16 {
					q := []policy.ApprovalQueue{a, b}[i%2]
					wg.Go(func() {
						ans := fmt.Sprintf(`{"n":%d}`, i)
						err := q.Answer(ctx, id, []byte(ans))
						mu.Lock()
						defer mu.Unlock()
						switch {
						case err == nil:
							won = append(won, ans)
						case errors.Is(err, fs.ErrExist):
							late++
						default:
							t.Errorf("answer %d: %v", i, err)
						}
					})
				}
				wg.Wait()
				r := <-got
				if len(won) != 1 || late != 15 || r.err != nil || r.answer != won[0] {
					t.Fatalf("round %d: taken %q, late %d, waiter got %+v", round, won, late, r)
				}
			}
		})
	}
}

func TestApprovalQueueUnknownIDs(t *testing.T) {
	for name, mk := range approvalQueues(t) {
		t.Run(name, func(t *testing.T) {
			a, b := mk(t)
			ctx := context.Background()
			got := waitAsync(ctx, a, "real", "{}", time.Minute)
			listed(t, b, 1)
			for _, id := range []string{"", "nope", "REAL", "real ", "../real", "real\x00", "real*", strings.Repeat("r", 65), "*", "index", "entry:real"} {
				if err := b.Answer(ctx, id, []byte("{}")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("answer %q: %v, want fs.ErrNotExist", id, err)
				}
				if _, err := b.Get(ctx, id); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("get %q: %v, want fs.ErrNotExist", id, err)
				}
			}
			if _, err := b.Wait(ctx, "real", []byte("{}"), time.Minute); !errors.Is(err, fs.ErrExist) {
				t.Errorf("a second wait under the same id: %v, want fs.ErrExist", err)
			}
			listed(t, b, 1)
			b.Answer(ctx, "real", []byte(`"ok"`))
			if r := <-got; r.answer != `"ok"` {
				t.Errorf("the first wait got %+v", r)
			}
		})
	}
}

// TestApprovalQueueWithdrawn: a call that ends leaves the queue, and an
// answer to it is refused as unknown; one that times out too.
func TestApprovalQueueWithdrawn(t *testing.T) {
	for name, mk := range approvalQueues(t) {
		t.Run(name, func(t *testing.T) {
			a, b := mk(t)
			ctx, cancel := context.WithCancel(context.Background())
			got := waitAsync(ctx, a, "gone", "{}", time.Minute)
			listed(t, b, 1)
			cancel()
			if r := <-got; !errors.Is(r.err, context.Canceled) {
				t.Fatalf("cancelled wait: %+v", r)
			}
			listed(t, b, 0)
			if err := b.Answer(context.Background(), "gone", []byte("{}")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("answering a withdrawn call: %v", err)
			}

			got = waitAsync(context.Background(), a, "expires", "{}", 300*time.Millisecond)
			if r := <-got; !errors.Is(r.err, context.DeadlineExceeded) {
				t.Fatalf("expired wait: %+v", r)
			}
			listed(t, b, 0)
			if err := b.Answer(context.Background(), "expires", []byte("{}")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("answering an expired call: %v", err)
			}
		})
	}
}

// TestRedisApprovalsLostMessage: an answer stored without its message (a
// subscriber that missed it) still reaches the waiter, by polling.
func TestRedisApprovalsLostMessage(t *testing.T) {
	srv := redistest.Start(t)
	c := client(t, srv.URL())
	a := store.NewRedisApprovals(c, store.RedisApprovalsOptions{Prefix: "lost:", Poll: 50 * time.Millisecond})
	got := waitAsync(context.Background(), a, "quiet", "{}", time.Minute)
	listed(t, a, 1)
	if err := c.Set(context.Background(), "lost:approvals:answer:quiet", `{"approved":true}`, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.err != nil || r.answer != `{"approved":true}` {
		t.Fatalf("waiter got %+v", r)
	}
	listed(t, a, 0)
}

// TestRedisApprovalsCrashedReplica: the entries of a replica that stopped
// (its client closed mid-wait, so it cannot withdraw them) leave the list
// when their TTL ends; the replica's wait ends with an error, not a hang.
func TestRedisApprovalsCrashedReplica(t *testing.T) {
	srv := redistest.Start(t)
	ca := client(t, srv.URL())
	o := store.RedisApprovalsOptions{Prefix: "crash:", Poll: 50 * time.Millisecond}
	a, b := store.NewRedisApprovals(ca, o), store.NewRedisApprovals(client(t, srv.URL()), o)
	got := waitAsync(context.Background(), a, "orphan", "{}", 2*time.Second)
	listed(t, b, 1)
	ca.Close()
	if r := <-got; r.err == nil || errors.Is(r.err, fs.ErrNotExist) || errors.Is(r.err, fs.ErrExist) {
		t.Fatalf("wait on a closed client: %+v", r)
	}
	listed(t, b, 0)
}

// TestRedisApprovalsOutage: Redis killed while a call waits ends the wait
// with an error (not a hang, not an answer); while it is down every
// operation fails with an error that is neither "unknown" nor "answered";
// restarted, the queue works again.
func TestRedisApprovalsOutage(t *testing.T) {
	srv := redistest.Start(t)
	o := store.RedisApprovalsOptions{Prefix: "out:", Poll: 50 * time.Millisecond}
	a, b := store.NewRedisApprovals(client(t, srv.URL()), o), store.NewRedisApprovals(client(t, srv.URL()), o)
	got := waitAsync(context.Background(), a, "w", "{}", time.Minute)
	listed(t, b, 1)
	srv.Kill()
	if r := <-got; r.err == nil || r.answer != "" || errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("wait during an outage: %+v", r)
	}
	ctx := context.Background()
	down := func(what string, err error) {
		if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist) {
			t.Errorf("%s while Redis is down: %v", what, err)
		}
	}
	_, err := b.List(ctx)
	down("list", err)
	_, err = b.Get(ctx, "w")
	down("get", err)
	down("answer", b.Answer(ctx, "w", []byte("{}")))
	_, err = a.Wait(ctx, "w2", []byte("{}"), time.Minute)
	down("wait", err)

	srv.Restart()
	got = waitAsync(ctx, a, "after", "{}", time.Minute)
	listed(t, b, 1)
	if err := b.Answer(ctx, "after", []byte(`"yes"`)); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.answer != `"yes"` {
		t.Errorf("after the restart: %+v", r)
	}
}

func TestRedisApprovalsPrefixes(t *testing.T) {
	srv := redistest.Start(t)
	c := client(t, srv.URL())
	a := store.NewRedisApprovals(c, store.RedisApprovalsOptions{Prefix: "a:", Poll: 50 * time.Millisecond})
	b := store.NewRedisApprovals(c, store.RedisApprovalsOptions{Prefix: "b:", Poll: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waitAsync(ctx, a, "x", "{}", time.Minute)
	listed(t, a, 1)
	listed(t, b, 0)
	if err := b.Answer(ctx, "x", []byte("{}")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("prefix b answered prefix a's call: %v", err)
	}
	keys, _ := c.Keys(ctx, "*").Result()
	for _, k := range keys {
		if !strings.HasPrefix(k, "a:approvals:") {
			t.Errorf("key %q outside the prefix", k)
		}
	}
}

// TestApprovalPageOverRedisOutage: approval pages (the console of
// approvals.http and its API) over a RedisApprovals whose Redis is down.
// Under on_error deny a call that asks gets a retryable unavailable error
// at once (no one could be asked); under allow it waits on this replica's
// own page, which lists it and answers it as without Redis.
func TestApprovalPageOverRedisOutage(t *testing.T) {
	srv := redistest.Start(t)
	q := store.NewRedisApprovals(client(t, srv.URL()), store.RedisApprovalsOptions{Prefix: "page:", Poll: 50 * time.Millisecond})
	srv.Kill()
	req := policy.Request{Call: tool.Call{Name: "write_file", Args: json.RawMessage(`{"path":"a"}`)}, Decision: policy.Decision{Effect: policy.Ask, Rule: "level:1"}}
	const token = "a-token-of-16-bytes-or-more"
	for _, mode := range []policy.OnError{"", policy.OnErrorDeny, policy.OnErrorAllow} {
		t.Run(string(mode), func(t *testing.T) {
			h := policy.NewQueueApprover(policy.QueueOptions{Queue: q, OnQueueError: mode})
			page := httptest.NewServer(console.New(console.Options{Approvals: h, Token: token, ApprovalsOnly: true, Loopback: true}))
			defer page.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			got := make(chan error, 1)
			var a policy.Approval
			go func() {
				var err error
				a, err = h.Approve(ctx, req)
				got <- err
			}()
			if mode != policy.OnErrorAllow {
				err := <-got
				te := tool.AsError(err)
				if te == nil || te.Type != tool.Unavailable || !te.Retryable || a.Approved {
					t.Fatalf("a call asked while Redis is down: %+v %v", a, err)
				}
				resp, err := http.Get(page.URL + "/api/pending")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusServiceUnavailable {
					t.Errorf("the pending list while Redis is down: %d, want 503", resp.StatusCode)
				}
				return
			}
			var list []struct{ ID, Tool string }
			for len(list) == 0 && ctx.Err() == nil {
				resp, err := http.Get(page.URL + "/api/pending")
				if err != nil {
					t.Fatal(err)
				}
				json.NewDecoder(resp.Body).Decode(&list)
				resp.Body.Close()
				time.Sleep(20 * time.Millisecond)
			}
			if len(list) != 1 || list[0].Tool != "write_file" {
				t.Fatalf("the local page lists %+v", list)
			}
			body := strings.NewReader(fmt.Sprintf(`{"id":%q,"decision":"once"}`, list[0].ID))
			r, _ := http.NewRequest("POST", page.URL+"/api/decide", body)
			r.Header.Set("X-Toolgate-Token", token)
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if err := <-got; err != nil || !a.Approved || resp.StatusCode != http.StatusOK {
				t.Errorf("approved on the local page: %d, %+v, %v", resp.StatusCode, a, err)
			}
		})
	}
}

var _ policy.OnceStore = (*store.RedisOnce)(nil)

// TestRedisOnceAcrossReplicas: a sealed approval state presented to two
// replicas at once, 16 times, is accepted once; another state is
// unaffected; with Redis down it is refused (not accepted unguarded).
func TestRedisOnceAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	secret := []byte("a secret every replica shares, 32+ bytes long")
	type replica struct {
		sealer *policy.StateSealer
		once   policy.OnceStore
	}
	var reps []replica
	for range 2 {
		s, err := policy.NewStateSealer(secret, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, replica{s, store.NewRedisOnce(client(t, srv.URL()), "once-test:")})
	}
	call := tool.Call{Principal: "alice", Name: "delete_file", Args: json.RawMessage(`{"path":"x"}`)}
	ctx := context.Background()
	for round := range 4 {
		state, err := reps[round%2].sealer.Seal(call, policy.Asked{})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		opened, used := 0, 0
		var wg sync.WaitGroup
		for i := range 16 {
			r := reps[i%2]
			wg.Go(func() {
				_, err := r.sealer.Open(ctx, state, call, r.once)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					opened++
				case errors.Is(err, policy.ErrStateUsed):
					used++
				default:
					t.Errorf("open: %v", err)
				}
			})
		}
		wg.Wait()
		if opened != 1 || used != 15 {
			t.Fatalf("round %d: opened %d times, refused as used %d times", round, opened, used)
		}
	}
	state, _ := reps[0].sealer.Seal(call, policy.Asked{})
	srv.Kill()
	_, err := reps[1].sealer.Open(ctx, state, call, reps[1].once)
	for _, known := range []error{policy.ErrStateInvalid, policy.ErrStateExpired, policy.ErrStateMismatch, policy.ErrStateUsed} {
		if err == nil || errors.Is(err, known) {
			t.Fatalf("a state opened while Redis is down: %v", err)
		}
	}
	srv.Restart() // empty: the state was never used
	if _, err := reps[1].sealer.Open(ctx, state, call, reps[1].once); err != nil {
		t.Errorf("after the restart: %v", err)
	}
}
