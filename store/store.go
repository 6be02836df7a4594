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
