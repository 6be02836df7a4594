package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolgate/toolgate/policy"
)

// RedisSandboxes is a policy.SandboxMap in a Redis the replicas share: a
// hash PREFIX sandbox:ID per sandbox (endpoint, created, last, gone; ids
// are already digests), a sorted set PREFIX sandboxes:last of the ids not
// gone by last use (the reaper's scan), and locks PREFIX sandbox-lock:NAME
// (tryLock, the package's one lock).
type RedisSandboxes struct {
	c      redis.UniversalClient
	prefix string
}

// NewRedisSandboxes returns the map over the client c (which it does not
// close), its keys under prefix.
func NewRedisSandboxes(c redis.UniversalClient, prefix string) *RedisSandboxes {
	return &RedisSandboxes{c: c, prefix: prefix}
}

func (r *RedisSandboxes) key(id string) string { return r.prefix + "sandbox:" + id }
func (r *RedisSandboxes) byLast() string       { return r.prefix + "sandboxes:last" }

// Get implements policy.SandboxMap.
func (r *RedisSandboxes) Get(ctx context.Context, id string) (policy.SandboxEntry, bool, error) {
	h, err := r.c.HGetAll(ctx, r.key(id)).Result()
	if err != nil {
		return policy.SandboxEntry{}, false, fmt.Errorf("store: redis: %w", err)
	}
	if len(h) == 0 {
		return policy.SandboxEntry{}, false, nil
	}
	return sandboxEntry(id, h), true, nil
}

func sandboxEntry(id string, h map[string]string) policy.SandboxEntry {
	ms := func(k string) time.Time {
		n, _ := strconv.ParseInt(h[k], 10, 64)
		return time.UnixMilli(n)
	}
	return policy.SandboxEntry{ID: id, Endpoint: h["endpoint"], Created: ms("created"), Last: ms("last"), Gone: h["gone"] == "1"}
}

// Put implements policy.SandboxMap.
func (r *RedisSandboxes) Put(ctx context.Context, e policy.SandboxEntry) error {
	gone := "0"
	if e.Gone {
		gone = "1"
	}
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, r.key(e.ID), "endpoint", e.Endpoint, "created", e.Created.UnixMilli(), "last", e.Last.UnixMilli(), "gone", gone)
		if e.Gone {
			p.ZRem(ctx, r.byLast(), e.ID)
		} else {
			p.ZAdd(ctx, r.byLast(), redis.Z{Score: float64(e.Last.UnixMilli()), Member: e.ID})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: redis: %w", err)
	}
	return nil
}

// sandboxTouchScript moves the last use (ARGV[1] ms) of the entry KEYS[1]
// (id ARGV[2], KEYS[2] the set by last use) forward, never back: replicas'
// touches may arrive out of order. It returns 0 for an entry that is
// missing or gone.
var sandboxTouchScript = lazyScript(`
if redis.call('HGET', KEYS[1], 'gone') ~= '0' then return 0 end
local last = tonumber(redis.call('HGET', KEYS[1], 'last') or '0')
if tonumber(ARGV[1]) > last then
  redis.call('HSET', KEYS[1], 'last', ARGV[1])
  redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
end
return 1`)

// Touch implements policy.SandboxMap.
func (r *RedisSandboxes) Touch(ctx context.Context, id string, t time.Time) (bool, error) {
	n, err := sandboxTouchScript().Run(ctx, r.c, []string{r.key(id), r.byLast()}, t.UnixMilli(), id).Int()
	if err != nil {
		return false, fmt.Errorf("store: redis: %w", err)
	}
	return n == 1, nil
}

// Idle implements policy.SandboxMap.
func (r *RedisSandboxes) Idle(ctx context.Context, t time.Time) ([]policy.SandboxEntry, error) {
	ids, err := r.c.ZRangeByScore(ctx, r.byLast(), &redis.ZRangeBy{Min: "-inf", Max: "(" + strconv.FormatInt(t.UnixMilli(), 10)}).Result()
	if err != nil {
		return nil, fmt.Errorf("store: redis: %w", err)
	}
	var out []policy.SandboxEntry
	for _, id := range ids {
		e, ok, err := r.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if ok && !e.Gone && e.Last.Before(t) {
			out = append(out, e)
		}
	}
	return out, nil
}

// sandboxRetireScript marks the entry KEYS[1] (id ARGV[2]) gone if it is
// not and its last use is before ARGV[1] ms, and takes it out of the set
// by last use KEYS[2]. It returns 1 or 0 (retired or not) followed by the
// entry's fields and values as they were, or nothing for no entry.
var sandboxRetireScript = lazyScript(`
local h = redis.call('HGETALL', KEYS[1])
if #h == 0 then return {} end
local r = 0
if redis.call('HGET', KEYS[1], 'gone') == '0' and tonumber(redis.call('HGET', KEYS[1], 'last') or '0') < tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'gone', '1')
  redis.call('ZREM', KEYS[2], ARGV[2])
  r = 1
end
table.insert(h, 1, r)
return h`)

// Retire implements policy.SandboxMap.
func (r *RedisSandboxes) Retire(ctx context.Context, id string, t time.Time) (policy.SandboxEntry, bool, error) {
	v, err := sandboxRetireScript().Run(ctx, r.c, []string{r.key(id), r.byLast()}, t.UnixMilli(), id).Slice()
	if err != nil {
		return policy.SandboxEntry{}, false, fmt.Errorf("store: redis: %w", err)
	}
	if len(v) == 0 {
		return policy.SandboxEntry{}, false, nil
	}
	retired, _ := v[0].(int64)
	h := map[string]string{}
	for i := 1; i+1 < len(v); i += 2 {
		k, _ := v[i].(string)
		h[k], _ = v[i+1].(string)
	}
	return sandboxEntry(id, h), retired == 1, nil
}

// Lock implements policy.SandboxMap.
func (r *RedisSandboxes) Lock(ctx context.Context, name string, ttl time.Duration) (func(), bool, error) {
	return tryLock(ctx, r.c, r.prefix+"sandbox-lock:"+name, ttl)
}
