package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

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
// nature. A call has a key when it carries an IdempotencyKey, when the
// engine trusts caller IDs (Options.KeyByCallID), or when identical calls
// within a window count as one (Options.KeyByArgs). Keys are scoped by tool
// and session.
func (e *Engine) idempotency(next handler) handler {
	if e.opts.Idempotency == nil {
		return next
	}
	return func(ctx context.Context, p *pending) tool.Result {
		if p.def.Annotations.Idempotent || p.def.Annotations.ReadOnly {
			return next(ctx, p)
		}
		key := e.idempotencyKey(p)
		if key == "" {
			return next(ctx, p)
		}
		res, replayed := e.opts.Idempotency.Do(ctx, key, func() tool.Result { return next(ctx, p) })
		p.replayed = replayed
		if replayed {
			res = withMeta(res, "idempotent_replay", true)
		}
		return res
	}
}

func (e *Engine) idempotencyKey(p *pending) string {
	scope := p.def.Name + "\x00" + p.call.Session + "\x00"
	switch {
	case p.call.IdempotencyKey != "":
		return scope + "key:" + p.call.IdempotencyKey
	case e.opts.KeyByCallID && !p.generatedID:
		return scope + "id:" + p.call.ID
	case e.opts.KeyByArgs > 0:
		canon, err := json.Marshal(p.args) // maps marshal with sorted keys
		if err != nil {
			return ""
		}
		sum := sha256.Sum256(canon)
		window := time.Now().UnixNano() / int64(e.opts.KeyByArgs)
		return scope + "args:" + hex.EncodeToString(sum[:]) + ":" + strconv.FormatInt(window, 10)
	}
	return ""
}

// ChainLimiters returns a Limiter that admits a call only when every one of
// ls does, asking them in order (nil entries are skipped). A refusal
// releases what the earlier ones admitted.
func ChainLimiters(ls ...Limiter) Limiter {
	var list []Limiter
	for _, l := range ls {
		if l != nil {
			list = append(list, l)
		}
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return limiterChain(list)
}

type limiterChain []Limiter

func (c limiterChain) Acquire(ctx context.Context, call tool.Call, def tool.Definition) (func(tool.Result), *tool.Error) {
	releases := make([]func(tool.Result), 0, len(c))
	releaseAll := func(res tool.Result) {
		for i := len(releases) - 1; i >= 0; i-- {
			releases[i](res)
		}
	}
	for _, l := range c {
		release, err := l.Acquire(ctx, call, def)
		if err != nil {
			releaseAll(tool.ErrorResult(err))
			return nil, err
		}
		releases = append(releases, release)
	}
	return releaseAll, nil
}
