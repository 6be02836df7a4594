package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a Store in Redis that several processes share: the Claimer
// beside Memory and Bolt. Keys are hashed under a prefix, so a key's
// bytes never reach a Redis command as anything but a digest.
type Redis struct {
	c      redis.UniversalClient
	prefix string
	owner  string        // this process, in its claims
	lease  time.Duration // how long a claim lives unless renewed

	mu      sync.Mutex
	renewal map[string]context.CancelFunc // claims this process holds
}

// RedisOptions configure NewRedis.
type RedisOptions struct {
	Prefix string // starts every key
	// Lease is how long a claim outlives a process that stopped renewing
	// it (it renews every third of it while its call runs); 0: 10 s.
	Lease time.Duration
}

// NewRedis returns a Store over the client c (which it does not close).
func NewRedis(c redis.UniversalClient, o RedisOptions) *Redis {
	if o.Lease <= 0 {
		o.Lease = 10 * time.Second
	}
	var id [12]byte
	rand.Read(id[:])
	return &Redis{c: c, prefix: o.Prefix + "idem:", owner: hex.EncodeToString(id[:]), lease: o.Lease,
		renewal: map[string]context.CancelFunc{}}
}

// A key holds "r" and a value, or "c" and the owner of a claim; the claim's
// lease is a second key that expires unless its owner renews it.
func (s *Redis) keys(key string) (data, lease string) {
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:])
	return s.prefix + h, s.prefix + "lease:" + h
}

// Get implements Store: only a recorded value is returned, never a claim.
func (s *Redis) Get(ctx context.Context, key string) ([]byte, bool, error) {
	data, _ := s.keys(key)
	v, err := s.c.Get(ctx, data).Bytes()
	if errors.Is(err, redis.Nil) || err == nil && (len(v) == 0 || v[0] != 'r') {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: redis: %w", err)
	}
	return v[1:], true, nil
}

// Put implements Store. A claim this process holds on key ends with it.
func (s *Redis) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	data, lease := s.keys(key)
	s.stopRenewal(key)
	_, err := s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, data, append([]byte{'r'}, value...), ttl)
		p.Del(ctx, lease)
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: redis: %w", err)
	}
	return nil
}

// lazyScript is a Lua script made (its SHA-1 taken) when first run: most
// processes that link the store never talk to Redis.
func lazyScript(src string) func() *redis.Script {
	return sync.OnceValue(func() *redis.Script { return redis.NewScript(src) })
}

// claimScript claims KEYS[1] (the data, kept ARGV[2] ms) with the lease
// KEYS[2] (ARGV[3] ms) for owner ARGV[1], unless the data key exists: then
// it returns it, with whether its lease is live.
var claimScript = lazyScript(`
local v = redis.call('GET', KEYS[1])
if v then return {v, redis.call('EXISTS', KEYS[2])} end
redis.call('SET', KEYS[1], 'c' .. ARGV[1], 'PX', ARGV[2])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[3])
return false
`)

// renewScript extends the lease KEYS[1] by ARGV[2] ms if owner ARGV[1] holds it.
var renewScript = lazyScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`)

// unclaimScript drops the claim of owner ARGV[1] on KEYS[1], and its lease.
var unclaimScript = lazyScript(`
if redis.call('GET', KEYS[1]) == 'c' .. ARGV[1] then redis.call('DEL', KEYS[1], KEYS[2]) end
return 0
`)

// Claim implements Claimer.
func (s *Redis) Claim(ctx context.Context, key string, ttl time.Duration) (ClaimState, []byte, error) {
	data, lease := s.keys(key)
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	r, err := claimScript().Run(ctx, s.c, []string{data, lease}, s.owner, ttl.Milliseconds(), s.lease.Milliseconds()).Slice()
	switch {
	case errors.Is(err, redis.Nil): // claimed
		s.startRenewal(key, lease)
		return Claimed, nil, nil
	case err != nil:
		return 0, nil, fmt.Errorf("store: redis: %w", err)
	case len(r) != 2:
		return 0, nil, fmt.Errorf("store: redis: claim answered %v", r)
	}
	v, _ := r[0].(string)
	live, _ := r[1].(int64)
	switch {
	case len(v) > 0 && v[0] == 'r':
		return Done, []byte(v[1:]), nil
	case live == 1:
		return Held, nil, nil
	}
	return Lapsed, nil, nil
}

// Unclaim implements Claimer.
func (s *Redis) Unclaim(ctx context.Context, key string) error {
	data, lease := s.keys(key)
	s.stopRenewal(key)
	if err := unclaimScript().Run(ctx, s.c, []string{data, lease}, s.owner).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("store: redis: %w", err)
	}
	return nil
}

// startRenewal renews the lease of a claim every third of it until the
// claim ends (Put or Unclaim).
func (s *Redis) startRenewal(key, lease string) {
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	if old := s.renewal[key]; old != nil {
		old()
	}
	s.renewal[key] = cancel
	s.mu.Unlock()
	go func() {
		t := time.NewTicker(s.lease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				renewScript().Run(ctx, s.c, []string{lease}, s.owner, s.lease.Milliseconds())
			}
		}
	}()
}

func (s *Redis) stopRenewal(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cancel := s.renewal[key]; cancel != nil {
		cancel()
		delete(s.renewal, key)
	}
}

// Close implements Store: it stops renewing claims (the client stays open).
func (s *Redis) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, cancel := range s.renewal {
		cancel()
		delete(s.renewal, key)
	}
	return nil
}
