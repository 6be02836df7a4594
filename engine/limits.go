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
