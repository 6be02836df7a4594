package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolgate/toolgate/internal/redistest"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/tool"
)

func lcall(name, args, session, principal string) tool.Call {
	return tool.Call{Name: name, Args: json.RawMessage(args), Session: session, Principal: principal}
}

// replica is one process's Shared: its own client to the same server.
func replica(t testing.TB, srv *redistest.Server, onError policy.OnError) *policy.Shared {
	r := &policy.RedisState{URL: srv.URL(), Prefix: "test:", OnError: onError}
	c, err := store.NewClient(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := store.NewShared(c, r)
	s.Log = slog.New(slog.DiscardHandler)
	return s
}

// backend makes the Shared of each replica of a test: over one Redis
// server (each replica its own client), or over one MemoryLimits (the
// reference the Redis script must agree with).
type backend struct {
	name    string
	replica func() *policy.Shared
}

func backends(t *testing.T) []backend {
	srv := redistest.Start(t)
	mem := &policy.MemoryLimits{}
	return []backend{
		{"redis", func() *policy.Shared { return replica(t, srv, policy.OnErrorDeny) }},
		{"memory", func() *policy.Shared { return &policy.Shared{Store: mem} }},
	}
}

// limiters returns n Limiters of cfg, each a replica.
func (b backend) limiters(n int, cfg policy.LimitConfig) []*policy.Limiter {
	var out []*policy.Limiter
	for range n {
		c := cfg
		c.Shared = b.replica()
		out = append(out, policy.NewLimiter(c))
	}
	return out
}

// redisLimiters returns n Limiters of cfg over srv, each its own client.
func redisLimiters(t *testing.T, srv *redistest.Server, n int, cfg policy.LimitConfig) []*policy.Limiter {
	return backend{replica: func() *policy.Shared { return replica(t, srv, policy.OnErrorDeny) }}.limiters(n, cfg)
}

// TestSharedBudgetIsExactAcrossReplicas: 64 callers spread over two
// replicas get exactly the budget of every bucket kind, as one process would.
func TestSharedBudgetIsExactAcrossReplicas(t *testing.T) {
	bs := backends(t)
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
			for _, b := range bs {
				if got := spend(t, b.limiters(2, tc.cfg), def, tc.who); got != tc.want {
					t.Errorf("%s: granted %d across two replicas, want exactly %d", b.name, got, tc.want)
				}
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
	for _, b := range backends(t) {
		ls := b.limiters(2, policy.LimitConfig{
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
			t.Fatalf("%s: alice's budget of 2 not enforced", b.name)
		}
		if !ok("bob") {
			t.Fatalf("%s: bob was refused: alice's refused calls must not have spent the tool's tokens", b.name)
		}
		if ok("bob") {
			t.Fatalf("%s: the tool's budget of 3 was exceeded", b.name)
		}
	}
}

// TestSharedRetryAfter: the refusal says when the next token comes, as the
// local bucket does.
func TestSharedRetryAfter(t *testing.T) {
	for _, b := range backends(t) {
		testRetryAfter(t, b)
	}
}

func testRetryAfter(t *testing.T, b backend) {
	for _, r := range []policy.Rate{{PerSecond: 1, Burst: 1}, {PerSecond: 0.5, Burst: 3}, {PerSecond: 0.1, Burst: 2}, {PerSecond: 4, Burst: 1}} {
		cfg := policy.LimitConfig{Tools: map[string]policy.Rate{"*": r}, Loop: policy.LoopConfig{Off: true}}
		def := tool.Definition{Name: fmt.Sprintf("t%v", r)}
		ls := b.limiters(2, cfg)
		for i := range r.Burst {
			if _, err := ls[i%2].Acquire(context.Background(), lcall(def.Name, `{}`, "", ""), def); err != nil {
				t.Fatalf("%+v: call %d of the burst refused: %v", r, i+1, err)
			}
		}
		_, err := ls[0].Acquire(context.Background(), lcall(def.Name, `{}`, "", ""), def)
		period := time.Duration(float64(time.Second) / r.PerSecond)
		if err == nil || err.Type != tool.RateLimited || err.RetryAfter <= 0 || err.RetryAfter > period {
			t.Errorf("%s %+v: after the burst: %+v, want rate_limited with 0 < retry_after ≤ %s", b.name, r, err, period)
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
	bs := backends(t)
	for i, lc := range loopCases {
		t.Run(lc.name, func(t *testing.T) {
			local, ltyp := lc.run([]*policy.Limiter{policy.NewLimiter(policy.LimitConfig{})}, "s")
			if local != lc.want || ltyp != lc.typ {
				t.Fatalf("one local limiter: refused call %d (%s), want %d (%s)", local, ltyp, lc.want, lc.typ)
			}
			for _, b := range bs {
				for n := 1; n <= 3; n++ {
					got, typ := lc.run(b.limiters(n, policy.LimitConfig{}), fmt.Sprintf("s%d-%d", i, n))
					if got != lc.want || typ != lc.typ {
						t.Errorf("%s: %d shared limiters: refused call %d (%s), want %d (%s)", b.name, n, got, typ, lc.want, lc.typ)
					}
				}
			}
		})
	}
	// Conversations are apart: the same calls under another session or
	// principal are not the same loop.
	for _, b := range bs {
		ls := b.limiters(2, policy.LimitConfig{})
		for i := range 5 {
			for _, who := range []struct{ session, principal string }{{"c1", "p"}, {"c2", "p"}, {"c1", "q"}} {
				if _, err := ls[i%2].Acquire(context.Background(), lcall("read", `{}`, who.session, who.principal), tool.Definition{Name: "read"}); err != nil {
					t.Fatalf("%s: %+v call %d: %v", b.name, who, i+1, err)
				}
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
	ls := redisLimiters(t, srv, 2, policy.LimitConfig{Tools: map[string]policy.Rate{"*": {PerSecond: 0.001, Burst: 100}}, Loop: policy.LoopConfig{Off: true}})
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
	for _, bk := range backends(t) {
		a := &policy.Breaker{Threshold: 3, Shared: bk.replica()}
		b := &policy.Breaker{Threshold: 3, Shared: bk.replica()}
		now := time.Now()
		a.Record("p\x00c", tool.LevelWrite, true, now)
		b.Record("p\x00c", tool.LevelWrite, true, now)
		if _, open := a.Open("p\x00c", tool.LevelWrite, policy.Ask, now); open {
			t.Fatalf("%s: open after two refusals", bk.name)
		}
		a.Record("p\x00c", tool.LevelWrite, true, now)
		for _, br := range []*policy.Breaker{a, b} {
			if n, open := br.Open("p\x00c", tool.LevelWrite, policy.Ask, now); !open || n != 3 {
				t.Errorf("%s: after three refusals over two replicas: open %v, %d", bk.name, open, n)
			}
			if _, open := br.Open("p\x00c", tool.LevelRead, policy.Allow, now); open {
				t.Errorf("%s: an allowed read is stopped", bk.name)
			}
			if _, open := br.Open("p\x00other", tool.LevelWrite, policy.Ask, now); open {
				t.Errorf("%s: another conversation is stopped", bk.name)
			}
			if _, open := br.Open("p\x00c", tool.LevelWrite, policy.Ask, now.Add(time.Minute)); open {
				t.Errorf("%s: still open after the cool-down", bk.name)
			}
		}
		b.Record("p\x00c", tool.LevelWrite, false, now) // a write ran: the streak ends everywhere
		if _, open := a.Open("p\x00c", tool.LevelWrite, policy.Ask, now); open {
			t.Errorf("%s: still open after a write ran on the other replica", bk.name)
		}
		// A streak whose last refusal is a cool-down old starts over.
		for _, at := range []time.Time{now, now, now.Add(time.Minute)} {
			a.Record("p\x00e", tool.LevelWrite, true, at)
		}
		if n, open := b.Open("p\x00e", tool.LevelWrite, policy.Ask, now.Add(time.Minute)); open {
			t.Errorf("%s: a streak went on over a cool-down: open with %d", bk.name, n)
		}
	}
	// Redis down: the breaker counts locally and recovers.
	srv := redistest.Start(t)
	a := &policy.Breaker{Threshold: 3, Shared: replica(t, srv, policy.OnErrorDeny)}
	now := time.Now()
	for range 3 {
		a.Record("p\x00c", tool.LevelWrite, true, now)
	}
	srv.Kill()
	for range 3 {
		a.Record("p\x00d", tool.LevelWrite, true, now)
	}
	if _, open := a.Open("p\x00d", tool.LevelWrite, policy.Ask, now); !open {
		t.Error("Redis down: the local streak does not open the breaker")
	}
	srv.Restart() // empty: no persistence
	if _, open := a.Open("p\x00c", tool.LevelWrite, policy.Ask, now); open {
		t.Error("after the restart: open")
	}
}

// BenchmarkAcquire measures what a call's limits cost: local buckets and
// loop guard, the same in MemoryLimits, and in a real redis-server on
// loopback (one round trip), with a history of distinct calls and three
// buckets. Over Redis it reports the admission script's own time in Redis
// (INFO commandstats, usec_per_call of EVALSHA, reset before each run) and
// the CPU time redis-server spent per call (INFO cpu, all of it: network
// included), and in the same run both for EVAL "return 1" (a script's
// floor).
func BenchmarkAcquire(b *testing.B) {
	srv := redistest.Start(b)
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rc.Close()
	cfg := policy.LimitConfig{
		Tools:         map[string]policy.Rate{"*": {PerSecond: 1e6, Burst: 1e6}},
		Principal:     policy.Rate{PerSecond: 1e6, Burst: 1e6},
		ToolPrincipal: map[string]policy.Rate{"*": {PerSecond: 1e6, Burst: 1e6}},
	}
	shared := cfg
	shared.Shared = store.NewShared(rc, &policy.RedisState{URL: srv.URL(), Prefix: "bench:"})
	bucketsOnly := shared
	bucketsOnly.Loop.Off = true
	memory := cfg
	memory.Shared = &policy.Shared{Store: &policy.MemoryLimits{}}
	def := tool.Definition{Name: "read_file"}
	ctx := context.Background()
	for _, bc := range []struct {
		name  string
		l     *policy.Limiter
		redis bool
	}{
		{"local", policy.NewLimiter(cfg), false},
		{"memory", policy.NewLimiter(memory), false},
		{"redis/buckets", policy.NewLimiter(bucketsOnly), true},
		{"redis/buckets+loop-history-256", policy.NewLimiter(shared), true},
		{"redis/return-1", nil, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var cpu float64
			if bc.redis {
				rc.ConfigResetStat(ctx)
				cpu = redisCPU(b, rc)
			}
			i := 0
			for b.Loop() {
				i++
				if bc.l == nil {
					if err := rc.Eval(ctx, "return 1", nil).Err(); err != nil {
						b.Fatal(err)
					}
					continue
				}
				release, err := bc.l.Acquire(ctx, lcall("read_file", fmt.Sprintf(`{"path":"f%d"}`, i), "s", "p"), def)
				if err != nil {
					b.Fatal(err)
				}
				release(tool.TextResult("ok"))
			}
			if bc.redis {
				cmd := "evalsha"
				if bc.l == nil {
					cmd = "eval"
				}
				b.ReportMetric(usecPerCall(b, rc, cmd), "redis-µs/call")
				b.ReportMetric((redisCPU(b, rc)-cpu)*1e6/float64(b.N), "redis-cpu-µs/op")
			}
		})
	}
}

// redisCPU is the CPU time redis-server has used, in seconds (INFO cpu):
// unlike usec_per_call, which is wall time, it does not grow when the
// machine is busy with other work.
func redisCPU(b testing.TB, rc *redis.Client) float64 {
	info, err := rc.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for line := range strings.Lines(info) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_sys" || k == "used_cpu_user" {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatal(err)
			}
			total += x
		}
	}
	return total
}

// usecPerCall is INFO commandstats' usec_per_call of cmd.
func usecPerCall(b testing.TB, rc *redis.Client, cmd string) float64 {
	info, err := rc.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(info) {
		stats, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":")
		if !ok {
			continue
		}
		for f := range strings.SplitSeq(stats, ",") {
			if v, ok := strings.CutPrefix(f, "usec_per_call="); ok {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				return x
			}
		}
	}
	b.Fatalf("no %s in INFO commandstats:\n%s", cmd, info)
	return 0
}

func TestClientOptions(t *testing.T) {
	p, err := policy.Parse([]byte("state:\n  redis:\n    url: rediss://127.0.0.1:6380/3\n    password_env: TG_TEST_REDIS_PW\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := p.State.Redis
	t.Setenv("TG_TEST_REDIS_PW", "")
	if _, err := store.ClientOptions(r); err == nil || !strings.Contains(err.Error(), "TG_TEST_REDIS_PW") {
		t.Errorf("an unset password variable: %v", err)
	}
	t.Setenv("TG_TEST_REDIS_PW", "s3cret")
	o, err := store.ClientOptions(r)
	if err != nil {
		t.Fatal(err)
	}
	if o.Password != "s3cret" || o.TLSConfig == nil || o.DB != 3 || o.Addr != "127.0.0.1:6380" {
		t.Errorf("options: password %q, tls %v, db %d, addr %s", o.Password, o.TLSConfig != nil, o.DB, o.Addr)
	}
	if o.DialTimeout != time.Second || o.ReadTimeout != 500*time.Millisecond || o.MaxRetries != 1 {
		t.Errorf("options: dial %s, read %s, retries %d: a call must not hang on an outage", o.DialTimeout, o.ReadTimeout, o.MaxRetries)
	}
	// What the policy checks, and the client's own options in the query.
	for _, tc := range []struct{ url, wantErr string }{
		{"redis://127.0.0.1:6379/0?dial_timeout=3s", ""},
		{"redis://127.0.0.1:6379//2/", ""},
		{"redis://127.0.0.1:6379/0?no_such_option=1", "no_such_option"},
		{"redis://127.0.0.1:6379/0?dial_timeout=soon", "dial_timeout"},
		{"redis://127.0.0.1:6379/1/2", "database"},
		{"redis://127.0.0.1:6379/x", "database"},
		{"redis://u:pw@127.0.0.1:6379/0", "password"},
		{"http://127.0.0.1:6379/0", "scheme"},
	} {
		_, err := store.ClientOptions(&policy.RedisState{URL: tc.url})
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.url, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: %v, want an error about %s", tc.url, err, tc.wantErr)
		}
	}
	if c, err := store.NewClient(nil); c != nil || err != nil {
		t.Errorf("no state.redis: %v, %v; want no client", c, err)
	}
}

// TestSharedLoopGuardVerdictsMatchLocal plays generated conversations
// (repeats, cycles of two and three, broken cycles, failures, a history
// past its bound) on one local Limiter, on two replicas over MemoryLimits
// and on two over Redis, under several loop settings: every call gets the
// same verdict, refused or not, with the same message.
func TestSharedLoopGuardVerdictsMatchLocal(t *testing.T) {
	bs := backends(t)
	rng := rand.New(rand.NewPCG(19, 7))
	type step struct {
		call string
		fail bool
	}
	var convs [][]step
	for range 240 {
		names := []string{`read {"p":"a"}`, `grep {"q":"x"}`, `list {}`, `read {"p":"b"}`, `write {"p":"c"}`}[:1+rng.IntN(5)]
		var conv []step
		for len(conv) < 12+rng.IntN(30) {
			switch rng.IntN(4) {
			case 0: // a run of one call
				c := names[rng.IntN(len(names))]
				for range 1 + rng.IntN(6) {
					conv = append(conv, step{call: c})
				}
			case 1: // a cycle of two or three, repeated, maybe broken
				n := 2 + rng.IntN(2)
				cyc := make([]string, n)
				for i := range cyc {
					cyc[i] = names[rng.IntN(len(names))]
				}
				for i := range n * (1 + rng.IntN(4)) {
					conv = append(conv, step{call: cyc[i%n]})
				}
			default:
				conv = append(conv, step{call: names[rng.IntN(len(names))], fail: rng.IntN(8) == 0})
			}
		}
		convs = append(convs, conv)
	}
	// Around the history's bound (256 calls): the oldest calls stop
	// counting, exactly when they do in one process.
	bounds := len(convs)
	for k := 250; k <= 258; k++ {
		conv := []step{{call: `read {"p":"a"}`}, {call: `read {"p":"a"}`}}
		for i := range k {
			conv = append(conv, step{call: fmt.Sprintf(`read {"p":"f%d"}`, i)})
		}
		convs = append(convs, append(conv, step{call: `read {"p":"a"}`}, step{call: `read {"p":"a"}`}))
	}
	play := func(ls []*policy.Limiter, session, principal string, conv []step) []string {
		var out []string
		for i, s := range conv {
			name, args, _ := strings.Cut(s.call, " ")
			release, err := ls[i%len(ls)].Acquire(context.Background(), lcall(name, args, session, principal), tool.Definition{Name: name})
			if err != nil {
				out = append(out, fmt.Sprintf("%d refused: %s: %s", i+1, err.Type, err.Message))
				continue
			}
			res := tool.TextResult("ok")
			if s.fail {
				res = tool.ErrorResult(tool.Errorf(tool.NotFound, "no such file"))
			}
			release(res)
			out = append(out, fmt.Sprintf("%d ran", i+1))
		}
		return out
	}
	refused := 0
	for i, conv := range convs {
		cfg := policy.LimitConfig{Loop: policy.LoopConfig{Max: 2 + i%4, Cycles: 2 + i%3%2}}
		if i >= bounds {
			cfg.Loop.Max = 2
		}
		if i%3 == 0 { // a call the bucket refuses still counts for the loop guard
			cfg.Principal = policy.Rate{PerSecond: 0.001, Burst: 2 + i%5}
		}
		who := fmt.Sprint("p", i) // a principal's bucket per conversation
		want := play([]*policy.Limiter{policy.NewLimiter(cfg)}, "local", who, conv)
		refused += strings.Count(strings.Join(want, "\n"), "refused")
		for _, b := range bs {
			got := play(b.limiters(2, cfg), fmt.Sprint("conv", i), who, conv)
			if !slices.Equal(got, want) {
				t.Errorf("%s, conversation %d (%+v): verdicts differ from one local limiter:\n%s\nwant:\n%s", b.name, i, cfg.Loop, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
	if refused < len(convs) {
		t.Errorf("only %d refusals in %d conversations: the cases do not reach the guard", refused, len(convs))
	}
}

// TestSharedLoopWindowEnds: a call and a failure stop counting once the
// window has passed, while the calls after them still count. Each call
// comes at least three quarters of a window after the last, so the one
// two calls back is out of it: nothing here depends on how fast the calls
// run.
func TestSharedLoopWindowEnds(t *testing.T) {
	cfg := policy.LimitConfig{Loop: policy.LoopConfig{Max: 1, Window: 20 * time.Millisecond}}
	limiters := map[string][]*policy.Limiter{"local": {policy.NewLimiter(cfg)}}
	for _, b := range backends(t) {
		limiters[b.name] = b.limiters(2, cfg)
	}
	for name, ls := range limiters {
		for i, c := range []struct {
			args string
			fail bool
		}{{`{"p":"a"}`, false}, {`{"p":"b"}`, false}, {`{"p":"a"}`, false}, {`{"p":"c"}`, true}, {`{"p":"d"}`, false}, {`{"p":"c"}`, false}} {
			if i > 0 {
				time.Sleep(cfg.Loop.Window * 3 / 4)
			}
			release, err := ls[i%len(ls)].Acquire(context.Background(), lcall("read", c.args, "s", "p"), tool.Definition{Name: "read"})
			if err != nil {
				t.Fatalf("%s: call %d refused, though the identical one is out of the window: %v", name, i+1, err)
			}
			res := tool.TextResult("ok")
			if c.fail {
				res = tool.ErrorResult(tool.Errorf(tool.NotFound, "no such file"))
			}
			release(res)
		}
	}
}

// TestSharedLoopGuardUnderConcurrency: 64 callers in one conversation make
// the same call at once over two replicas: exactly max run, the others are
// refused as a loop. Then, in another conversation, 300 calls at once (150
// keys, twice each, past the history's bound) all run, and leave a history
// the guard still counts right: a new call runs max times, not once more.
func TestSharedLoopGuardUnderConcurrency(t *testing.T) {
	for _, b := range backends(t) {
		ls := b.limiters(2, policy.LimitConfig{Loop: policy.LoopConfig{Max: 5}})
		var ran, loops atomic.Int64
		var wg sync.WaitGroup
		for c := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				release, err := ls[c%2].Acquire(context.Background(), lcall("read", `{"p":"a"}`, "same", "p"), tool.Definition{Name: "read"})
				if err != nil {
					if err.Type == tool.LoopDetected {
						loops.Add(1)
					}
					return
				}
				ran.Add(1)
				release(tool.TextResult("ok"))
			}()
		}
		wg.Wait()
		if ran.Load() != 5 || loops.Load() != 59 {
			t.Errorf("%s: %d ran and %d refused as a loop, want 5 and 59", b.name, ran.Load(), loops.Load())
		}
		for c := range 300 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				release, err := ls[c%2].Acquire(context.Background(), lcall("read", fmt.Sprintf(`{"p":%d}`, c%150), "many", "p"), tool.Definition{Name: "read"})
				if err != nil {
					t.Errorf("%s: call %d refused: %v", b.name, c, err)
					return
				}
				release(tool.TextResult("ok"))
			}()
		}
		wg.Wait()
		for i := range 6 {
			_, err := ls[i%2].Acquire(context.Background(), lcall("read", `{"p":"new"}`, "many", "p"), tool.Definition{Name: "read"})
			if i < 5 && err != nil {
				t.Fatalf("%s: new call %d after 300 at once refused: %v", b.name, i+1, err)
			}
			if i == 5 && (err == nil || err.Type != tool.LoopDetected) {
				t.Errorf("%s: the sixth new call after 300 at once: %v, want loop_detected", b.name, err)
			}
		}
	}
}

// TestSharedLoopGuardProgress: over two replicas, 100 identical reads
// whose results say they made progress (tool.MetaProgress) pass the loop
// guard, interleaved with other calls whose order is kept (a cycle of them
// is still caught); identical reads without progress are caught at the
// sixth, as by one local limiter (TestLoopGuardProgress).
func TestSharedLoopGuardProgress(t *testing.T) {
	read := tool.Definition{Name: "read_process"}
	args := `{"id":"p-1","cursor":10,"wait_ms":5000}`
	for _, b := range backends(t) {
		ls := b.limiters(2, policy.LimitConfig{})
		for i := range 100 {
			release, err := ls[i%2].Acquire(context.Background(), lcall("read_process", args, "s", "p"), read)
			if err != nil {
				t.Fatalf("%s: waiting read %d refused: %v", b.name, i+1, err)
			}
			res := tool.TextResult("(no new output)")
			res.SetMeta(tool.MetaProgress, true)
			release(res)
			if i%10 == 0 { // another call now and then: kept
				release, err := ls[i%2].Acquire(context.Background(), lcall("list_processes", fmt.Sprintf(`{"n":%d}`, i), "s", "p"), read)
				if err != nil {
					t.Fatalf("%s: list %d refused: %v", b.name, i, err)
				}
				release(tool.TextResult("ok"))
			}
		}
		for i := 1; i <= 6; i++ {
			release, err := ls[i%2].Acquire(context.Background(), lcall("read_process", args, "s", "p"), read)
			if i == 6 {
				if err == nil || err.Type != tool.LoopDetected {
					t.Fatalf("%s: the sixth read without progress: %v", b.name, err)
				}
				break
			}
			if err != nil {
				t.Fatalf("%s: read %d without progress refused: %v", b.name, i, err)
			}
			release(tool.TextResult("(no new output)"))
		}
		// The order of what is kept holds: a, b, a, b, a, b is a cycle.
		for i := range 6 {
			name := []string{"a", "b"}[i%2]
			release, err := ls[i%2].Acquire(context.Background(), lcall(name, `{}`, "s2", "p"), read)
			if i == 5 {
				if err == nil || err.Type != tool.LoopDetected {
					t.Fatalf("%s: the cycle was not caught: %v", b.name, err)
				}
				break
			}
			if err != nil {
				t.Fatalf("%s: call %d refused: %v", b.name, i+1, err)
			}
			release(tool.TextResult("ok"))
			if i == 2 { // a read that made progress between them is not seen
				release, _ := ls[0].Acquire(context.Background(), lcall("read_process", args, "s2", "p"), read)
				res := tool.TextResult("more")
				res.SetMeta(tool.MetaProgress, true)
				release(res)
			}
		}
	}
}
