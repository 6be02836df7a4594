package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolgate/toolgate/tool"
)

// Shared is the Redis in which the Limiters and Breakers of several
// replicas keep what they must agree on: rate-limit buckets, the loop
// guard's history and failures, and the breaker's streaks, keyed by
// principal and conversation (tool.Call.Caller). Give one Shared to the
// Limiter (LimitConfig.Shared) and the Breaker of a process.
//
// While Redis cannot be reached, OnError decides: deny (the default)
// refuses calls as unavailable with a retry hint; allow runs them under
// this process's own limits. Either way the outage is logged once, and its
// end too: recovery needs no restart.
type Shared struct {
	Client  redis.UniversalClient
	Prefix  string  // starts every key ("" : DefaultRedisPrefix)
	OnError OnError // "" : OnErrorDeny
	Log     *slog.Logger
	// OnOutage, when set, hears of each outage as it starts (down, with
	// Redis's error) and as it ends (!down, nil): once per outage, as it
	// is logged. The CLI records both in the audit log.
	OnOutage func(down bool, err error)

	down atomic.Bool
}

// NewShared returns the Shared of a policy's state.redis block over a
// client made from it (closed by Shared.Close), or nil when there is none.
func NewShared(r *RedisState) (*Shared, error) {
	if r == nil {
		return nil, nil
	}
	o, err := r.Options()
	if err != nil {
		return nil, err
	}
	return &Shared{Client: redis.NewClient(o), Prefix: r.KeyPrefix(), OnError: r.Mode()}, nil
}

// Close closes the client.
func (s *Shared) Close() error { return s.Client.Close() }

// Ping reports whether Redis answers.
func (s *Shared) Ping(ctx context.Context) error { return s.Client.Ping(ctx).Err() }

// key names kind's state of id (a tool, principal, caller…) in Redis, or
// in this process when s is nil.
func (s *Shared) key(kind, id string) string {
	p := DefaultRedisPrefix
	if s != nil && s.Prefix != "" {
		p = s.Prefix
	}
	return p + kind + ":" + digest(id)
}

func (s *Shared) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// answered notes that Redis answered, ending an outage.
func (s *Shared) answered() {
	if s.down.Load() && s.down.CompareAndSwap(true, false) {
		s.log().Info("shared state: Redis answers again; limits are shared again")
		if s.OnOutage != nil {
			s.OnOutage(false, nil)
		}
	}
}

// failed notes that Redis did not answer and returns the call's error
// under OnErrorDeny, or nil under OnErrorAllow (the caller then falls back
// to local state).
func (s *Shared) failed(ctx context.Context, err error) *tool.Error {
	if ctx.Err() != nil { // the call's own end, not an outage
		return tool.AsError(ctx.Err())
	}
	allow := s.OnError == OnErrorAllow
	if s.down.CompareAndSwap(false, true) {
		then := "calls are refused as unavailable until it answers (on_error: deny)"
		if allow {
			then = "calls run under this process's own limits until it answers (on_error: allow)"
		}
		s.log().Warn("shared state: Redis cannot be reached; "+then, "err", err)
		if s.OnOutage != nil {
			s.OnOutage(true, err)
		}
	}
	if allow {
		return nil
	}
	return tool.Errorf(tool.Unavailable, "the shared limits store (Redis) cannot be reached, so the call's limits cannot be checked: %v", err).
		WithRetry(time.Second).WithSuggestion("retry in a moment; the call was not run")
}

// Degraded reports whether the last exchange with Redis failed.
func (s *Shared) Degraded() bool { return s.down.Load() }

// admitScript is the loop guard and every rate bucket of one call in one
// step, on Redis's clock. KEYS: the caller's history (a list of "ms|key",
// oldest first), its failures (a hash key → "ms|result"), the count of
// each key in the history (a hash), then one key per bucket. ARGV: window
// ms, max (0: no loop guard), cycles, the call's key, the history bound,
// then per bucket its emission interval and burst (µs, count). The loop
// guard runs first and remembers the call as the local one does, in
// amortized constant time (old entries leave from the head, the counts go
// with them); then the buckets are checked and only if all admit is one
// token taken from each (GCRA: a bucket is the theoretical arrival time of
// its next call). It returns {0} (admitted), {1, 0, result} (this call
// just failed for good), {2, same} (repeated), {3, n} (a cycle of n) or
// {4, bucket, retry µs}.
var admitScript = redis.NewScript(`
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now = math.floor(now_us / 1000)
local window, maxn, cycles, key, maxh = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local function split(e)
  local sep = string.find(e, '|', 1, true)
  return tonumber(string.sub(e, 1, sep - 1)), string.sub(e, sep + 1)
end
local function drop()
  local _, k = split(redis.call('LPOP', KEYS[1]))
  if redis.call('HINCRBY', KEYS[3], k, -1) <= 0 then redis.call('HDEL', KEYS[3], k) end
end
if maxn > 0 then
  local f = redis.call('HGET', KEYS[2], key)
  if f then
    local at, res = split(f)
    if now - at <= window then return {1, 0, res} end
    redis.call('HDEL', KEYS[2], key)
  end
  while true do
    local e = redis.call('LINDEX', KEYS[1], 0)
    if not e or now - split(e) <= window then break end
    drop()
  end
  local n = redis.call('LLEN', KEYS[1])
  while n >= maxh do
    drop()
    n = n - 1
  end
  local same = tonumber(redis.call('HGET', KEYS[3], key) or 0)
  if same >= maxn then return {2, same} end
  local seq = {}
  for _, e in ipairs(redis.call('LRANGE', KEYS[1], -(3 * cycles - 1), -1)) do
    local _, k = split(e)
    seq[#seq + 1] = k
  end
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
  redis.call('RPUSH', KEYS[1], string.format('%.0f', now) .. '|' .. key)
  redis.call('HINCRBY', KEYS[3], key, 1)
  redis.call('PEXPIRE', KEYS[1], window)
  redis.call('PEXPIRE', KEYS[3], window)
end
local tats = {}
for i = 4, #KEYS do
  local em, burst = tonumber(ARGV[4 + 2 * (i - 3)]), tonumber(ARGV[5 + 2 * (i - 3)])
  local tat = tonumber(redis.call('GET', KEYS[i]) or 0)
  if tat < now_us then tat = now_us end
  local nxt = tat + em
  local early = nxt - burst * em - now_us
  if early > 0 then return {4, i - 3, string.format('%.0f', early)} end
  tats[i] = nxt
end
for i = 4, #KEYS do
  redis.call('SET', KEYS[i], string.format('%.0f', tats[i]), 'PX', math.max(1, math.ceil((tats[i] - now_us) / 1000)))
end
return {0}
`)

// recordScript keeps a call's failure ARGV[2] under its key ARGV[1] in the
// hash KEYS[1] for ARGV[3] ms.
var recordScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], string.format('%.0f', now) .. '|' .. ARGV[2])
return redis.call('PEXPIRE', KEYS[1], ARGV[3])
`)

// bucket is one token bucket a call takes from.
type bucket struct {
	key  string
	rate Rate
	who  string // what the refusal says is called too often
}

// sharedAdmit checks the loop guard and takes the call's tokens in Redis.
// A nil *tool.Error and a nil error admit the call; a non-nil error is
// Redis's.
func (l *Limiter) sharedAdmit(ctx context.Context, s *Shared, call tool.Call, buckets []bucket, key string) (*tool.Error, error) {
	loop := l.cfg.Loop
	maxn := loop.Max
	if loop.Off {
		maxn = 0
	}
	keys := []string{s.key("loop", call.Caller()), s.key("failed", call.Caller()), s.key("loop-counts", call.Caller())}
	args := []any{loop.Window.Milliseconds(), maxn, loop.Cycles, digest(key), maxHistory}
	for _, b := range buckets {
		em := int64(1e12) // a rate of 0 never refills (within 11 days)
		if b.rate.PerSecond > 1e-6 {
			em = max(1, int64(1e6/b.rate.PerSecond))
		}
		keys = append(keys, b.key)
		args = append(args, em, b.rate.Burst)
	}
	r, err := admitScript.Run(ctx, s.Client, keys, args...).Slice()
	if err != nil {
		return nil, err
	}
	if len(r) == 0 {
		return nil, errors.New("the admission script answered nothing")
	}
	num := func(i int) int64 {
		if i >= len(r) {
			return 0
		}
		switch v := r[i].(type) {
		case int64:
			return v
		case string:
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
		return 0
	}
	switch num(0) {
	case 0:
		return nil, nil
	case 1:
		var res tool.Result
		if len(r) < 3 {
			return nil, errors.New("the admission script answered a failure without its result")
		}
		if str, _ := r[2].(string); json.Unmarshal([]byte(str), &res) != nil || res.Error == nil {
			return nil, errors.New("an unreadable failure in the loop guard's history")
		}
		return repeatedFailure(res), nil
	case 2:
		return repeated(int(num(1)), loop.Window), nil
	case 3:
		return cycling(int(num(1)), loop.Cycles), nil
	case 4:
		i := int(num(1)) - 1
		if i < 0 || i >= len(buckets) {
			return nil, fmt.Errorf("the admission script refused bucket %d of %d", i+1, len(buckets))
		}
		return limited(buckets[i].who, time.Duration(num(2))*time.Microsecond), nil
	}
	return nil, fmt.Errorf("the admission script answered %v", r)
}

// sharedRecord keeps a call's failure for the loop guard. A call that did
// not fail costs no round trip: the admission found no live failure of its
// key (or it would have been refused) and dropped a stale one. (Locally a
// success also forgets a failure an identical call made meanwhile; here
// that failure stays for the window: the stricter of the two.)
func (l *Limiter) sharedRecord(s *Shared, call tool.Call, key string, res tool.Result) {
	if !failedForGood(res) {
		return
	}
	b, err := json.Marshal(res)
	if err != nil {
		return
	}
	ctx := context.Background() // bounded by the client's timeouts
	if err := recordScript.Run(ctx, s.Client, []string{s.key("failed", call.Caller())}, digest(key), string(b), l.cfg.Loop.Window.Milliseconds()).Err(); err != nil && !errors.Is(err, redis.Nil) {
		s.failed(ctx, err)
		return
	}
	s.answered()
}

// digest is a call key's fixed-size name in Redis.
func digest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}

// streakScript counts a refusal (ARGV[1] = now ms, ARGV[2] = cool-down
// ms) in the hash KEYS[1] {n, last}: a streak older than the cool-down
// starts over.
var streakScript = redis.NewScript(`
local last = tonumber(redis.call('HGET', KEYS[1], 'last') or 0)
local n = 0
if tonumber(ARGV[1]) - last < tonumber(ARGV[2]) then n = tonumber(redis.call('HGET', KEYS[1], 'n') or 0) end
redis.call('HSET', KEYS[1], 'n', n + 1, 'last', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return n + 1
`)

// sharedStreak returns the session's streak from Redis.
func (b *Breaker) sharedStreak(ctx context.Context, s *Shared, session string) (streak, error) {
	v, err := s.Client.HMGet(ctx, s.key("breaker", session), "n", "last").Result()
	if err != nil {
		return streak{}, err
	}
	var st streak
	if n, ok := v[0].(string); ok {
		st.refusals, _ = strconv.Atoi(n)
	}
	if ms, ok := v[1].(string); ok {
		at, _ := strconv.ParseInt(ms, 10, 64)
		st.last = time.UnixMilli(at)
	}
	return st, nil
}

// sharedRecord counts a refusal in Redis, or ends the streak.
func (b *Breaker) sharedRecord(ctx context.Context, s *Shared, session string, refused bool, now time.Time, cool time.Duration) error {
	k := s.key("breaker", session)
	if !refused {
		return s.Client.Del(ctx, k).Err()
	}
	return streakScript.Run(ctx, s.Client, []string{k}, now.UnixMilli(), cool.Milliseconds()).Err()
}
