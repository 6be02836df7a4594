package policy

import (
	"context"
	"sync"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// Breaker is the denial circuit breaker. A model whose calls are refused
// again and again (by the policy or by its user) is either lost or being
// steered by an injection; after Threshold refusals in a row in a session
// the breaker opens, and until Cooldown has passed since the last refusal
// every call of the session that could change something (any level above
// read, or any call the policy does not simply allow) is refused at once,
// with circuit_open, without asking anyone. Reads the policy allows still
// run, so the model can look and report. A call above read level that is
// allowed and runs closes the streak. It is safe for concurrent use.
type Breaker struct {
	Threshold int           // refusals in a row that open it; 0: 3
	Cooldown  time.Duration // how long it stays open after the last refusal; 0: 1 minute
	// Shared, when set, keeps the streaks in Redis, shared with the other
	// replicas' Breakers. While Redis cannot be reached the breaker counts
	// in this process (a Limiter with the same Shared refuses the calls
	// under on_error: deny).
	Shared *Shared

	mu       sync.Mutex
	sessions map[string]*streak
}

// maxStreaks is how many sessions' streaks are kept before those that
// cooled down are dropped.
const maxStreaks = 1024

type streak struct {
	refusals int
	last     time.Time
}

func (b *Breaker) limits() (int, time.Duration) {
	n, d := b.Threshold, b.Cooldown
	if n <= 0 {
		n = 3
	}
	if d <= 0 {
		d = time.Minute
	}
	return n, d
}

// Open reports whether the session's breaker is open at now for a call of
// the given level and policy effect, and how many refusals in a row opened it.
func (b *Breaker) Open(session string, level tool.Level, effect Effect, now time.Time) (int, bool) {
	if !b.Guards(level, effect) {
		return 0, false
	}
	n, cool := b.limits()
	var s *streak
	if sh := b.shared(); sh != nil {
		ctx := context.Background() // bounded by the client's timeouts
		st, err := b.sharedStreak(ctx, sh, session)
		if err == nil {
			sh.answered()
			s = &st
		} else {
			sh.failed(ctx, err)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s == nil {
		s = b.sessions[session]
	}
	if s == nil || s.refusals < n || now.Sub(s.last) >= cool {
		return 0, false
	}
	return s.refusals, true
}

// Guards reports whether Open looks at the session for a call of the
// given level and policy effect: false for a read the policy allows,
// which Open lets pass whatever the session's streak. A caller may skip
// Open (and making its session's key) when it is false.
func (b *Breaker) Guards(level tool.Level, effect Effect) bool {
	return level != tool.LevelRead || effect != Allow
}

// Counts reports whether Record changes the session's streak for a call of
// the given level that was refused or not: false for a read that was not
// refused, which leaves it as it is. A caller may skip Record (and making
// its session's key) when it is false.
func (b *Breaker) Counts(level tool.Level, refused bool) bool {
	return refused || level != tool.LevelRead
}

func (b *Breaker) shared() *Shared {
	if b.Shared == nil || b.Shared.Store == nil {
		return nil
	}
	return b.Shared
}

// Record counts a call's end for the streak: refused is a policy denial,
// a refused approval or the breaker's own refusal; a call above read level
// that ran (whatever its result) ends the streak; reads leave it as it is.
func (b *Breaker) Record(session string, level tool.Level, refused bool, now time.Time) {
	if !b.Counts(level, refused) {
		return
	}
	_, cool := b.limits()
	if sh := b.shared(); sh != nil {
		ctx := context.Background() // bounded by the client's timeouts
		err := b.sharedRecord(ctx, sh, session, refused, now, cool)
		if err == nil {
			sh.answered()
			return
		}
		sh.failed(ctx, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !refused {
		delete(b.sessions, session)
		return
	}
	if b.sessions == nil {
		b.sessions = map[string]*streak{}
	}
	if len(b.sessions) >= maxStreaks { // forget the streaks that cooled down
		for id, s := range b.sessions {
			if now.Sub(s.last) >= cool {
				delete(b.sessions, id)
			}
		}
	}
	s := b.sessions[session]
	if s == nil || now.Sub(s.last) >= cool { // none yet, or an old one cooled down
		s = &streak{}
		b.sessions[session] = s
	}
	s.refusals, s.last = s.refusals+1, now
}

// Refusal reports whether an error ends a call as a refusal for the
// breaker's streak.
func Refusal(t tool.ErrorType) bool {
	return t == tool.PermissionDenied || t == tool.ApprovalDenied || t == tool.CircuitOpen
}
