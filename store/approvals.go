package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisApprovals is a queue of calls waiting for a person's decision, in a
// Redis several replicas share (it implements policy.ApprovalQueue): the
// replica holding a call puts its entry there, the approvals page of any
// replica lists and answers it, and the answer reaches the holder.
//
// An entry is a key with a TTL (its approval timeout and some slack), so a
// replica that dies leaves nothing behind for long, and an index (a sorted
// set by expiry, pruned on Redis's clock). The first answer is stored, in
// one script, only while the entry waits and only if none was stored yet;
// it is published on the entry's channel, and the holder also polls for
// it (Poll), so a lost message delays an answer but cannot lose it. The
// stored answer outlives its entry by the entry's TTL, so that a second
// answer is told it came late (fs.ErrExist) rather than that the call is
// unknown (fs.ErrNotExist). It needs one Redis server (or a primary), not a
// cluster: listing reads entries its script does not declare.
type RedisApprovals struct {
	c      redis.UniversalClient
	prefix string
	poll   time.Duration
}

// RedisApprovalsOptions configure NewRedisApprovals.
type RedisApprovalsOptions struct {
	Prefix string        // starts every key
	Poll   time.Duration // how often a waiting call looks for a stored answer (0: 1 s)
}

// NewRedisApprovals returns the queue over the client c (which it does not
// close).
func NewRedisApprovals(c redis.UniversalClient, o RedisApprovalsOptions) *RedisApprovals {
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	return &RedisApprovals{c: c, prefix: o.Prefix + "approvals:", poll: o.Poll}
}

// validApprovalID reports whether id may be an approval's id, 1 to 64 of
// [A-Za-z0-9_-]: it is part of key names, and comes from HTTP requests.
// (Not a regular expression: {1,64} compiles to 64 copies of the class at
// the start of every program that links the package.)
func validApprovalID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// keys are the index, the entry, the answer and the channel of id.
func (q *RedisApprovals) keys(id string) []string {
	return []string{q.prefix + "index", q.prefix + "entry:" + id, q.prefix + "answer:" + id, q.prefix + "answered:" + id}
}

func (q *RedisApprovals) check(id string) error {
	if !validApprovalID(id) {
		return fmt.Errorf("store: approval id %q: %w", id, fs.ErrNotExist)
	}
	return nil
}

// putScript stores the entry ARGV[2] under id ARGV[1] for ARGV[3] ms and
// indexes it by its expiry, dropping expired ids from the index.
var putScript = lazyScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
return 1
`)

// takeScript returns the answer of an entry, if there is one, and then
// (or always, with ARGV[1] = "withdraw") removes the entry.
var takeScript = lazyScript(`
local a = redis.call('GET', KEYS[3])
if a or ARGV[1] == 'withdraw' then
  redis.call('DEL', KEYS[2])
  redis.call('ZREM', KEYS[1], ARGV[2])
end
return a
`)

// answerScript stores the answer ARGV[1] of a waiting entry, once, and
// publishes it: 2 answered already, 0 nothing waits, 1 answered now.
var answerScript = lazyScript(`
if redis.call('EXISTS', KEYS[3]) == 1 then return 2 end
local ttl = redis.call('PTTL', KEYS[2])
if ttl < 0 then return 0 end
redis.call('SET', KEYS[3], ARGV[1], 'PX', math.max(ttl, 1000))
redis.call('PUBLISH', KEYS[4], ARGV[1])
return 1
`)

// listScript returns the entries of the index that still wait.
var listScript = lazyScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local out = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local e = redis.call('GET', ARGV[1] .. id)
  if e then out[#out + 1] = e else redis.call('ZREM', KEYS[1], id) end
end
return out
`)

// Wait implements policy.ApprovalQueue. It subscribes to the entry's
// channel before the entry can be seen, so no answer is published unheard;
// a failed poll (Redis unreachable) ends the wait with its error.
func (q *RedisApprovals) Wait(ctx context.Context, id string, entry []byte, ttl time.Duration) ([]byte, error) {
	if !validApprovalID(id) {
		return nil, fmt.Errorf("store: approval id %q is not [A-Za-z0-9_-]{1,64}", id)
	}
	keys := q.keys(id)
	sub := q.c.Subscribe(ctx, keys[3])
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		return nil, fmt.Errorf("store: redis: %w", err)
	}
	msgs := sub.Channel()
	put, err := putScript().Run(ctx, q.c, keys, id, entry, max(1, ttl.Milliseconds())).Int()
	if err != nil {
		return nil, fmt.Errorf("store: redis: %w", err)
	}
	if put == 0 {
		return nil, fmt.Errorf("store: an approval with id %q exists already: %w", id, fs.ErrExist)
	}
	timer := time.NewTimer(ttl)
	defer timer.Stop()
	tick := time.NewTicker(q.poll)
	defer tick.Stop()
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				msgs = nil // polling goes on
				continue
			}
			// The stored answer is the one that counts; the message says
			// it is there.
			if a, err := q.take(ctx, keys, id, false); err != nil || a != nil {
				if a == nil {
					a = []byte(m.Payload)
				}
				return a, nil
			}
		case <-tick.C:
			a, err := q.take(ctx, keys, id, false)
			if err != nil {
				q.withdraw(keys, id)
				return nil, fmt.Errorf("store: redis: %w", err)
			}
			if a != nil {
				return a, nil
			}
		case <-ctx.Done():
			if a, _ := q.withdraw(keys, id); a != nil {
				return a, nil // answered just as the wait ended
			}
			return nil, ctx.Err()
		case <-timer.C:
			if a, _ := q.withdraw(keys, id); a != nil {
				return a, nil
			}
			return nil, fmt.Errorf("store: no answer within %s: %w", ttl, context.DeadlineExceeded)
		}
	}
}

// take returns the entry's answer, removing the entry, or nil when it has
// none yet.
func (q *RedisApprovals) take(ctx context.Context, keys []string, id string, withdraw bool) ([]byte, error) {
	mode := "take"
	if withdraw {
		mode = "withdraw"
	}
	a, err := takeScript().Run(ctx, q.c, keys, mode, id).Text()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []byte(a), nil
}

// withdraw removes the entry of a wait that ended, on a context of its
// own (the wait's has ended): an answer that came meanwhile is returned.
// Should Redis not answer, the entry expires with its TTL.
func (q *RedisApprovals) withdraw(keys []string, id string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return q.take(ctx, keys, id, true)
}

// List implements policy.ApprovalQueue.
func (q *RedisApprovals) List(ctx context.Context) ([][]byte, error) {
	keys := q.keys("")
	r, err := listScript().Run(ctx, q.c, keys[:1], q.prefix+"entry:").StringSlice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("store: redis: %w", err)
	}
	out := make([][]byte, len(r))
	for i, e := range r {
		out[i] = []byte(e)
	}
	return out, nil
}

// Get implements policy.ApprovalQueue.
func (q *RedisApprovals) Get(ctx context.Context, id string) ([]byte, error) {
	if err := q.check(id); err != nil {
		return nil, err
	}
	keys := q.keys(id)
	r, err := q.c.MGet(ctx, keys[2], keys[1]).Result()
	if err != nil {
		return nil, fmt.Errorf("store: redis: %w", err)
	}
	if r[0] != nil {
		return nil, fmt.Errorf("store: approval %q: %w", id, fs.ErrExist)
	}
	e, ok := r[1].(string)
	if !ok {
		return nil, fmt.Errorf("store: approval %q: %w", id, fs.ErrNotExist)
	}
	return []byte(e), nil
}

// Answer implements policy.ApprovalQueue.
func (q *RedisApprovals) Answer(ctx context.Context, id string, answer []byte) error {
	if err := q.check(id); err != nil {
		return err
	}
	n, err := answerScript().Run(ctx, q.c, q.keys(id), answer).Int()
	switch {
	case err != nil:
		return fmt.Errorf("store: redis: %w", err)
	case n == 2:
		return fmt.Errorf("store: approval %q was answered already: %w", id, fs.ErrExist)
	case n == 0:
		return fmt.Errorf("store: approval %q: %w", id, fs.ErrNotExist)
	}
	return nil
}

// RedisOnce remembers ids in Redis for a while (it implements
// policy.OnceStore): the first replica to present an id gets true, every
// later one, on any replica, false until the id's TTL ends. It is what
// makes a sealed approval state usable once (SET NX of its id).
type RedisOnce struct {
	c      redis.UniversalClient
	prefix string
}

// NewRedisOnce returns the store over the client c (which it does not
// close); prefix starts every key.
func NewRedisOnce(c redis.UniversalClient, prefix string) *RedisOnce {
	return &RedisOnce{c: c, prefix: prefix + "once:"}
}

// First implements policy.OnceStore.
func (o *RedisOnce) First(ctx context.Context, id string, ttl time.Duration) (bool, error) {
	sum := sha256.Sum256([]byte(id))
	ok, err := o.c.SetNX(ctx, o.prefix+hex.EncodeToString(sum[:]), 1, max(ttl, time.Millisecond)).Result()
	if err != nil {
		return false, fmt.Errorf("store: redis: %w", err)
	}
	return ok, nil
}

// RedisBlobs keeps opaque values in Redis, one key each (it implements
// auth.Blobs: the sealed OAuth grants every replica uses).
type RedisBlobs struct {
	c      redis.UniversalClient
	prefix string
}

// NewRedisBlobs returns the store over the client c (which it does not
// close); prefix starts every key.
func NewRedisBlobs(c redis.UniversalClient, prefix string) *RedisBlobs {
	return &RedisBlobs{c: c, prefix: prefix + "oauth:"}
}

// Get returns the value, nil when there is none.
func (b *RedisBlobs) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := b.c.Get(ctx, b.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: redis: %w", err)
	}
	return v, nil
}

// Set stores the value, without expiry.
func (b *RedisBlobs) Set(ctx context.Context, key string, value []byte) error {
	if err := b.c.Set(ctx, b.prefix+key, value, 0).Err(); err != nil {
		return fmt.Errorf("store: redis: %w", err)
	}
	return nil
}

// lockTTL bounds how long a lock is held: a holder that dies frees it
// then (a token refresh takes less: its HTTP client gives up after 30 s).
const lockTTL = 45 * time.Second

// Lock takes the lock named key, shared by every client of the Redis
// server (it implements auth.Locker: one replica at a time refreshes a
// grant), waiting for it until ctx ends. unlock frees it; a holder that
// never calls it holds it lockTTL at most.
func (b *RedisBlobs) Lock(ctx context.Context, key string) (unlock func(), err error) {
	wait := 10 * time.Millisecond
	for {
		unlock, ok, err := tryLock(ctx, b.c, b.prefix+"lock:"+key, lockTTL)
		if err != nil || ok {
			return unlock, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("store: waiting for the lock of a grant: %w", ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// Delete forgets the value.
func (b *RedisBlobs) Delete(ctx context.Context, key string) error {
	if err := b.c.Del(ctx, b.prefix+key).Err(); err != nil {
		return fmt.Errorf("store: redis: %w", err)
	}
	return nil
}
