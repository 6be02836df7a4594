package policy_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/redistest"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// replica is one process's Shared: its own client to the same server.
func replica(t *testing.T, srv *redistest.Server, onError policy.OnError) *policy.Shared {
	r := &policy.RedisState{URL: srv.URL(), Prefix: "test:", OnError: onError}
	s, err := policy.NewShared(r)
	if err != nil {
		t.Fatal(err)
	}
	s.Log = slog.New(slog.DiscardHandler)
	t.Cleanup(func() { s.Close() })
	return s
}

// limiters returns n Limiters of cfg, each a replica with its own client.
func limiters(t *testing.T, srv *redistest.Server, n int, cfg policy.LimitConfig) []*policy.Limiter {
	var out []*policy.Limiter
	for range n {
		c := cfg
		c.Shared = replica(t, srv, policy.OnErrorDeny)
		out = append(out, policy.NewLimiter(c))
	}
	return out
}

// TestSharedBudgetIsExactAcrossReplicas: 64 callers spread over two
// replicas get exactly the budget of every bucket kind, as one process would.
func TestSharedBudgetIsExactAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	slow := func(burst int) policy.Rate { return policy.Rate{PerSecond: 0.001, Burst: burst} }
	for i, tc := range []struct {
		name string
		cfg  policy.LimitConfig
		who  func(i int) string // the principal of caller i
		want int
	}{
		{"tool", policy.LimitConfig{Tools: map[string]policy.Rate{"search_*": slow(37)}}, func(int) string { return "" }, 37},
		{"glob default", policy.LimitConfig{Tools: map[string]policy.Rate{"*": slow(20), "other": slow(1000)}}, func(int) string { return "" }, 20},
		{"principal", policy.LimitConfig{Principal: slow(25)}, func(int) string { return "c3-alice" }, 25},
		{"principal per caller", policy.LimitConfig{Principal: slow(5)}, func(i int) string { return fmt.Sprint("c5-p", i%4) }, 20},
		{"tool and principal", policy.LimitConfig{ToolPrincipal: map[string]policy.Rate{"search_*": slow(6)}}, func(i int) string { return fmt.Sprint("c6-p", i%3) }, 18},
		{"smallest of three", policy.LimitConfig{Tools: map[string]policy.Rate{"*": slow(40)}, Principal: slow(30), ToolPrincipal: map[string]policy.Rate{"*": slow(12)}}, func(int) string { return "c6-bob" }, 12},
		{"tool caps principals", policy.LimitConfig{Tools: map[string]policy.Rate{"*": slow(16)}, Principal: slow(10)}, func(i int) string { return fmt.Sprint("c7-p", i%2) }, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Loop.Off = true
			// Each case its own tool, so that cases do not share buckets.
			def := tool.Definition{Name: fmt.Sprintf("search_%d", i)}
			if got := spend(t, []*policy.Limiter{policy.NewLimiter(tc.cfg)}, def, tc.who); got != tc.want {
				t.Errorf("granted %d by one local limiter, want exactly %d", got, tc.want)
			}
			if got := spend(t, limiters(t, srv, 2, tc.cfg), def, tc.who); got != tc.want {
				t.Errorf("granted %d across two replicas, want exactly %d", got, tc.want)
			}
		})
	}
}

// spend has 64 callers make 4 calls each, spread over ls, and returns how
// many were granted.
func spend(t *testing.T, ls []*policy.Limiter, def tool.Definition, who func(int) string) int {
	var granted atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for j := range 4 {
				call := lcall(def.Name, fmt.Sprintf(`{"q":%d}`, j), fmt.Sprint("s", c), who(c))
				release, err := ls[(c+j)%len(ls)].Acquire(context.Background(), call, def)
				if err != nil {
					if err.Type != tool.RateLimited || !err.Retryable || err.RetryAfter <= 0 {
						t.Errorf("refusal %+v: want rate_limited with retry_after", err)
					}
					continue
				}
				granted.Add(1)
				release(tool.TextResult("ok"))
			}
		}()
	}
	close(start)
	wg.Wait()
	return int(granted.Load())
}

// TestSharedRefusalSpendsNothing: a call refused by the principal's bucket
// spends no token of the tool's, across replicas.
func TestSharedRefusalSpendsNothing(t *testing.T) {
	srv := redistest.Start(t)
	ls := limiters(t, srv, 2, policy.LimitConfig{
		Tools:     map[string]policy.Rate{"*": {PerSecond: 0.001, Burst: 3}},
		Principal: policy.Rate{PerSecond: 0.001, Burst: 2},
		Loop:      policy.LoopConfig{Off: true},
	})
	def := tool.Definition{Name: "t"}
	n := 0
	ok := func(who string) bool {
		n++
		_, err := ls[n%2].Acquire(context.Background(), lcall("t", `{}`, "", who), def)
		return err == nil
	}
	if !ok("alice") || !ok("alice") || ok("alice") || ok("alice") {
		t.Fatal("alice's budget of 2 not enforced")
	}
	if !ok("bob") {
		t.Fatal("bob was refused: alice's refused calls must not have spent the tool's tokens")
	}
	if ok("bob") {
		t.Fatal("the tool's budget of 3 was exceeded")
	}
}

// TestSharedRetryAfter: the refusal says when the next token comes, as the
// local bucket does.
func TestSharedRetryAfter(t *testing.T) {
	srv := redistest.Start(t)
	for _, r := range []policy.Rate{{PerSecond: 1, Burst: 1}, {PerSecond: 0.5, Burst: 3}, {PerSecond: 0.1, Burst: 2}, {PerSecond: 4, Burst: 1}} {
		cfg := policy.LimitConfig{Tools: map[string]policy.Rate{"*": r}, Loop: policy.LoopConfig{Off: true}}
		def := tool.Definition{Name: fmt.Sprintf("t%v", r)}
		ls := limiters(t, srv, 2, cfg)
		for i := range r.Burst {
			if _, err := ls[i%2].Acquire(context.Background(), lcall(def.Name, `{}`, "", ""), def); err != nil {
				t.Fatalf("%+v: call %d of the burst refused: %v", r, i+1, err)
			}
		}
		_, err := ls[0].Acquire(context.Background(), lcall(def.Name, `{}`, "", ""), def)
		period := time.Duration(float64(time.Second) / r.PerSecond)
		if err == nil || err.Type != tool.RateLimited || err.RetryAfter <= 0 || err.RetryAfter > period {
			t.Errorf("%+v: after the burst: %+v, want rate_limited with 0 < retry_after ≤ %s", r, err, period)
		}
	}
}

// loopCase is a sequence of calls (tool, arguments, and whether the call
// fails for good) and the 1-based index of the first refused one (0: none).
type loopCase struct {
	name  string
	calls []string // "tool args" or "!tool args" for a call that fails
	want  int
	typ   tool.ErrorType
}

func repeat(n int, calls ...string) []string {
	var out []string
	for range n {
		out = append(out, calls...)
	}
	return out
}

var loopCases = []loopCase{
	{"same call", repeat(8, `read {"p":"a"}`), 6, tool.LoopDetected},
	{"same call, keys reordered", []string{`read {"p":"a","n":1}`, `read {"n":1,"p":"a"}`, `read {"p":"a","n":1}`, `read {"n":1, "p":"a"}`, `read {"p":"a","n":1}`, `read {"n":1,"p":"a"}`}, 6, tool.LoopDetected},
	{"distinct calls", []string{`read {"p":"a"}`, `read {"p":"b"}`, `read {"p":"c"}`, `read {"p":"d"}`, `read {"p":"e"}`, `read {"p":"f"}`, `read {"p":"g"}`}, 0, ""},
	{"cycle of two", repeat(4, `read {"p":"a"}`, `grep {"q":"x"}`), 6, tool.LoopDetected},
	{"cycle of three", repeat(4, `read {"p":"a"}`, `grep {"q":"x"}`, `list {}`), 9, tool.LoopDetected},
	{"no cycle: a b a c", repeat(2, `read {"p":"a"}`, `grep {"q":"x"}`, `read {"p":"a"}`, `list {}`), 0, ""},
	{"failed call repeated", []string{`!write {"p":"x"}`, `write {"p":"x"}`}, 2, tool.NotFound},
	{"failed call, other args", []string{`!write {"p":"x"}`, `write {"p":"y"}`, `write {"p":"z"}`}, 0, ""},
	{"same call after others", []string{`read {"p":"a"}`, `ls {}`, `read {"p":"a"}`, `cat {}`, `read {"p":"a"}`, `pwd {}`, `read {"p":"a"}`, `env {}`, `read {"p":"a"}`, `date {}`, `read {"p":"a"}`}, 11, tool.LoopDetected},
}

// run plays a loop case over the limiters (round robin) and returns the
// index and type of the first refusal.
func (lc loopCase) run(ls []*policy.Limiter, session string) (int, tool.ErrorType) {
	for i, c := range lc.calls {
		fail := c[0] == '!'
		if fail {
			c = c[1:]
		}
		var name, args string
		fmt.Sscanf(c, "%s", &name)
		args = c[len(name)+1:]
		release, err := ls[i%len(ls)].Acquire(context.Background(), lcall(name, args, session, "p"), tool.Definition{Name: name})
		if err != nil {
			return i + 1, err.Type
		}
		res := tool.TextResult("ok")
		if fail {
			res = tool.ErrorResult(tool.Errorf(tool.NotFound, "no such file"))
		}
		release(res)
	}
	return 0, ""
}

// TestSharedLoopGuardMatchesLocal: a loop spread over two or three
// replicas is caught on the same call as on one process.
func TestSharedLoopGuardMatchesLocal(t *testing.T) {
	srv := redistest.Start(t)
	for i, lc := range loopCases {
		t.Run(lc.name, func(t *testing.T) {
			local, ltyp := lc.run([]*policy.Limiter{policy.NewLimiter(policy.LimitConfig{})}, "s")
			if local != lc.want || ltyp != lc.typ {
				t.Fatalf("one local limiter: refused call %d (%s), want %d (%s)", local, ltyp, lc.want, lc.typ)
			}
			for n := 1; n <= 3; n++ {
				got, typ := lc.run(limiters(t, srv, n, policy.LimitConfig{}), fmt.Sprintf("s%d-%d", i, n))
				if got != lc.want || typ != lc.typ {
					t.Errorf("%d shared limiters: refused call %d (%s), want %d (%s)", n, got, typ, lc.want, lc.typ)
				}
			}
		})
	}
	// Conversations are apart: the same calls under another session or
	// principal are not the same loop.
	ls := limiters(t, srv, 2, policy.LimitConfig{})
	for i := range 5 {
		for _, who := range []struct{ session, principal string }{{"c1", "p"}, {"c2", "p"}, {"c1", "q"}} {
			if _, err := ls[i%2].Acquire(context.Background(), lcall("read", `{}`, who.session, who.principal), tool.Definition{Name: "read"}); err != nil {
				t.Fatalf("%+v call %d: %v", who, i+1, err)
			}
		}
	}
}

// TestSharedOutage: Redis killed and restarted mid-run. Under deny no call
// is admitted while it is down and every call gets a retryable
// unavailable; under allow the local limits hold; both recover without a
// restart of the limiter.
func TestSharedOutage(t *testing.T) {
	srv := redistest.Start(t)
	cfg := policy.LimitConfig{Tools: map[string]policy.Rate{"*": {PerSecond: 0.001, Burst: 10}}, Loop: policy.LoopConfig{Off: true}}
	deny := cfg
	deny.Shared = replica(t, srv, policy.OnErrorDeny)
	allow := cfg
	allow.Shared = replica(t, srv, policy.OnErrorAllow)
	var logged bytes.Buffer
	deny.Shared.Log = slog.New(slog.NewTextHandler(&logged, nil))
	dl, al := policy.NewLimiter(deny), policy.NewLimiter(allow)
	def := tool.Definition{Name: "t"}
	burst := func(l *policy.Limiter) (granted int, types map[tool.ErrorType]int) {
		types = map[tool.ErrorType]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				release, err := l.Acquire(context.Background(), lcall("t", fmt.Sprint(i), "", ""), def)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					types[err.Type]++
					if err.Type == tool.Unavailable && (!err.Retryable || err.RetryAfter <= 0 || err.Suggestion == "") {
						t.Errorf("unavailable without a retry hint: %+v", err)
					}
					return
				}
				granted++
				release(tool.TextResult("ok"))
			}()
		}
		wg.Wait()
		return granted, types
	}
	if g, _ := burst(dl); g != 10 {
		t.Fatalf("before the outage: %d granted, want 10", g)
	}
	srv.Kill()
	if g, types := burst(dl); g != 0 || types[tool.Unavailable] != 64 {
		t.Errorf("deny, Redis down: %d granted, refusals %v; want none granted, 64 unavailable", g, types)
	}
	if !deny.Shared.Degraded() {
		t.Error("the outage is not noted")
	}
	if g, types := burst(al); g != 10 || types[tool.RateLimited] != 54 {
		t.Errorf("allow, Redis down: %d granted, refusals %v; want the local budget of 10", g, types)
	}
	srv.Restart() // empty: no persistence
	// go-redis dials again at most every second after failed dials: wait
	// for both clients to have a connection.
	for deny.Shared.Ping(context.Background()) != nil || allow.Shared.Ping(context.Background()) != nil {
		time.Sleep(10 * time.Millisecond)
	}
	if g, types := burst(dl); g != 10 {
		t.Errorf("deny, after recovery: %d granted, %v, want the fresh budget of 10", g, types)
	}
	if deny.Shared.Degraded() {
		t.Error("the recovery is not noted")
	}
	if g, _ := burst(al); g != 0 {
		t.Errorf("allow, after recovery: %d granted; the shared bucket was spent by the deny replica", g)
	}
	if w, i := strings.Count(logged.String(), "level=WARN"), strings.Count(logged.String(), "level=INFO"); w != 1 || i != 1 {
		t.Errorf("the outage was logged %d times and its end %d times, want once each:\n%s", w, i, logged.String())
	}
}

// TestSharedOutageMidFlight: Redis is killed while 64 callers call in a
// loop; every call ends (admitted, rate limited or unavailable), none
// hangs, and after the restart calls are admitted again.
func TestSharedOutageMidFlight(t *testing.T) {
	srv := redistest.Start(t)
	ls := limiters(t, srv, 2, policy.LimitConfig{Tools: map[string]policy.Rate{"*": {PerSecond: 0.001, Burst: 100}}, Loop: policy.LoopConfig{Off: true}})
	def := tool.Definition{Name: "t"}
	var granted, unavailable, limited atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for c := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				release, err := ls[(c+j)%2].Acquire(context.Background(), lcall("t", `{}`, "", ""), def)
				switch {
				case err == nil:
					granted.Add(1)
					release(tool.TextResult("ok"))
				case err.Type == tool.Unavailable:
					unavailable.Add(1)
				case err.Type == tool.RateLimited:
					limited.Add(1)
				default:
					t.Errorf("unexpected refusal %+v", err)
				}
			}
		}()
	}
	for limited.Load() == 0 { // the budget is spent: the callers are in full swing
		time.Sleep(time.Millisecond)
	}
	srv.Kill()
	for unavailable.Load() < 64 {
		time.Sleep(time.Millisecond)
	}
	srv.Restart()
	before := granted.Load()       // go-redis dials again within a second
	for granted.Load() == before { // a fresh budget: callers are admitted again
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if g := granted.Load(); g > 200 {
		t.Errorf("%d calls granted with a budget of 100 before and 100 after the restart", g)
	}
}

func TestSharedBreaker(t *testing.T) {
	srv := redistest.Start(t)
	a := &policy.Breaker{Threshold: 3, Shared: replica(t, srv, policy.OnErrorDeny)}
	b := &policy.Breaker{Threshold: 3, Shared: replica(t, srv, policy.OnErrorDeny)}
	now := time.Now()
	a.Record("p\x00c", tool.LevelWrite, true, now)
	b.Record("p\x00c", tool.LevelWrite, true, now)
	if _, open := a.Open("p\x00c", tool.LevelWrite, policy.Ask, now); open {
		t.Fatal("open after two refusals")
	}
	a.Record("p\x00c", tool.LevelWrite, true, now)
	for _, br := range []*policy.Breaker{a, b} {
		if n, open := br.Open("p\x00c", tool.LevelWrite, policy.Ask, now); !open || n != 3 {
			t.Errorf("after three refusals over two replicas: open %v, %d", open, n)
		}
		if _, open := br.Open("p\x00c", tool.LevelRead, policy.Allow, now); open {
			t.Error("an allowed read is stopped")
		}
		if _, open := br.Open("p\x00other", tool.LevelWrite, policy.Ask, now); open {
			t.Error("another conversation is stopped")
		}
		if _, open := br.Open("p\x00c", tool.LevelWrite, policy.Ask, now.Add(time.Minute)); open {
			t.Error("still open after the cool-down")
		}
	}
	b.Record("p\x00c", tool.LevelWrite, false, now) // a write ran: the streak ends everywhere
	if _, open := a.Open("p\x00c", tool.LevelWrite, policy.Ask, now); open {
		t.Error("still open after a write ran on the other replica")
	}
	// Redis down: the breaker counts locally and recovers.
	srv.Kill()
	for range 3 {
		a.Record("p\x00d", tool.LevelWrite, true, now)
	}
	if _, open := a.Open("p\x00d", tool.LevelWrite, policy.Ask, now); !open {
		t.Error("Redis down: the local streak does not open the breaker")
	}
	srv.Restart()
	if _, open := a.Open("p\x00c", tool.LevelWrite, policy.Ask, now); open {
		t.Error("after the restart: open")
	}
}

// BenchmarkAcquire measures what a call's limits cost: local buckets and
// loop guard, and the same in a real redis-server on loopback (one round
// trip), with a history of distinct calls and three buckets.
func BenchmarkAcquire(b *testing.B) {
	srv := redistest.Start(b)
	cfg := policy.LimitConfig{
		Tools:         map[string]policy.Rate{"*": {PerSecond: 1e6, Burst: 1e6}},
		Principal:     policy.Rate{PerSecond: 1e6, Burst: 1e6},
		ToolPrincipal: map[string]policy.Rate{"*": {PerSecond: 1e6, Burst: 1e6}},
	}
	shared := cfg
	s, err := policy.NewShared(&policy.RedisState{URL: srv.URL(), Prefix: "bench:"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	shared.Shared = s
	bucketsOnly := shared
	bucketsOnly.Loop.Off = true
	def := tool.Definition{Name: "read_file"}
	for _, bc := range []struct {
		name  string
		l     *policy.Limiter
		files int // distinct calls in turn
	}{
		{"local", policy.NewLimiter(cfg), 1 << 30},
		{"redis/buckets", policy.NewLimiter(bucketsOnly), 1 << 30},
		{"redis/buckets+loop-history-256", policy.NewLimiter(shared), 1 << 30},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				release, err := bc.l.Acquire(context.Background(), lcall("read_file", fmt.Sprintf(`{"path":"f%d"}`, i%bc.files), fmt.Sprint("s", bc.files), "p"), def)
				if err != nil {
					b.Fatal(err)
				}
				release(tool.TextResult("ok"))
			}
		})
	}
}
