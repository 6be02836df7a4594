package policy

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"
)

// TestHistoryCount: the count of each key kept beside a session's calls is
// the count of those calls, whatever is added and forgotten (the loop guard
// reads it instead of counting the calls each time).
func TestHistoryCount(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		h := newHistory("")
		keys := 1 + r.IntN(12)
		for op := range 2000 {
			if r.IntN(5) == 0 && len(h.calls) > 0 {
				h.forget(r.IntN(len(h.calls) + 1))
			} else {
				h.add(past{key: fmt.Sprint("k", r.IntN(keys)), at: time.Unix(int64(op), 0)})
			}
			want := map[string]int{}
			for _, c := range h.calls {
				want[c.key]++
			}
			if got := h.counts(t); !maps.Equal(got, want) {
				t.Fatalf("round %d, op %d: count %v, want %v", round, op, got, want)
			}
			if len(h.calls) > maxHistory {
				t.Fatalf("round %d, op %d: %d calls kept, want at most %d", round, op, len(h.calls), maxHistory)
			}
		}
	}
}

// TestHistoryRoom: calls moved back to the front of their array (add, when
// forget has slid them to its end) are the calls a history that always
// appends holds, and a session at its limit adds without allocating.
func TestHistoryRoom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 100 {
		h := newHistory("")
		var want []string
		for op := range 3000 {
			switch {
			case r.IntN(7) == 0 && len(h.calls) > 0:
				n := r.IntN(len(h.calls) + 1)
				h.forget(n)
				want = want[n:]
			case r.IntN(50) == 0 && len(h.calls) > 0:
				k := h.calls[r.IntN(len(h.calls))].key
				h.unadd(k)
				for i := len(want) - 1; i >= 0; i-- {
					if want[i] == k {
						want = append(want[:i:i], want[i+1:]...)
						break
					}
				}
			default:
				k := fmt.Sprint("k", r.IntN(20), "-", op)
				h.add(past{key: k, at: time.Unix(int64(op), 0)})
				want = append(want, k)
				if len(want) > maxHistory {
					want = want[len(want)-maxHistory:]
				}
			}
			if len(h.calls) != len(want) {
				t.Fatalf("round %d, op %d: %d calls, want %d", round, op, len(h.calls), len(want))
			}
			for i, c := range h.calls {
				if c.key != want[i] {
					t.Fatalf("round %d, op %d: call %d is %q, want %q", round, op, i, c.key, want[i])
				}
			}
		}
	}
	h := newHistory("")
	p := past{key: "k", at: time.Unix(1, 0)}
	for range 4 * maxHistory {
		h.add(p)
	}
	adds := func() {
		for range 8 * maxHistory {
			h.add(p)
		}
	}
	if n := testing.AllocsPerRun(10, adds); n != 0 {
		t.Fatalf("a history at its limit allocates %v times in %d calls, want 0", n, 8*maxHistory)
	}
}

// counts returns the count of each key that h keeps, after checking that
// its entries agree: every key's entry has that key and a count above 0,
// every call's entry is its key's, and the free entries are the others.
func (h *history) counts(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for k, e := range h.keys {
		if h.ents[e].key != k || h.ents[e].n <= 0 {
			t.Fatalf("key %q: entry %d is %+v", k, e, h.ents[e])
		}
		out[k] = h.ents[e].n
	}
	for i, c := range h.calls {
		if e, ok := h.keys[c.key]; !ok || e != c.ent {
			t.Fatalf("call %d (%q) has entry %d, its key's is %d (%v)", i, c.key, c.ent, e, ok)
		}
	}
	if len(h.keys)+len(h.free) != len(h.ents) {
		t.Fatalf("%d keys and %d free entries, %d entries", len(h.keys), len(h.free), len(h.ents))
	}
	for _, e := range h.free {
		if h.ents[e] != (keyCount{}) {
			t.Fatalf("free entry %d is %+v", e, h.ents[e])
		}
	}
	return out
}
