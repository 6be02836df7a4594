package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// LimitStore keeps what the Limiters and Breakers of several replicas
// must agree on: rate-limit buckets, the loop guard's history and
// failures, and the breaker's streaks. MemoryLimits keeps them in this
// process; the store package's RedisLimits in a Redis the replicas share.
// Every name a LimitStore is given is made here of a kind and a digest:
// no argument's bytes reach it.
type LimitStore interface {
	// Admit decides a call in one atomic step: the loop guard over the
	// caller's history (remembering the call when it passes), then one
	// token from each bucket, or from none.
	Admit(ctx context.Context, a Admission) (Verdict, error)
	// Failed keeps a call's failed result under the name of its
	// Admission.Failure for window: meanwhile Admit answers it to an
	// identical call.
	Failed(ctx context.Context, failure string, result []byte, window time.Duration) error
	// Streak returns a session's refusals in a row and when the last was.
	Streak(ctx context.Context, session string) (refusals int, last time.Time, err error)
	// Refused counts a refusal at now in a session's streak; a streak
	// whose last refusal is cool or more before now starts over.
	Refused(ctx context.Context, session string, now time.Time, cool time.Duration) error
	// Progressed takes the latest call of a.Key out of the history
	// a.Calls (of a.History calls at most; the other fields are not
	// used): the call made progress (its result carries
	// tool.MetaProgress: a read that waited or moved on), so it is not a
	// repeat.
	Progressed(ctx context.Context, a Admission) error
	// EndStreak ends a session's streak.
	EndStreak(ctx context.Context, session string) error
	// Ping reports whether the store answers.
	Ping(ctx context.Context) error
}

// Admission is what Admit decides on.
type Admission struct {
	// With Max 0 the loop guard is off and the fields up to History are
	// not used.
	Calls   string        // the name of the caller's history
	Failure string        // the name of a failure of this call (Failed)
	Key     string        // the call's tool and canonical arguments, digested
	Max     int           // identical calls admitted within Window
	Window  time.Duration // how long a call and a failure count
	Cycles  int           // repetitions of a cycle of 2 or 3 calls refused
	History int           // calls remembered per caller (at least 2)
	Buckets []Take
}

// Take is one token from a GCRA bucket: a bucket is the theoretical
// arrival time of its next call; Burst calls may come at once, then one
// every Every.
type Take struct {
	Key   string
	Every time.Duration // microsecond precision
	Burst int
}

// Verdict is Admit's answer.
type Verdict struct {
	Outcome Outcome
	// N is, for Repeated, how many identical calls were made; for Cycling
	// the cycle's length; for Limited the index of the bucket in
	// Admission.Buckets.
	N          int
	Result     []byte        // RepeatsFailure: the failed result Failed kept
	RetryAfter time.Duration // Limited: when the bucket has a token again
}

// Outcome is Admitted, or why Admit refused a call.
type Outcome int

const (
	Admitted       Outcome = iota
	RepeatsFailure         // an identical call failed within the window
	Repeated               // Max identical calls within the window
	Cycling                // the call completes a cycle for the Cycles-th time
	Limited                // a bucket has no token
)

// Shared is the LimitStore in which the Limiters and Breakers of several
// replicas keep what they must agree on, keyed by principal and
// conversation (tool.Call.Caller), and what a call gets while it cannot be
// reached. Give one Shared to the Limiter (LimitConfig.Shared) and the
// Breaker of a process.
//
// While the store cannot be reached, OnError decides: deny (the default)
// refuses calls as unavailable with a retry hint; allow runs them under
// this process's own limits. Either way the outage is logged once, and its
// end too: recovery needs no restart.
type Shared struct {
	Store   LimitStore
	OnError OnError // "" : OnErrorDeny
	Log     *slog.Logger
	// OnOutage, when set, hears of each outage as it starts (down, with
	// the store's error) and as it ends (!down, nil): once per outage, as
	// it is logged. The CLI records both in the audit log.
	OnOutage func(down bool, err error)

	down atomic.Bool
}

// Ping reports whether the store answers.
func (s *Shared) Ping(ctx context.Context) error { return s.Store.Ping(ctx) }

// key names kind's state of id (a tool, principal, caller…), in the store
// or in this process (s may be nil).
func (s *Shared) key(kind, id string) string { return kind + ":" + digest(id) }

func (s *Shared) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// answered notes that the store answered, ending an outage.
func (s *Shared) answered() {
	if s.down.Load() && s.down.CompareAndSwap(true, false) {
		s.log().Info("shared state: the store answers again; limits are shared again")
		if s.OnOutage != nil {
			s.OnOutage(false, nil)
		}
	}
}

// failed notes that the store did not answer and returns the call's error
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
		s.log().Warn("shared state: the store cannot be reached; "+then, "err", err)
		if s.OnOutage != nil {
			s.OnOutage(true, err)
		}
	}
	if allow {
		return nil
	}
	return tool.Errorf(tool.Unavailable, "the shared limits store cannot be reached, so the call's limits cannot be checked: %v", err).
		WithRetry(time.Second).WithSuggestion("retry in a moment; the call was not run")
}

// Degraded reports whether the last exchange with the store failed.
func (s *Shared) Degraded() bool { return s.down.Load() }

// bucket is one token bucket a call takes from.
type bucket struct {
	key  string
	rate Rate
	who  string // what the refusal says is called too often
}

// sharedAdmit checks the loop guard and takes the call's tokens in the
// store. A nil *tool.Error and a nil error admit the call; a non-nil error
// is the store's.
func (l *Limiter) sharedAdmit(ctx context.Context, s *Shared, call tool.Call, buckets []bucket, key string) (*tool.Error, error) {
	loop := l.cfg.Loop
	a := Admission{Buckets: make([]Take, 0, len(buckets))}
	if !loop.Off {
		a.Calls, a.Failure, a.Key = s.key("loop", call.Caller()), failure(s, call, key), digest(key)
		a.Max, a.Window, a.Cycles, a.History = loop.Max, loop.Window, loop.Cycles, maxHistory
	}
	for _, b := range buckets {
		every := int64(1e12) // a rate of 0 never refills (within 11 days)
		if b.rate.PerSecond > 1e-6 {
			every = max(1, int64(1e6/b.rate.PerSecond))
		}
		a.Buckets = append(a.Buckets, Take{Key: b.key, Every: time.Duration(every) * time.Microsecond, Burst: b.rate.Burst})
	}
	v, err := s.Store.Admit(ctx, a)
	if err != nil {
		return nil, err
	}
	switch v.Outcome {
	case Admitted:
		return nil, nil
	case RepeatsFailure:
		var res tool.Result
		if json.Unmarshal(v.Result, &res) != nil || res.Error == nil {
			return nil, errors.New("an unreadable failure in the loop guard's history")
		}
		return repeatedFailure(res), nil
	case Repeated:
		return repeated(v.N, loop.Window), nil
	case Cycling:
		return cycling(v.N, loop.Cycles), nil
	case Limited:
		if v.N < 0 || v.N >= len(buckets) {
			return nil, fmt.Errorf("the limits store refused bucket %d of %d", v.N+1, len(buckets))
		}
		return limited(buckets[v.N].who, v.RetryAfter), nil
	}
	return nil, fmt.Errorf("the limits store answered %+v", v)
}

// sharedRecord keeps a call's failure for the loop guard, and takes a call
// that made progress out of the history. Any other call costs no round trip: the admission found no live failure of its
// key (or it would have been refused). (Locally a success also forgets a
// failure an identical call made meanwhile; here that failure stays for
// the window: the stricter of the two.)
func (l *Limiter) sharedRecord(s *Shared, call tool.Call, key string, res tool.Result) {
	ctx := context.Background() // bounded by the store's timeouts
	if progress, _ := res.Meta[tool.MetaProgress].(bool); progress {
		a := Admission{Calls: s.key("loop", call.Caller()), Key: digest(key), History: maxHistory}
		if err := s.Store.Progressed(ctx, a); err != nil {
			s.failed(ctx, err)
			return
		}
		s.answered()
	}
	if !failedForGood(res) {
		return
	}
	b, err := json.Marshal(res)
	if err != nil {
		return
	}
	if err := s.Store.Failed(ctx, failure(s, call, key), b, l.cfg.Loop.Window); err != nil {
		s.failed(ctx, err)
		return
	}
	s.answered()
}

// failure names the failure of a caller's call key.
func failure(s *Shared, call tool.Call, key string) string {
	return s.key("failed", call.Caller()) + ":" + digest(key)
}

// digest is a name's fixed-size form in the store.
func digest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}

// sharedStreak returns the session's streak from the store.
func (b *Breaker) sharedStreak(ctx context.Context, s *Shared, session string) (streak, error) {
	n, last, err := s.Store.Streak(ctx, s.key("breaker", session))
	return streak{refusals: n, last: last}, err
}

// sharedRecord counts a refusal in the store, or ends the streak.
func (b *Breaker) sharedRecord(ctx context.Context, s *Shared, session string, refused bool, now time.Time, cool time.Duration) error {
	k := s.key("breaker", session)
	if !refused {
		return s.Store.EndStreak(ctx, k)
	}
	return s.Store.Refused(ctx, k, now, cool)
}
