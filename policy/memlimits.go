package policy

import (
	"context"
	"sync"
	"time"
)

// MemoryLimits is a LimitStore in this process: the Limiters and Breakers
// given one Shared over it decide as replicas sharing a Redis do, and as
// one Limiter with its own limits does; it is the reference the Redis
// store is tested against. The zero value is ready; it is safe for
// concurrent use. Like Redis, it keeps each thing until it no longer
// counts (a history or a streak a window or cool-down after its last
// change, a failure its window, a bucket until it is full again), and
// forgets what expired as it grows.
type MemoryLimits struct {
	mu       sync.Mutex
	calls    map[string]kept[[]past] // by Admission.Calls, oldest first
	failures map[string]kept[[]byte] // by Admission.Failure
	tats     map[string]kept[struct{}]
	streaks  map[string]kept[streak]
	size     int // the size at which to forget next
}

// kept is a value and when it expires.
type kept[T any] struct {
	v     T
	until time.Time
}

func (k kept[T]) live(now time.Time) bool { return !now.After(k.until) }

// Admit implements LimitStore.
func (m *MemoryLimits) Admit(_ context.Context, a Admission) (Verdict, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forget(now)
	if a.Max > 0 {
		if f, ok := m.failures[a.Failure]; ok && f.live(now) {
			return Verdict{Outcome: RepeatsFailure, Result: f.v}, nil
		}
		var calls []past
		if h, ok := m.calls[a.Calls]; ok && h.live(now) {
			calls = h.v
		}
		cut := 0
		for cut < len(calls) && now.Sub(calls[cut].at) > a.Window {
			cut++
		}
		calls = calls[cut:]
		if len(calls) >= a.History {
			calls = calls[len(calls)-a.History+1:]
		}
		m.calls[a.Calls] = kept[[]past]{calls, now.Add(a.Window)}
		same := 0
		for _, c := range calls {
			if c.key == a.Key {
				same++
			}
		}
		if same >= a.Max {
			return Verdict{Outcome: Repeated, N: same}, nil
		}
		if n := cycle(calls, a.Key, a.Cycles); n > 0 {
			return Verdict{Outcome: Cycling, N: n}, nil
		}
		m.calls[a.Calls] = kept[[]past]{append(calls, past{key: a.Key, at: now}), now.Add(a.Window)}
	}
	next := make([]time.Time, len(a.Buckets))
	for i, b := range a.Buckets {
		tat := now
		if t, ok := m.tats[b.Key]; ok && t.until.After(now) {
			tat = t.until
		}
		next[i] = tat.Add(b.Every)
		if early := next[i].Sub(now) - time.Duration(b.Burst)*b.Every; early > 0 {
			return Verdict{Outcome: Limited, N: i, RetryAfter: early}, nil
		}
	}
	for i, b := range a.Buckets {
		m.tats[b.Key] = kept[struct{}]{until: next[i]}
	}
	return Verdict{}, nil
}

// Progressed implements LimitStore.
func (m *MemoryLimits) Progressed(_ context.Context, a Admission) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.calls[a.Calls]
	if !ok {
		return nil
	}
	for i := len(h.v) - 1; i >= 0; i-- {
		if h.v[i].key == a.Key {
			h.v = append(h.v[:i:i], h.v[i+1:]...)
			m.calls[a.Calls] = h
			break
		}
	}
	return nil
}

// Failed implements LimitStore.
func (m *MemoryLimits) Failed(_ context.Context, failure string, result []byte, window time.Duration) error {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forget(now)
	m.failures[failure] = kept[[]byte]{result, now.Add(window)}
	return nil
}

// Streak implements LimitStore.
func (m *MemoryLimits) Streak(_ context.Context, session string) (int, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.streaks[session]; ok && s.live(time.Now()) {
		return s.v.refusals, s.v.last, nil
	}
	return 0, time.Time{}, nil
}

// Refused implements LimitStore.
func (m *MemoryLimits) Refused(_ context.Context, session string, now time.Time, cool time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forget(time.Now())
	s := m.streaks[session]
	if now.Sub(s.v.last) >= cool {
		s.v.refusals = 0
	}
	m.streaks[session] = kept[streak]{streak{s.v.refusals + 1, now}, time.Now().Add(cool)}
	return nil
}

// EndStreak implements LimitStore.
func (m *MemoryLimits) EndStreak(_ context.Context, session string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.streaks, session)
	return nil
}

// Ping implements LimitStore: memory always answers.
func (m *MemoryLimits) Ping(context.Context) error { return nil }

// forget drops what expired once the maps together hold twice as many
// entries as after the last time (and at least maxSessions) (m.mu held).
func (m *MemoryLimits) forget(now time.Time) {
	if m.calls == nil {
		m.calls, m.failures, m.tats, m.streaks = map[string]kept[[]past]{}, map[string]kept[[]byte]{}, map[string]kept[struct{}]{}, map[string]kept[streak]{}
	}
	if m.len() < max(m.size, maxSessions) {
		return
	}
	expire(m.calls, now)
	expire(m.failures, now)
	expire(m.tats, now)
	expire(m.streaks, now)
	m.size = 2 * m.len()
}

func (m *MemoryLimits) len() int {
	return len(m.calls) + len(m.failures) + len(m.tats) + len(m.streaks)
}

func expire[T any](m map[string]kept[T], now time.Time) {
	for k, v := range m {
		if !v.live(now) {
			delete(m, k)
		}
	}
}
