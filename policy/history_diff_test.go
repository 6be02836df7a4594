package policy

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// refHistory is the loop guard's history as it was when it counted the
// calls of each key in a map by key (main before the entries kept in the
// calls): the reference for TestHistoryDifferential.
type refHistory struct {
	calls  []past
	count  map[string]int
	failed map[string]*past
}

func (h *refHistory) add(p past) {
	h.calls = append(h.calls, p)
	h.count[p.key]++
	if n := len(h.calls) - maxHistory; n > 0 {
		h.forget(n)
	}
}

func (h *refHistory) forget(n int) {
	for _, c := range h.calls[:n] {
		if h.count[c.key]--; h.count[c.key] == 0 {
			delete(h.count, c.key)
		}
	}
	h.calls = h.calls[n:]
}

func (h *refHistory) check(l *Limiter, key string, now time.Time) *tool.Error {
	cut := 0
	for cut < len(h.calls) && now.Sub(h.calls[cut].at) > l.cfg.Loop.Window {
		cut++
	}
	h.forget(cut)
	if len(h.calls) >= maxHistory {
		h.forget(len(h.calls) - maxHistory + 1)
	}
	if f := h.failed[key]; f != nil && now.Sub(f.at) <= l.cfg.Loop.Window {
		return repeatedFailure(f.res)
	}
	if same := h.count[key]; same >= l.cfg.Loop.Max {
		return repeated(same, l.cfg.Loop.Window)
	}
	if n := cycleCopied(h.calls, key, l.cfg.Loop.Cycles); n > 0 {
		return cycling(n, l.cfg.Loop.Cycles)
	}
	h.add(past{key: key, at: now})
	return nil
}

func (h *refHistory) record(key string, res tool.Result, now time.Time) {
	if failedForGood(res) {
		h.failed[key] = &past{key: key, at: now, res: res}
	} else {
		delete(h.failed, key)
	}
	if progress, _ := res.Meta[tool.MetaProgress].(bool); progress {
		for i := len(h.calls) - 1; i >= 0; i-- {
			if h.calls[i].key == key {
				h.calls = append(h.calls[:i:i], h.calls[i+1:]...)
				if h.count[key]--; h.count[key] == 0 {
					delete(h.count, key)
				}
				return
			}
		}
	}
}

// TestHistoryDifferential: over random sequences of calls (few keys, so
// that repeats, cycles and failures happen; many, so that the history
// fills and forgets) and results (success, failure for good, retryable
// failure, progress), at times that cross the window, the loop guard's
// verdicts and the calls it remembers are those of the reference.
func TestHistoryDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	results := []tool.Result{
		{},
		{Error: tool.Errorf(tool.NotFound, "no such file")},
		{Error: tool.Errorf(tool.Timeout, "slow").WithRetry(time.Second)},
		{Meta: map[string]any{tool.MetaProgress: true}},
		{Error: tool.Errorf(tool.LoopDetected, "loop")},
	}
	verdicts := map[string]int{}
	for round := range 300 {
		cfg := LimitConfig{Loop: LoopConfig{Max: 1 + r.IntN(6), Window: time.Duration(1+r.IntN(60)) * time.Second, Cycles: 1 + r.IntN(4)}}
		l := NewLimiter(cfg)
		h := newHistory("s")
		ref := &refHistory{count: map[string]int{}, failed: map[string]*past{}}
		keys := 1 + r.IntN(5)
		if r.IntN(4) == 0 {
			keys = 400 // the history fills
		}
		now := time.Unix(1_000_000, 0)
		for op := range 1500 {
			now = now.Add(time.Duration(r.IntN(3000)) * time.Millisecond)
			if r.IntN(100) == 0 {
				now = now.Add(cfg.Loop.Window)
			}
			key := fmt.Sprintf(`{"tool":"bare__read_text_file","args":{"path":"/tmp/dir/%d.txt"}}`, r.IntN(keys))
			got, want := h.check(l, key, now), ref.check(l, key, now)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d, op %d, key %q: verdict %v, want %v", round, op, key, got, want)
			}
			switch {
			case want == nil:
				verdicts["admitted"]++
			default:
				verdicts[want.Message[:20]]++
			}
			if want == nil && r.IntN(3) == 0 {
				res := results[r.IntN(len(results))]
				l.record(h, key, res)
				if f := h.failed[key]; f != nil && failedForGood(res) {
					f.at = now // record stamps time.Now(): the reference's time
				}
				ref.record(key, res, now)
			}
			if len(h.calls) != len(ref.calls) {
				t.Fatalf("round %d, op %d: %d calls, want %d", round, op, len(h.calls), len(ref.calls))
			}
			for i := range h.calls {
				if h.calls[i].key != ref.calls[i].key || !h.calls[i].at.Equal(ref.calls[i].at) {
					t.Fatalf("round %d, op %d: call %d is %q, want %q", round, op, i, h.calls[i].key, ref.calls[i].key)
				}
			}
			if got := h.counts(t); !reflect.DeepEqual(got, ref.count) {
				t.Fatalf("round %d, op %d: counts %v, want %v", round, op, got, ref.count)
			}
		}
	}
	t.Logf("verdicts: %v", verdicts)
}

// check is checkLoop in h (l.mu held): what the code before the Ticket way
// called, here for the comparison with it.
func (h *history) check(l *Limiter, key string, now time.Time) *tool.Error {
	_, err := h.checkKept(l, key, now)
	return err
}
