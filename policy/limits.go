package policy

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/time/rate"

	"github.com/toolgate/toolgate/tool"
)

// Rate is a token bucket: Burst calls at once, refilled at PerSecond.
type Rate struct {
	PerSecond float64 `yaml:"per_second" json:"per_second"`
	Burst     int     `yaml:"burst" json:"burst"`
}

func (r Rate) set() bool { return r.Burst > 0 }

// describe says the rate as a person reads it: "burst 3, then 0.001/s".
func (r Rate) describe() string {
	if !r.set() {
		return "no limit"
	}
	return fmt.Sprintf("burst %d, then %g/s", r.Burst, r.PerSecond)
}

// LimitConfig says how often and how many calls may run.
type LimitConfig struct {
	// Tools maps tool-name globs (path.Match syntax) to a rate per tool,
	// decided by the one glob rule (GlobMap): a tool's own name, else the
	// most specific matching glob, else "*". A zero Rate there means no
	// bucket for the tools it decides.
	Tools map[string]Rate
	// Principal is the rate of each principal (caller) across all tools.
	Principal Rate
	// ToolPrincipal maps tool-name globs to a rate per tool and principal,
	// decided as Tools is.
	ToolPrincipal map[string]Rate
	// Concurrency caps the calls of one tool running at once (0: no cap).
	// A call over the cap waits for a free slot as long as its context allows.
	Concurrency int
	// Loop guards against a model repeating itself.
	Loop LoopConfig
	// Shared, when set, keeps the buckets and the loop guard in Redis,
	// shared with the other replicas' Limiters; the concurrency cap stays
	// per process.
	Shared *Shared
}

// LoopConfig is the loop guard: per session, the same call (tool and
// canonical arguments) more than Max times within Window is refused, so is
// a cycle of two or three calls repeated Cycles times in a row, and a call
// identical to one that just failed (not retryably) gets that failure again
// without running.
type LoopConfig struct {
	Max    int           // 0: 5 (calls 1-5 run, the 6th identical one is refused)
	Window time.Duration // 0: 1 minute
	Cycles int           // 0: 3
	Off    bool          // disables the loop guard
}

// Limiter enforces a LimitConfig. It is safe for concurrent use and
// satisfies the engine's Limiter interface.
type Limiter struct {
	cfg     LimitConfig
	tools   GlobMap[Rate] // cfg.Tools
	toolsP  GlobMap[Rate] // cfg.ToolPrincipal
	invalid *tool.Error   // set when cfg does not Check: every call is refused

	// taking serializes take: a token given back (CancelAt) is restored in
	// full only when no other reservation came between, so "all buckets or
	// none" holds under concurrency.
	taking sync.Mutex

	mu       sync.Mutex
	buckets  map[string]*rate.Limiter // local buckets by Redis key
	slots    map[string]chan struct{}
	sessions map[string]*history
}

// Check reports a glob map of cfg that the glob rule refuses (two globs
// equally specific for one name). A policy file is checked when it is
// loaded.
func (cfg LimitConfig) Check() error {
	_, _, err := cfg.globMaps()
	return err
}

func (cfg LimitConfig) globMaps() (tools, toolsP GlobMap[Rate], err error) {
	if tools, err = NewGlobMap("limits.tools", cfg.Tools); err != nil {
		return
	}
	toolsP, err = NewGlobMap("limits.tool_principal", cfg.ToolPrincipal)
	return
}

// NewLimiter returns a Limiter for cfg. A cfg that does not Check gives a
// Limiter that refuses every call with the reason: it fails closed.
func NewLimiter(cfg LimitConfig) *Limiter {
	if cfg.Loop.Max <= 0 {
		// Five identical calls in a window run; the sixth is a loop (the
		// attack corpus's rule, and Hermes's): a sixth identical read
		// brings nothing the first five did not.
		cfg.Loop.Max = 5
	}
	if cfg.Loop.Window <= 0 {
		cfg.Loop.Window = time.Minute
	}
	if cfg.Loop.Cycles <= 0 {
		cfg.Loop.Cycles = 3
	}
	l := &Limiter{cfg: cfg, buckets: map[string]*rate.Limiter{}, slots: map[string]chan struct{}{}, sessions: map[string]*history{}}
	var err error
	if l.tools, l.toolsP, err = cfg.globMaps(); err != nil {
		l.invalid = tool.Errorf(tool.Internal, "the rate limits are misconfigured: %v", err).
			WithSuggestion("tell the operator: the policy's limits must be fixed before any tool runs")
	}
	return l
}

// Acquire admits a call or refuses it with rate_limited or loop_detected.
// The returned release must be called with the call's result.
func (l *Limiter) Acquire(ctx context.Context, call tool.Call, def tool.Definition) (func(tool.Result), *tool.Error) {
	return l.AcquireArgs(ctx, call, def, nil)
}

// AcquireArgs is Acquire for a call whose arguments the caller parsed
// already (as schema.ParseArguments does; nil: parse call.Args), so that
// the loop guard does not parse them again.
func (l *Limiter) AcquireArgs(ctx context.Context, call tool.Call, def tool.Definition, args map[string]any) (func(tool.Result), *tool.Error) {
	a, err := l.AcquireTicket(ctx, call, def, args)
	if err != nil {
		return nil, err
	}
	return a.Release, nil
}

// Ticket is a call that a Limiter admitted: its Release must be called
// once, with the call's result. It is a value, so that a caller that
// knows the Limiter (the engine) keeps it without allocating a release
// func.
type Ticket struct {
	l      *Limiter
	slot   chan struct{} // the concurrency slot taken, or nil
	shared *Shared       // the Shared that admitted the call, or nil
	call   tool.Call     // for shared's record
	key    string        // the loop guard's key of the call
	h      *history      // the loop guard's history of the caller, for the record
}

// Release gives back what the call took and records its result for the
// loop guard.
func (t Ticket) Release(res tool.Result) {
	if t.slot != nil {
		<-t.slot
	}
	switch {
	case t.l.cfg.Loop.Off:
	case t.shared != nil:
		t.l.sharedRecord(t.shared, t.call, t.key, res)
	default:
		t.l.record(t.h, t.key, res)
	}
}

// AcquireTicket is AcquireArgs that returns its release as a Ticket.
func (l *Limiter) AcquireTicket(ctx context.Context, call tool.Call, def tool.Definition, args map[string]any) (Ticket, *tool.Error) {
	if l.invalid != nil {
		return Ticket{}, l.invalid
	}
	// The loop guard's key is written on the stack (keyBytes) and made a
	// string only where it is kept: a key the caller's history already
	// holds is that history's string (checkLoop), so that repeating a call
	// allocates no key.
	var keyRoom [256]byte
	var keyBytes []byte
	var key string
	if !l.cfg.Loop.Off {
		keyBytes = appendCallKey(keyRoom[:0], call, args)
	}
	buckets := l.bucketsOf(call, def)
	shared := l.shared()
	if shared != nil {
		if !l.cfg.Loop.Off {
			key = string(keyBytes)
		}
		refusal, err := l.sharedAdmit(ctx, shared, call, buckets, key)
		if err == nil {
			shared.answered()
		} else if refusal = shared.failed(ctx, err); refusal == nil {
			shared = nil // on_error: allow, the local guard and buckets below
		}
		if refusal != nil {
			return Ticket{}, refusal
		}
	}
	var h *history // the loop guard's history of the caller, for the record
	if shared == nil {
		if !l.cfg.Loop.Off {
			// call.Caller() written on the stack, for the look-up alone:
			// the history keeps a copy, made when it is made.
			var room [128]byte
			b := append(append(append(room[:0], call.Principal...), 0), call.Session...)
			var err *tool.Error
			if h, key, err = l.checkLoop(unsafe.String(unsafe.SliceData(b), len(b)), unsafe.String(unsafe.SliceData(keyBytes), len(keyBytes))); err != nil {
				return Ticket{}, err
			}
		}
		if err := l.take(buckets); err != nil {
			return Ticket{}, err
		}
	}
	slot := l.slot(def.Name)
	if slot != nil {
		select {
		case slot <- struct{}{}:
		case <-ctx.Done():
			return Ticket{}, tool.Errorf(tool.RateLimited, "%s already runs %d calls at once and this call's time ran out waiting", def.Name, l.cfg.Concurrency).
				WithRetry(time.Second).WithSuggestion("wait for the running calls to finish, then retry")
		}
	}
	return Ticket{l: l, slot: slot, shared: shared, call: call, key: key, h: h}, nil
}

// shared returns the Shared in Redis, or nil when the limits are local.
func (l *Limiter) shared() *Shared {
	if l.cfg.Shared == nil || l.cfg.Shared.Store == nil {
		return nil
	}
	return l.cfg.Shared
}

// bucketsOf returns the buckets a call takes a token from: its tool's,
// its principal's, and its tool-and-principal's, those the config sets.
func (l *Limiter) bucketsOf(call tool.Call, def tool.Definition) []bucket {
	var out []bucket
	who := call.Principal
	if who == "" {
		who = "this caller"
	}
	if r, _, _ := l.tools.Lookup(def.Name); r.set() {
		out = append(out, bucket{l.cfg.Shared.key("rate:tool", def.Name), r, def.Name + " is called too often"})
	}
	if l.cfg.Principal.set() {
		out = append(out, bucket{l.cfg.Shared.key("rate:principal", call.Principal), l.cfg.Principal, who + " makes calls too often"})
	}
	if r, _, _ := l.toolsP.Lookup(def.Name); r.set() {
		out = append(out, bucket{l.cfg.Shared.key("rate:tool-principal", def.Name+"\x00"+call.Principal), r, who + " calls " + def.Name + " too often"})
	}
	return out
}

// take spends a token of every bucket, or of none.
func (l *Limiter) take(buckets []bucket) *tool.Error {
	l.taking.Lock()
	defer l.taking.Unlock()
	now := time.Now()
	taken := make([]*rate.Reservation, 0, len(buckets))
	for _, b := range buckets {
		r := l.local(b).ReserveN(now, 1)
		if d := r.DelayFrom(now); !r.OK() || d > 0 {
			r.CancelAt(now)
			for _, t := range taken {
				t.CancelAt(now)
			}
			return limited(b.who, d)
		}
		taken = append(taken, r)
	}
	return nil
}

func limited(what string, d time.Duration) *tool.Error {
	if d <= 0 {
		d = time.Second
	}
	return tool.Errorf(tool.RateLimited, "%s: the rate limit is reached", what).WithRetry(d).
		WithSuggestion("wait %s before calling again, and batch work into fewer calls where you can", d.Round(time.Millisecond))
}

// local returns this process's bucket b.
func (l *Limiter) local(b bucket) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.buckets[b.key]
	if !ok {
		lim = rate.NewLimiter(rate.Limit(b.rate.PerSecond), b.rate.Burst)
		l.buckets[b.key] = lim
	}
	return lim
}

func (l *Limiter) slot(name string) chan struct{} {
	if l.cfg.Concurrency <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.slots[name]
	if !ok {
		s = make(chan struct{}, l.cfg.Concurrency)
		l.slots[name] = s
	}
	return s
}

// history is one session's recent calls.
type history struct {
	caller  string           // its key in Limiter.sessions
	dropped bool             // no longer in Limiter.sessions (l.mu)
	calls   []past           // oldest first, within the window
	keys    map[string]int32 // the index in ents of each key of calls
	ents    []keyCount       // the keys of calls and how many calls have each; a free one has n 0
	free    []int32          // the free indexes of ents
	failed  map[string]*past // the last result of each key, when it failed for good
	room    []past           // the array calls is in, from its start (calls is slid along it by forget)
}

// keyCount is a key of a history's calls and how many of them have it.
// A call keeps its key's index (past.ent), so that counting it in and out
// costs no look-up of the key: the loop guard hashes a call's key once.
type keyCount struct {
	key string
	n   int
}

func newHistory(caller string) *history {
	return &history{caller: caller, keys: map[string]int32{}, failed: map[string]*past{}}
}

// entry returns the index in ents of key, made (with n 0) if need be.
func (h *history) entry(key string) int32 {
	if e, ok := h.keys[key]; ok {
		return e
	}
	return h.newEntry(key)
}

// newEntry makes the entry of key, which has none.
func (h *history) newEntry(key string) int32 {
	var e int32
	if n := len(h.free); n > 0 {
		e = h.free[n-1]
		h.free = h.free[:n-1]
		h.ents[e] = keyCount{key: key}
	} else {
		e = int32(len(h.ents))
		h.ents = append(h.ents, keyCount{key: key})
	}
	h.keys[key] = e
	return e
}

// drop counts one call out of entry e, freed when no call has its key.
func (h *history) drop(e int32) {
	if h.ents[e].n--; h.ents[e].n == 0 {
		delete(h.keys, h.ents[e].key)
		h.ents[e] = keyCount{} // holds no forgotten key
		h.free = append(h.free, e)
	}
}

// add appends a call (its key's entry looked up), as push does.
func (h *history) add(p past) {
	p.ent = h.entry(p.key)
	h.push(p)
}

// push appends a call whose ent is its key's entry, forgetting the oldest
// beyond maxHistory. When calls
// has reached the end of its array, having been slid along it by forget,
// and fills at most half of it, they are moved back to its front (the
// rest of it cleared, so that it holds no forgotten call's result) instead
// of appended into a new array: a session calling on at its limit moves
// its calls once per array's worth of calls, not a new array each time.
func (h *history) push(p past) {
	if len(h.calls) == cap(h.calls) && 2*len(h.calls) <= cap(h.room) {
		n := copy(h.room[:cap(h.room)], h.calls)
		clear(h.room[n:cap(h.room)])
		h.calls = h.room[:n]
	}
	grows := len(h.calls) == cap(h.calls)
	h.calls = append(h.calls, p)
	if grows {
		h.room = h.calls[:0]
	}
	h.ents[p.ent].n++
	if n := len(h.calls) - maxHistory; n > 0 {
		h.forget(n)
	}
}

// forget drops the n oldest calls.
func (h *history) forget(n int) {
	for _, c := range h.calls[:n] {
		h.drop(c.ent)
	}
	h.calls = h.calls[n:]
}

type past struct {
	key string
	at  time.Time
	res tool.Result
	ent int32 // in a history's calls: the index of key's entry in its ents
}

// maxHistory bounds the calls remembered per session, maxSessions the
// sessions remembered at once.
const (
	maxHistory  = 256
	maxSessions = 4096
)

// checkLoop refuses a call with key that the loop guard finds looping in
// session, or records it; it returns the session's history (whose caller
// is session, which the caller may have made for this look-up alone).
//
// key is only read (it may be on the caller's stack): what is returned is
// key as the history keeps it, the string of its entry (made when the
// entry was), to be given to record.
func (l *Limiter) checkLoop(session, key string) (*history, string, *tool.Error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.history(session, now)
	kept, err := h.checkKept(l, key, now)
	return h, kept, err
}

// checkKept is check, returning (when it admits the call) key as h keeps
// it: its entry's string, a copy of key made for a new entry. key itself
// is only read.
func (h *history) checkKept(l *Limiter, key string, now time.Time) (string, *tool.Error) {
	// Forget what fell out of the window.
	cut := 0
	for cut < len(h.calls) && now.Sub(h.calls[cut].at) > l.cfg.Loop.Window {
		cut++
	}
	h.forget(cut)
	if len(h.calls) >= maxHistory {
		h.forget(len(h.calls) - maxHistory + 1)
	}

	if f := h.failed[key]; f != nil && now.Sub(f.at) <= l.cfg.Loop.Window {
		return "", repeatedFailure(f.res)
	}
	// key is hashed here once: its entry's index is kept in the call.
	e, known := h.keys[key]
	if known {
		if same := h.ents[e].n; same >= l.cfg.Loop.Max {
			return "", repeated(same, l.cfg.Loop.Window)
		}
	} else if l.cfg.Loop.Max <= 0 {
		return "", repeated(0, l.cfg.Loop.Window)
	}
	if n := cycle(h.calls, key, l.cfg.Loop.Cycles); n > 0 {
		return "", cycling(n, l.cfg.Loop.Cycles)
	}
	var kept string
	if known {
		kept = h.ents[e].key
	} else {
		kept = strings.Clone(key)
		e = h.newEntry(kept)
	}
	h.push(past{key: kept, at: now, ent: e})
	return kept, nil
}

// The loop guard's refusals, the same from local and shared history.

func repeatedFailure(res tool.Result) *tool.Error {
	err := *res.Error
	err.Message = "this exact call just failed and was not run again: " + err.Message
	err.Suggestion = "change the arguments or the approach; repeating the same call gives the same failure"
	return err.WithDetail("repeated_failure", true)
}

func repeated(same int, window time.Duration) *tool.Error {
	return tool.Errorf(tool.LoopDetected, "this exact call was already made %d times in the last %s", same, window).
		WithSuggestion("stop repeating it: use the results you already have, change the approach, or ask the user")
}

func cycling(n, cycles int) *tool.Error {
	return tool.Errorf(tool.LoopDetected, "the last calls repeat a cycle of %d calls %d times", n, cycles).
		WithSuggestion("you are going in circles: stop, summarise what you learned, and change the approach or ask the user")
}

// failedForGood reports whether a result is kept for the loop guard's
// "this exact call just failed": a final failure, not a refusal of its own
// nor a question for approval.
func failedForGood(res tool.Result) bool {
	return res.Error != nil && !res.Error.Retryable && res.Error.Type != tool.LoopDetected && !res.Error.AsksApproval()
}

// Replay adds a call that ran at the given time to its session's history
// in the loop guard, as if this Limiter had admitted it; calls older than
// the loop window are ignored. A program that lives for one call (toolgate
// call) replays its audit log's recent calls, oldest first, so that a
// model repeating a call process after process is still seen looping.
func (l *Limiter) Replay(call tool.Call, at time.Time) {
	if l.cfg.Loop.Off || time.Since(at) > l.cfg.Loop.Window || l.shared() != nil { // shared: Redis remembers
		return
	}
	key := callKey(call, nil)
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.history(call.Caller(), time.Now())
	h.add(past{key: key, at: at})
}

// cycle reports the length (2 or 3) of a cycle that calls followed by key
// would complete for the cycles-th time in a row, or 0. It reads the keys
// in place, newest first, so a call that breaks the cycle (most calls)
// ends the look at once. A cycles larger than the calls remembered can
// never complete (a policy may set one to mean "never"; above 128 a cycle
// of two no longer fits the history): it is 0 at once, before n*cycles
// could overflow the look back. A key equal to the one before it (the same
// call again, which the count of identical calls judges) completes no
// cycle: in a cycle of n distinct keys, two neighbours differ. It is 0
// after one comparison, where the look makes 5*cycles-3 (twelve with the
// default three cycles).
func cycle(calls []past, key string, cycles int) int {
	if cycles > len(calls)+1 {
		return 0
	}
	if cycles >= 1 && len(calls) > 0 && calls[len(calls)-1].key == key {
		return 0
	}
	seq := func(j int) string { // the j-th key of calls followed by key
		if j == len(calls) {
			return key
		}
		return calls[j].key
	}
	for n := 2; n <= 3; n++ {
		start := len(calls) + 1 - n*cycles // of the last n*cycles keys
		if start < 0 {
			continue
		}
		ok := true
		for j := len(calls); j >= start+n && ok; j-- {
			ok = seq(j) == seq(j-n)
		}
		if ok && distinct(seq, start, n) {
			return n
		}
	}
	return 0
}

// distinct reports whether the n keys (two or three) of seq from start
// differ from each other.
func distinct(seq func(int) string, start, n int) bool {
	for i := start; i < start+n; i++ {
		for j := i + 1; j < start+n; j++ {
			if seq(i) == seq(j) {
				return false
			}
		}
	}
	return true
}

// history returns the session's history, made if need be (l.mu held).
func (l *Limiter) history(session string, now time.Time) *history {
	h := l.sessions[session]
	if h == nil {
		if len(l.sessions) >= maxSessions {
			l.forgetIdle(now)
		}
		kept := strings.Clone(session) // session may be the caller's, for the look-up alone
		h = newHistory(kept)
		l.sessions[kept] = h
	}
	return h
}

// forgetIdle drops the sessions with no call in the window, or all of them
// when every session is busy: the guard forgets rather than grow unbounded.
func (l *Limiter) forgetIdle(now time.Time) {
	for id, h := range l.sessions {
		if len(h.calls) == 0 || now.Sub(h.calls[len(h.calls)-1].at) > l.cfg.Loop.Window {
			h.dropped = true
			delete(l.sessions, id)
		}
	}
	if len(l.sessions) >= maxSessions {
		for _, h := range l.sessions {
			h.dropped = true
		}
		clear(l.sessions)
	}
}

// record records a call's result in h, the history that admitted it,
// or, when h has been dropped since, in its caller's history now, if any
// (as a look-up of the caller at the release would).
func (l *Limiter) record(h *history, key string, res tool.Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h.dropped {
		if h = l.sessions[h.caller]; h == nil {
			return
		}
	}
	if failedForGood(res) {
		h.failed[key] = &past{key: key, at: time.Now(), res: res}
	} else {
		delete(h.failed, key)
	}
	if progress, _ := res.Meta[tool.MetaProgress].(bool); progress {
		h.unadd(key) // a read that waited or moved on: progress, not a repeat
	}
}

// unadd takes the latest call with key out of the history.
func (h *history) unadd(key string) {
	for i := len(h.calls) - 1; i >= 0; i-- {
		if h.calls[i].key == key {
			e := h.calls[i].ent
			h.calls = append(h.calls[:i], h.calls[i+1:]...)
			h.drop(e)
			return
		}
	}
}
