package sandboxes

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/toolgate/toolgate/policy"
)

// NewMemoryState is a policy.SandboxMap in this process's memory (no
// state.redis: one replica). The store package's RedisSandboxes is the one
// the replicas share.
func NewMemoryState() policy.SandboxMap {
	return &memoryState{entries: map[string]policy.SandboxEntry{}, locks: map[string]time.Time{}}
}

type memoryState struct {
	mu      sync.Mutex
	entries map[string]policy.SandboxEntry
	locks   map[string]time.Time // name → until
}

func (m *memoryState) Get(_ context.Context, id string) (policy.SandboxEntry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[id]
	return e, ok, nil
}

func (m *memoryState) Put(_ context.Context, e policy.SandboxEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries[e.ID] = e
	return nil
}

func (m *memoryState) Touch(_ context.Context, id string, t time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[id]
	if !ok || e.Gone {
		return false, nil
	}
	if t.After(e.Last) {
		e.Last = t
		m.entries[id] = e
	}
	return true, nil
}

func (m *memoryState) Idle(_ context.Context, t time.Time) ([]policy.SandboxEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []policy.SandboxEntry
	for _, e := range m.entries {
		if !e.Gone && e.Last.Before(t) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (m *memoryState) Retire(_ context.Context, id string, t time.Time) (policy.SandboxEntry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[id]
	if !ok || e.Gone || !e.Last.Before(t) {
		return e, false, nil
	}
	gone := e
	gone.Gone = true
	m.entries[id] = gone
	return e, true, nil
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

// errState marks an error of the map (Redis unreachable): the call is
// unavailable, never run elsewhere.
var errState = errors.New("the sandbox mapping (state.redis) cannot be reached")
