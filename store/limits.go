package store

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolgate/toolgate/policy"
)

// ClientOptions returns the client options of a policy's state.redis
// block, with the password read from the environment variable
// PasswordEnv names (an error when it is unset or empty).
func ClientOptions(r *policy.RedisState) (*redis.Options, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	o, err := redis.ParseURL(r.URL)
	if err != nil {
		return nil, fmt.Errorf("state.redis.url: %w", err)
	}
	// A call waits for Redis at most about a second: an outage must
	// refuse calls (or let them run) quickly, not hang them.
	if o.DialTimeout == 0 {
		o.DialTimeout = time.Second
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = 500 * time.Millisecond
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 500 * time.Millisecond
	}
	o.MaxRetries = 1
	if r.PasswordEnv != "" {
		if o.Password = os.Getenv(r.PasswordEnv); o.Password == "" {
			return nil, fmt.Errorf("state.redis.password_env names %s, which is not set", r.PasswordEnv)
		}
	}
	return o, nil
}

// NewClient returns a client of a policy's state.redis block (see
// ClientOptions), or nil when there is none.
func NewClient(r *policy.RedisState) (*redis.Client, error) {
	if r == nil {
		return nil, nil
	}
	o, err := ClientOptions(r)
	if err != nil {
		return nil, err
	}
	return redis.NewClient(o), nil
}

// NewShared returns the policy.Shared of a state.redis block over the
// client c (which it does not close): its limits in RedisLimits under the
// block's prefix, and its on_error.
func NewShared(c redis.UniversalClient, r *policy.RedisState) *policy.Shared {
	return &policy.Shared{Store: NewRedisLimits(c, r.KeyPrefix()), OnError: r.Mode()}
}

// RedisLimits is a policy.LimitStore in a Redis the replicas share: each
// admission is one script, atomic, on Redis's clock.
type RedisLimits struct {
	c      redis.UniversalClient
	prefix string
}

// NewRedisLimits returns the store over the client c (which it does not
// close), its keys under prefix.
func NewRedisLimits(c redis.UniversalClient, prefix string) *RedisLimits {
	return &RedisLimits{c: c, prefix: prefix}
}

// Client is the store's client (to share its pool, as the CLI does with
// the idempotency store).
func (s *RedisLimits) Client() redis.UniversalClient { return s.c }

// Prefix starts every key of the store.
func (s *RedisLimits) Prefix() string { return s.prefix }

// admitScript is the loop guard and every rate bucket of one call in one
// step, on Redis's clock, in few commands of constant cost, and as few
// writes as it can (a write costs a script several reads): one MGET reads
// the call's failure (a key Redis expires at the end of its window) and
// every bucket; the caller's history is one hash, a ring of its last
// calls with a count per call key, read by two HMGETs and written, when
// the call is admitted, by one HSET.
//
// KEYS: the history, the failure, one key per bucket. ARGV: max (0: no
// loop guard), window ms, cycles, the call's key, the history bound H (≥
// 2), then per bucket its emission interval and burst (µs, count). The
// history holds the calls of sequence numbers s (the oldest) to e-1, at
// most H-1 of them: the key of call i in field i % H, its time (ms) in
// field -(i % H)-1, and the number of calls of each key in a field named
// by the key (32 hex digits: never a number); it lives until x (ms),
// pushed two windows on whenever less than one is left. The loop guard
// runs first: it forgets the calls out of the window (from the oldest),
// refuses the call if its failure is live, if max identical calls are in
// the history, or if it completes a cycle of 2 or 3 calls for the
// cycles-th time, and remembers it otherwise (the oldest call going when
// there are H-1), whatever the buckets say; a refusal of the loop guard
// writes nothing (what it forgot is forgotten again next time). Then the
// buckets (GCRA: a bucket is the theoretical arrival time of its next
// call) are checked and only if all admit is a token taken from each. It
// returns {0} (admitted), {1, 0, result} (this call just failed for good),
// {2, same} (repeated), {3, n} (a cycle of n) or {4, bucket, retry µs}.
var admitScript = lazyScript(`
local t = redis.call('TIME')
local now_us = t[1] * 1000000 + t[2]
local now = math.floor(now_us / 1000)
local maxn = tonumber(ARGV[1])
local first = 3
if maxn > 0 then first = 2 end
local got = {}
if #KEYS >= first then got = redis.call('MGET', unpack(KEYS, first)) end
if maxn > 0 then
  if got[1] then return {1, 0, got[1]} end
  local h, window, cycles, key, ring = KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
  local r = redis.call('HMGET', h, key, 's', 'e', 'x')
  local same, s, e, x = tonumber(r[1]) or 0, tonumber(r[2]) or 0, tonumber(r[3]) or 0, tonumber(r[4]) or 0
  -- the oldest call (time, key), then the last 3 * cycles - 1 keys
  local from, v, at, head = math.max(s, e - 3 * cycles + 1), {}, 0, nil
  if s < e then
    local f = {-(s % ring) - 1, s % ring}
    for i = from, e - 1 do f[#f + 1] = i % ring end
    v = redis.call('HMGET', h, unpack(f))
    at, head = tonumber(v[1]), v[2]
  end
  local counts = {}
  local function drop()
    local c = counts[head] or (head == key and same) or tonumber(redis.call('HGET', h, head))
    counts[head] = c - 1
    if head == key then same = c - 1 end
    s = s + 1
  end
  while s < e and now - at > window do
    drop()
    if s < e then
      local n = redis.call('HMGET', h, -(s % ring) - 1, s % ring)
      at, head = tonumber(n[1]), n[2]
    end
  end
  if same >= maxn then return {2, same} end
  local seq = {}
  for i = math.max(from, s), e - 1 do seq[#seq + 1] = v[i - from + 3] end
  seq[#seq + 1] = key
  for c = 2, 3 do
    local span = c * cycles
    if #seq >= span then
      local base = #seq - span
      local ok = true
      for a = 1, c do
        for b = a + 1, c do
          if seq[base + a] == seq[base + b] then ok = false end
        end
      end
      for i = c + 1, span do
        if ok and seq[base + i] ~= seq[base + i - c] then ok = false end
      end
      if ok then return {3, c} end
    end
  end
  if e + 1 - s > ring - 1 then drop() end
  counts[key] = same + 1
  local set, gone = {'HSET', h, e % ring, key, -(e % ring) - 1, now, 's', s, 'e', e + 1}, {'HDEL', h}
  for k, c in pairs(counts) do
    if c > 0 then
      set[#set + 1], set[#set + 2] = k, c
    else
      gone[#gone + 1] = k
    end
  end
  if x < now + window then set[#set + 1], set[#set + 2] = 'x', now + 2 * window end
  redis.call(unpack(set))
  if #gone > 2 then redis.call(unpack(gone)) end
  if x < now + window then redis.call('PEXPIRE', h, 2 * window) end
end
local tats = {}
for i = 3, #KEYS do
  local em, burst = tonumber(ARGV[2 * i]), tonumber(ARGV[2 * i + 1])
  local tat = tonumber(got[i - first + 1]) or 0
  if tat < now_us then tat = now_us end
  local nxt = tat + em
  local early = nxt - burst * em - now_us
  if early > 0 then return {4, i - 2, early} end
  tats[i] = nxt
end
for i = 3, #KEYS do
  redis.call('SET', KEYS[i], string.format('%d', tats[i]), 'PX', math.ceil((tats[i] - now_us) / 1000))
end
return {0}
`)

// Admit implements policy.LimitStore.
func (s *RedisLimits) Admit(ctx context.Context, a policy.Admission) (policy.Verdict, error) {
	keys := make([]string, 0, 2+len(a.Buckets))
	args := make([]any, 0, 5+2*len(a.Buckets))
	keys = append(keys, s.prefix+a.Calls, s.prefix+a.Failure)
	args = append(args, a.Max, a.Window.Milliseconds(), a.Cycles, a.Key, max(2, a.History))
	for _, b := range a.Buckets {
		keys = append(keys, s.prefix+b.Key)
		args = append(args, max(1, b.Every.Microseconds()), b.Burst)
	}
	r, err := admitScript().Run(ctx, s.c, keys, args...).Slice()
	if err != nil {
		return policy.Verdict{}, fmt.Errorf("store: redis: %w", err)
	}
	num := func(i int) int64 {
		if i < len(r) {
			if n, ok := r[i].(int64); ok {
				return n
			}
		}
		return -1
	}
	switch num(0) {
	case 0:
		return policy.Verdict{}, nil
	case 1:
		if len(r) != 3 {
			break
		}
		if res, ok := r[2].(string); ok {
			return policy.Verdict{Outcome: policy.RepeatsFailure, Result: []byte(res)}, nil
		}
	case 2:
		return policy.Verdict{Outcome: policy.Repeated, N: int(num(1))}, nil
	case 3:
		return policy.Verdict{Outcome: policy.Cycling, N: int(num(1))}, nil
	case 4:
		return policy.Verdict{Outcome: policy.Limited, N: int(num(1)) - 1, RetryAfter: time.Duration(num(2)) * time.Microsecond}, nil
	}
	return policy.Verdict{}, fmt.Errorf("store: redis: the admission script answered %v", r)
}

// progressedScript takes the latest call of key ARGV[1] out of the history
// KEYS[1] (a ring of ARGV[2] fields, see admitScript): the calls after it
// move down one place, its count drops.
var progressedScript = lazyScript(`
local h, key, ring = KEYS[1], ARGV[1], tonumber(ARGV[2])
local r = redis.call('HMGET', h, 's', 'e')
local s, e = tonumber(r[1]) or 0, tonumber(r[2]) or 0
for i = e - 1, s, -1 do
  if redis.call('HGET', h, i % ring) == key then
    for j = i, e - 2 do
      local n = redis.call('HMGET', h, (j + 1) % ring, -((j + 1) % ring) - 1)
      redis.call('HSET', h, j % ring, n[1], -(j % ring) - 1, n[2])
    end
    redis.call('HDEL', h, (e - 1) % ring, -((e - 1) % ring) - 1)
    redis.call('HSET', h, 'e', e - 1)
    if redis.call('HINCRBY', h, key, -1) <= 0 then redis.call('HDEL', h, key) end
    return 1
  end
end
return 0
`)

// Progressed implements policy.LimitStore.
func (s *RedisLimits) Progressed(ctx context.Context, a policy.Admission) error {
	if err := progressedScript().Run(ctx, s.c, []string{s.prefix + a.Calls}, a.Key, max(2, a.History)).Err(); err != nil {
		return fmt.Errorf("store: redis: %w", err)
	}
	return nil
}

// Failed implements policy.LimitStore: the failure is a key Redis expires
// at the end of the window.
func (s *RedisLimits) Failed(ctx context.Context, failure string, result []byte, window time.Duration) error {
	if err := s.c.Set(ctx, s.prefix+failure, result, window).Err(); err != nil {
		return fmt.Errorf("store: redis: %w", err)
	}
	return nil
}

// Streak implements policy.LimitStore: a streak is a hash {n, last ms}.
func (s *RedisLimits) Streak(ctx context.Context, session string) (int, time.Time, error) {
	v, err := s.c.HMGet(ctx, s.prefix+session, "n", "last").Result()
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("store: redis: %w", err)
	}
	var n int
	var last time.Time
	if str, ok := v[0].(string); ok {
		n, _ = strconv.Atoi(str)
	}
	if str, ok := v[1].(string); ok {
		ms, _ := strconv.ParseInt(str, 10, 64)
		last = time.UnixMilli(ms)
	}
	return n, last, nil
}

// streakScript counts a refusal (ARGV[1] = now ms, ARGV[2] = cool-down
// ms) in the hash KEYS[1] {n, last}: a streak older than the cool-down
// starts over.
var streakScript = lazyScript(`
local last = tonumber(redis.call('HGET', KEYS[1], 'last') or 0)
local n = 0
if tonumber(ARGV[1]) - last < tonumber(ARGV[2]) then n = tonumber(redis.call('HGET', KEYS[1], 'n') or 0) end
redis.call('HSET', KEYS[1], 'n', n + 1, 'last', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return n + 1
`)

// Refused implements policy.LimitStore.
func (s *RedisLimits) Refused(ctx context.Context, session string, now time.Time, cool time.Duration) error {
	if err := streakScript().Run(ctx, s.c, []string{s.prefix + session}, now.UnixMilli(), cool.Milliseconds()).Err(); err != nil {
		return fmt.Errorf("store: redis: %w", err)
	}
	return nil
}

// EndStreak implements policy.LimitStore.
func (s *RedisLimits) EndStreak(ctx context.Context, session string) error {
	if err := s.c.Del(ctx, s.prefix+session).Err(); err != nil {
		return fmt.Errorf("store: redis: %w", err)
	}
	return nil
}

// Ping implements policy.LimitStore.
func (s *RedisLimits) Ping(ctx context.Context) error { return s.c.Ping(ctx).Err() }

var _ policy.LimitStore = (*RedisLimits)(nil)
