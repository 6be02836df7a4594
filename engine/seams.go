package engine

import (
	"context"

	"github.com/toolgate/toolgate/tool"
)

// Limiter guards frequency: rate limits, concurrency caps and loop detection.
// Acquire either admits the call, returning a release function to call when
// it ends, or refuses it with an Error (rate_limited with RetryAfter,
// loop_detected, …).
type Limiter interface {
	Acquire(ctx context.Context, call tool.Call, def tool.Definition) (release func(tool.Result), err *tool.Error)
}

// IdempotencyStore records results by key so that a retried call returns the
// first result instead of running twice.
type IdempotencyStore interface {
	// Do returns the recorded result for key, or runs fn, records its result
	// and returns it. A second Do with the same key while the first runs waits
	// for it. replayed reports whether the result was recorded earlier.
	Do(ctx context.Context, key string, fn func() tool.Result) (res tool.Result, replayed bool)
}

// limits consults the Limiter.
func (e *Engine) limits(next handler) handler {
	if e.opts.Limiter == nil {
		return next
	}
	return func(ctx context.Context, p *pending) tool.Result {
		release, err := e.opts.Limiter.Acquire(ctx, p.call, p.def)
		if err != nil {
			return tool.ErrorResult(err)
		}
		res := next(ctx, p)
		release(res)
		return res
	}
}

// idempotency replays recorded results of tools that are not idempotent by
// nature. The key is the call ID: a retry of the same call carries the same ID.
func (e *Engine) idempotency(next handler) handler {
	if e.opts.Idempotency == nil {
		return next
	}
	return func(ctx context.Context, p *pending) tool.Result {
		if p.def.Annotations.Idempotent || p.def.Annotations.ReadOnly {
			return next(ctx, p)
		}
		key := p.def.Name + "\x00" + p.call.ID
		res, replayed := e.opts.Idempotency.Do(ctx, key, func() tool.Result { return next(ctx, p) })
		p.replayed = replayed
		if replayed {
			res = withMeta(res, "idempotent_replay", true)
		}
		return res
	}
}
