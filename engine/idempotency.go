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

// IdempotencyStore records results by key so that a retried call returns the
// first result instead of running twice.
type IdempotencyStore interface {
	// Do returns the recorded result for key, or runs fn, records its result
	// and returns it. A second Do with the same key while the first runs waits
	// for it. replayed reports whether the result was recorded earlier.
	Do(ctx context.Context, key string, fn func() tool.Result) (res tool.Result, replayed bool)
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
	scope := p.def.Name + "\x00" + p.call.Caller() + "\x00"
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
