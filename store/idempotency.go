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
// retrying them should run again. Over a Claimer the same holds across
// processes (see the package doc).
func (i *Idempotency) Do(ctx context.Context, key string, fn func() tool.Result) (tool.Result, bool) {
	i.mu.Lock()
	if f, ok := i.inflight[key]; ok {
		i.mu.Unlock()
		select {
		case <-f.done:
			return f.res, true
		case <-ctx.Done():
			return stoppedWaiting(ctx), false
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

	if c, ok := i.store.(Claimer); ok {
		var replayed bool
		f.res, replayed = i.doShared(ctx, c, key, fn)
		return f.res, replayed
	}
	b, ok, err := i.store.Get(ctx, key)
	if err != nil {
		f.res = unreadable(err)
		return f.res, false
	}
	if ok {
		if err := json.Unmarshal(b, &f.res); err == nil {
			return f.res, true
		}
		i.log.Warn("idempotency: unreadable stored result; running again", "key", key)
	}
	f.res = fn()
	if final(f.res) {
		i.record(ctx, key, f.res)
	}
	return f.res, false
}

// doShared is Do over a store other processes share: the key is claimed
// before fn runs; a duplicate polls (10 ms, doubling up to 250 ms) until the
// owner records the result; a claim whose owner stopped without a result
// is reported, and the call is not run again under that key.
func (i *Idempotency) doShared(ctx context.Context, c Claimer, key string, fn func() tool.Result) (tool.Result, bool) {
	wait := 10 * time.Millisecond
	for {
		state, b, err := c.Claim(ctx, key, i.ttl)
		if err != nil {
			return unreadable(err), false
		}
		switch state {
		case Claimed:
			res := fn()
			if final(res) {
				i.record(ctx, key, res)
			} else if err := c.Unclaim(context.WithoutCancel(ctx), key); err != nil {
				i.log.Error("idempotency: claim not dropped; it lapses", "key", key, "err", err)
			}
			return res, false
		case Done:
			var res tool.Result
			if err := json.Unmarshal(b, &res); err != nil {
				return tool.ErrorResult(tool.Errorf(tool.Internal, "the result recorded for this idempotency key is unreadable: %v", err).
					WithSuggestion("check whether the first call's effect happened; to run it again, use a new idempotency key")), false
			}
			return res, true
		case Lapsed:
			return tool.ErrorResult(tool.Errorf(tool.Conflict, "a call with this idempotency key started in another process, which stopped before recording its result: it may have run in part, and it is not run again under this key").
				WithSuggestion("check whether its effect happened; to run it again, send it with a new idempotency key").
				WithDetail("idempotency_lapsed", true)), false
		}
		select { // Held: another process runs it
		case <-time.After(wait):
			wait = min(2*wait, 250*time.Millisecond)
		case <-ctx.Done():
			return stoppedWaiting(ctx), false
		}
	}
}

// final reports whether a result is recorded: results that failed
// retryably (a timeout, an unavailable upstream) are not, so that a retry
// runs again.
func final(res tool.Result) bool { return res.Error == nil || !res.Error.Retryable }

func (i *Idempotency) record(ctx context.Context, key string, res tool.Result) {
	b, err := json.Marshal(res)
	if err == nil {
		err = i.store.Put(context.WithoutCancel(ctx), key, b, i.ttl)
	}
	if err != nil {
		i.log.Error("idempotency: result not recorded", "key", key, "err", err)
	}
}

// unreadable fails closed: without the store nobody knows whether it ran.
func unreadable(err error) tool.Result {
	return tool.ErrorResult(tool.Errorf(tool.Unavailable, "the idempotency store cannot be read: %v", err).
		WithRetry(time.Second).WithSuggestion("retry later; the call was not run"))
}

func stoppedWaiting(ctx context.Context) tool.Result {
	err := tool.AsError(ctx.Err())
	err.Message = "a call with the same idempotency key is still running, and this one stopped waiting: " + ctx.Err().Error()
	return tool.ErrorResult(err)
}
