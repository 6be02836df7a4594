package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/redistest"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/tool"
)

// TestSharedStateAcrossEngines: two engines (two replicas, each with its
// own Redis clients) govern one tool. Duplicates of an idempotent call
// sent to both at once run once and all get its result; the rate budget
// is one for both. (Eight identical calls would be a loop: the guard is
// off here, and tested in package policy.)
func TestSharedStateAcrossEngines(t *testing.T) {
	srv := redistest.Start(t)
	var runs atomic.Int64
	gate := make(chan struct{})
	reg := registry.New()
	reg.Register(tool.New("charge_card", "Charges a card once.", func(_ context.Context, in struct {
		Order string `json:"order"`
	}) (string, error) {
		n := runs.Add(1)
		if in.Order == "slow" {
			<-gate
		}
		return fmt.Sprintf("charged %s (run %d)", in.Order, n), nil
	}, tool.WithLevel(tool.LevelWrite)))
	var engines []*engine.Engine
	for range 2 {
		o, _ := redis.ParseURL(srv.URL())
		c := redis.NewClient(o)
		t.Cleanup(func() { c.Close() })
		shared := store.NewShared(c, &policy.RedisState{URL: srv.URL(), Prefix: "eng:"})
		engines = append(engines, engine.New(engine.Options{
			Registry:    reg,
			Limiter:     policy.NewLimiter(policy.LimitConfig{Tools: map[string]policy.Rate{"*": {PerSecond: 0.001, Burst: 20}}, Loop: policy.LoopConfig{Off: true}, Shared: shared}),
			Idempotency: store.NewIdempotency(store.NewRedis(c, store.RedisOptions{Prefix: "eng:"}), time.Hour),
		}))
	}
	ctx := context.Background()
	call := tool.Call{Name: "charge_card", Args: json.RawMessage(`{"order":"slow"}`), IdempotencyKey: "order-7", Session: "s", Principal: "p"}

	// Eight duplicates over both engines at once: one runs, the others wait.
	var wg sync.WaitGroup
	results := make([]tool.Result, 8)
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = engines[i%2].Execute(ctx, call) }()
	}
	for runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(gate)
	wg.Wait()
	replays := 0
	for _, r := range results {
		if r.IsError() || r.Text() != "charged slow (run 1)" {
			t.Fatalf("duplicate got %q %+v", r.Text(), r.Error)
		}
		if r.Meta["idempotent_replay"] == true {
			replays++
		}
	}
	if runs.Load() != 1 || replays != 7 {
		t.Fatalf("ran %d times with %d replays; want 1 run and 7 replays", runs.Load(), replays)
	}
	// The budget of 20 is one for both engines: 8 spent above (each
	// duplicate passed the limits), 12 left.
	granted := 0
	for i := range 30 {
		c := tool.Call{Name: "charge_card", Args: json.RawMessage(fmt.Sprintf(`{"order":"o%d"}`, i)), Session: "s", Principal: "p"}
		r := engines[i%2].Execute(ctx, c)
		switch {
		case !r.IsError():
			granted++
		case r.Error.Type != tool.RateLimited:
			t.Fatalf("call %d: %+v", i, r.Error)
		}
	}
	if granted != 12 {
		t.Errorf("granted %d after the duplicates, want the 12 left of 20", granted)
	}
}
