package store

import (
	"context"
	"sync"
	"time"
)

// Store is a key-value store with expiry.
type Store interface {
	// Get returns the value of key, if present and not expired.
	Get(ctx context.Context, key string) (value []byte, ok bool, err error)
	// Put stores value under key for ttl (0: no expiry).
	Put(ctx context.Context, key string, value []byte, ttl time.Duration) error
	Close() error
}

// Memory is a Store in the process's memory.
type Memory struct {
	mu sync.Mutex
	m  map[string]entry
}

type entry struct {
	value   []byte
	expires time.Time // zero: never
}

func (e entry) live(now time.Time) bool { return e.expires.IsZero() || now.Before(e.expires) }

// NewMemory returns an empty Memory store.
func NewMemory() *Memory { return &Memory{m: map[string]entry{}} }

// Get implements Store.
func (s *Memory) Get(_ context.Context, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	if !ok || !e.live(time.Now()) {
		delete(s.m, key)
		return nil, false, nil
	}
	return e.value, true, nil
}

// Put implements Store.
func (s *Memory) Put(_ context.Context, key string, value []byte, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := entry{value: append([]byte(nil), value...)}
	if ttl > 0 {
		e.expires = time.Now().Add(ttl)
	}
	s.m[key] = e
	return nil
}

// Close implements Store.
func (s *Memory) Close() error { return nil }

// A Claimer is a Store that several processes share, where a process
// claims a key before the call it stands for runs, so that the call runs
// once among them all.
type Claimer interface {
	Store
	// Claim claims key for this process, its entry kept for ttl, unless
	// the key is taken: then it says by what (another process's live
	// claim, a recorded value, or a claim whose owner stopped without
	// one). A claim ends with Put (the value) or Unclaim; while it lasts,
	// the claimer keeps it alive.
	Claim(ctx context.Context, key string, ttl time.Duration) (ClaimState, []byte, error)
	// Unclaim drops this process's claim on key, if it still holds it.
	Unclaim(ctx context.Context, key string) error
}

// ClaimState is what Claim found.
type ClaimState int

const (
	Claimed ClaimState = iota // the key is this process's now
	Held                      // another process's claim is live
	Done                      // a value is recorded (returned with it)
	Lapsed                    // a claim's owner stopped without recording a value
)
