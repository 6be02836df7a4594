package store

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// Idempotency records call results by key in a Store. It satisfies the
// engine's IdempotencyStore interface.
type Idempotency struct {
	store Store
	ttl   time.Duration
	log   *slog.Logger

	mu       sync.Mutex
	inflight map[string]*flight
}

type flight struct {
	done chan struct{}
	res  tool.Result
}

// NewIdempotency returns an Idempotency over s keeping results for ttl
// (0: 24 hours).
func NewIdempotency(s Store, ttl time.Duration) *Idempotency {
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	return &Idempotency{store: s, ttl: ttl, log: slog.Default(), inflight: map[string]*flight{}}
}

// Do returns the result recorded for key, or runs fn and records its
// result. A call with the same key that arrives while fn runs waits for it
// (as long as its context allows) and gets the same result. Results that
// failed retryably (a timeout, an unavailable upstream) are not recorded:
// retrying them should run again.
func (i *Idempotency) Do(ctx context.Context, key string, fn func() tool.Result) (tool.Result, bool) {
	i.mu.Lock()
	if f, ok := i.inflight[key]; ok {
		i.mu.Unlock()
		select {
		case <-f.done:
			return f.res, true
		case <-ctx.Done():
			err := tool.AsError(ctx.Err())
			err.Message = "a call with the same idempotency key is still running, and this one stopped waiting: " + ctx.Err().Error()
			return tool.ErrorResult(err), false
		}
	}
	f := &flight{done: make(chan struct{})}
	i.inflight[key] = f
	i.mu.Unlock()
	defer func() {
		i.mu.Lock()
		delete(i.inflight, key)
		i.mu.Unlock()
		close(f.done)
	}()

	b, ok, err := i.store.Get(ctx, key)
	if err != nil {
		// Fail closed: without the store we cannot know whether it ran.
		f.res = tool.ErrorResult(tool.Errorf(tool.Unavailable, "the idempotency store cannot be read: %v", err).
			WithRetry(time.Second).WithSuggestion("retry later; the call was not run"))
		return f.res, false
	}
	if ok {
		if err := json.Unmarshal(b, &f.res); err == nil {
			return f.res, true
		}
		i.log.Warn("idempotency: unreadable stored result; running again", "key", key)
	}
	f.res = fn()
	if f.res.Error == nil || !f.res.Error.Retryable {
		if b, err := json.Marshal(f.res); err == nil {
			if err := i.store.Put(context.WithoutCancel(ctx), key, b, i.ttl); err != nil {
				i.log.Error("idempotency: result not recorded", "key", key, "err", err)
			}
		}
	}
	return f.res, false
}
