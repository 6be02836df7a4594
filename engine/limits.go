package engine

import (
	"context"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// Limiter guards frequency: rate limits, concurrency caps and loop detection.
// Acquire either admits the call, returning a release function to call when
// it ends, or refuses it with an Error (rate_limited with RetryAfter,
// loop_detected, …).
type Limiter interface {
	Acquire(ctx context.Context, call tool.Call, def tool.Definition) (release func(tool.Result), err *tool.Error)
}

// ArgsLimiter is a Limiter that can also take the call's arguments as the
// engine parsed (and repaired) them, so that it need not parse them again
// (policy.Limiter's loop guard keys calls by their arguments).
type ArgsLimiter interface {
	Limiter
	AcquireArgs(ctx context.Context, call tool.Call, def tool.Definition, args map[string]any) (release func(tool.Result), err *tool.Error)
}

// acquire asks l, with the parsed arguments when it takes them.
func acquire(ctx context.Context, l Limiter, call tool.Call, def tool.Definition, args map[string]any) (func(tool.Result), *tool.Error) {
	if al, ok := l.(ArgsLimiter); ok && args != nil {
		return al.AcquireArgs(ctx, call, def, args)
	}
	return l.Acquire(ctx, call, def)
}

// limits consults the Limiter.
func (e *Engine) limits(next handler) handler {
	if e.opts.Limiter == nil {
		return next
	}
	if l, ok := e.opts.Limiter.(*policy.Limiter); ok {
		// AcquireTicket is acquire's AcquireArgs (or Acquire, args nil), its
		// release a value: no release func allocated a call. Only a
		// *policy.Limiter itself takes this way (toolgate proxy's); a
		// chain of limiters (ChainLimiters: serve with client roots, the
		// console) goes the general way below.
		return func(ctx context.Context, p *pending) tool.Result {
			t, err := l.AcquireTicket(ctx, p.call, p.def, p.args)
			if err != nil {
				return tool.ErrorResult(err)
			}
			res := next(ctx, p)
			t.Release(res)
			return res
		}
	}
	return func(ctx context.Context, p *pending) tool.Result {
		release, err := acquire(ctx, e.opts.Limiter, p.call, p.def, p.args)
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
	return c.AcquireArgs(ctx, call, def, nil)
}

func (c limiterChain) AcquireArgs(ctx context.Context, call tool.Call, def tool.Definition, args map[string]any) (func(tool.Result), *tool.Error) {
	releases := make([]func(tool.Result), 0, len(c))
	releaseAll := func(res tool.Result) {
		for i := len(releases) - 1; i >= 0; i-- {
			releases[i](res)
		}
	}
	for _, l := range c {
		release, err := acquire(ctx, l, call, def, args)
		if err != nil {
			releaseAll(tool.ErrorResult(err))
			return nil, err
		}
		releases = append(releases, release)
	}
	return releaseAll, nil
}
