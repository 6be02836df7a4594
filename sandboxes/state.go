package sandboxes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Entry is what a State keeps of one sandbox: where it answers, when it
// was made and last called, and whether the reaper deleted it (then the
// next call of its key makes it anew and says so).
type Entry struct {
	ID       string
	Endpoint string
	Created  time.Time
	Last     time.Time
	Gone     bool
}

// State keeps the mapping of sandbox ids (each the hash of a key
// (principal, conversation)) to their sandboxes, their last use, the lease
// under which one replica makes a sandbox, and the reaper's lock: in Redis
// (NewRedisState), so that every replica sees the same, or in one
// process's memory (NewMemoryState).
type State interface {
	// Get returns the entry of id; ok is false when there is none.
	Get(ctx context.Context, id string) (e Entry, ok bool, err error)
	// Put writes the entry of e.ID (its Last is the time of its last use).
	Put(ctx context.Context, e Entry) error
	// Touch records a use of id at t.
	Touch(ctx context.Context, id string, t time.Time) error
	// Idle returns the entries not gone whose last use is before t.
	Idle(ctx context.Context, t time.Time) ([]Entry, error)
	// Lock takes the lock name for ttl unless another holds it: ok says
	// whether it was taken, release gives it back (a no-op once ttl has
	// passed and another holds it).
	Lock(ctx context.Context, name string, ttl time.Duration) (release func(), ok bool, err error)
}

// NewMemoryState is a State in this process's memory (no state.redis: one
// replica).
func NewMemoryState() State {
	return &memoryState{entries: map[string]Entry{}, locks: map[string]time.Time{}}
}

type memoryState struct {
	mu      sync.Mutex
	entries map[string]Entry
	locks   map[string]time.Time // name → until
}

func (m *memoryState) Get(_ context.Context, id string) (Entry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[id]
	return e, ok, nil
}

func (m *memoryState) Put(_ context.Context, e Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries[e.ID] = e
	return nil
}

func (m *memoryState) Touch(_ context.Context, id string, t time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[id]; ok && t.After(e.Last) {
		e.Last = t
		m.entries[id] = e
	}
	return nil
}

func (m *memoryState) Idle(_ context.Context, t time.Time) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Entry
	for _, e := range m.entries {
		if !e.Gone && e.Last.Before(t) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (m *memoryState) Lock(_ context.Context, name string, ttl time.Duration) (func(), bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if until, held := m.locks[name]; held && now.Before(until) {
		return nil, false, nil
	}
	until := now.Add(ttl)
	m.locks[name] = until
	return func() {
		m.mu.Lock()
		if m.locks[name] == until {
			delete(m.locks, name)
		}
		m.mu.Unlock()
	}, true, nil
}

// NewRedisState is a State in Redis, its keys starting with prefix: a hash
// PREFIX sandbox:ID per sandbox (endpoint, created, last, gone), a sorted
// set PREFIX sandboxes:last of ids by last use (the reaper's scan), and
// locks PREFIX sandbox-lock:NAME.
func NewRedisState(rc *redis.Client, prefix string) State {
	return &redisState{rc: rc, prefix: prefix}
}

type redisState struct {
	rc     *redis.Client
	prefix string
}

func (r *redisState) key(id string) string { return r.prefix + "sandbox:" + id }
func (r *redisState) byLast() string       { return r.prefix + "sandboxes:last" }

func (r *redisState) Get(ctx context.Context, id string) (Entry, bool, error) {
	h, err := r.rc.HGetAll(ctx, r.key(id)).Result()
	if err != nil || len(h) == 0 {
		return Entry{}, false, err
	}
	return entry(id, h), true, nil
}

func entry(id string, h map[string]string) Entry {
	ms := func(k string) time.Time {
		n, _ := strconv.ParseInt(h[k], 10, 64)
		return time.UnixMilli(n)
	}
	return Entry{ID: id, Endpoint: h["endpoint"], Created: ms("created"), Last: ms("last"), Gone: h["gone"] == "1"}
}

func (r *redisState) Put(ctx context.Context, e Entry) error {
	gone := "0"
	if e.Gone {
		gone = "1"
	}
	_, err := r.rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, r.key(e.ID), "endpoint", e.Endpoint, "created", e.Created.UnixMilli(), "last", e.Last.UnixMilli(), "gone", gone)
		if e.Gone {
			p.ZRem(ctx, r.byLast(), e.ID)
		} else {
			p.ZAdd(ctx, r.byLast(), redis.Z{Score: float64(e.Last.UnixMilli()), Member: e.ID})
		}
		return nil
	})
	return err
}

// touchScript moves the last use of an entry that exists and is not gone
// forward (never back: replicas' touches may arrive out of order).
var touchScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'gone') ~= '0' then return 0 end
local last = tonumber(redis.call('HGET', KEYS[1], 'last') or '0')
if tonumber(ARGV[1]) > last then
  redis.call('HSET', KEYS[1], 'last', ARGV[1])
  redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
end
return 1`)

func (r *redisState) Touch(ctx context.Context, id string, t time.Time) error {
	return touchScript.Run(ctx, r.rc, []string{r.key(id), r.byLast()}, t.UnixMilli(), id).Err()
}

func (r *redisState) Idle(ctx context.Context, t time.Time) ([]Entry, error) {
	ids, err := r.rc.ZRangeByScore(ctx, r.byLast(), &redis.ZRangeBy{Min: "-inf", Max: "(" + strconv.FormatInt(t.UnixMilli(), 10)}).Result()
	if err != nil {
		return nil, err
	}
	var out []Entry
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

// unlockScript deletes a lock only while it holds this holder's token.
var unlockScript = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

func (r *redisState) Lock(ctx context.Context, name string, ttl time.Duration) (func(), bool, error) {
	var b [16]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	key := r.prefix + "sandbox-lock:" + name
	ok, err := r.rc.SetNX(ctx, key, token, ttl).Result()
	if err != nil || !ok {
		return nil, false, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		unlockScript.Run(ctx, r.rc, []string{key}, token)
	}, true, nil
}

// errState marks an error of the State (Redis unreachable): the call is
// unavailable, never run elsewhere.
var errState = errors.New("the sandbox mapping (state.redis) cannot be reached")
