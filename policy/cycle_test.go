package policy

import (
	"math/rand/v2"
	"testing"
)

// cycleCopied is cycle as it was before it read the keys in place: it
// copied the last 3*cycles-1 keys and key into a slice first.
func cycleCopied(calls []past, key string, cycles int) int {
	calls = calls[max(0, len(calls)-(3*cycles-1)):]
	seq := make([]string, 0, len(calls)+1)
	for _, c := range calls {
		seq = append(seq, c.key)
	}
	seq = append(seq, key)
	for n := 2; n <= 3; n++ {
		span := n * cycles
		if len(seq) < span {
			continue
		}
		tail := seq[len(seq)-span:]
		if !func(keys []string) bool {
			for i := range keys {
				for j := i + 1; j < len(keys); j++ {
					if keys[i] == keys[j] {
						return false
					}
				}
			}
			return true
		}(tail[:n]) {
			continue
		}
		ok := true
		for i := n; i < span && ok; i++ {
			ok = tail[i] == tail[i-n]
		}
		if ok {
			return n
		}
	}
	return 0
}

// TestCycleMatchesCopied: cycle gives what the copying version gave, over
// random histories of few keys (so that cycles of 2 and 3 complete, and
// nearly complete, often) and every cycles from 1 to 5 and a large one.
// Among them, calls repeating the call before them, which cycle answers
// after one comparison, with and without a cycle before them.
func TestCycleMatchesCopied(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := []string{"a", "b", "c", "d"}
	found := map[int]int{}
	repeats := 0 // calls whose key is the one before it
	for range 200000 {
		calls := make([]past, r.IntN(20))
		alphabet := 1 + r.IntN(len(keys))
		period := 1 + r.IntN(4)
		for i := range calls {
			if r.IntN(4) == 0 || i < period { // mostly a repeating pattern, sometimes broken
				calls[i].key = keys[r.IntN(alphabet)]
			} else {
				calls[i].key = calls[i-period].key
			}
		}
		key := keys[r.IntN(alphabet)]
		cycles := 1 + r.IntN(5)
		if r.IntN(20) == 0 {
			cycles = 1000000
		}
		got, want := cycle(calls, key, cycles), cycleCopied(calls, key, cycles)
		if got != want {
			var seq []string
			for _, c := range calls {
				seq = append(seq, c.key)
			}
			t.Fatalf("cycle(%q, %q, %d) = %d, the copying version %d", seq, key, cycles, got, want)
		}
		found[got]++
		if len(calls) > 0 && calls[len(calls)-1].key == key && cycles <= len(calls)+1 {
			repeats++
		}
	}
	if found[2] == 0 || found[3] == 0 || found[0] == 0 || repeats < 10000 {
		t.Fatalf("the cases did not cover every answer: %v, %d repeats", found, repeats)
	}
}
