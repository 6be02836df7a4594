package jsonstr

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestEnd: End finds the closing quote of every string encoding/json
// writes (quotes and backslashes in any run, escapes of every kind), read
// from any of its bytes, with more JSON before and after it, and none in a
// string cut before it.
func TestEnd(t *testing.T) {
	alphabet := []rune{'"', '\\', 'a', '\n', '\x01', 'é', '<', '/', 'u'}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		r := make([]rune, rng.IntN(12))
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		enc, err := json.Marshal(string(r))
		if err != nil {
			t.Fatal(err)
		}
		b := append([]byte(`{"k":`), enc...)
		want := len(b) - 1
		b = append(b, `,"x\\":"\""`...)
		for i := 6; i <= want; i++ { // from anywhere in the string
			if got := End(b, i); got != want {
				t.Fatalf("End(%s, %d) = %d, want %d", b, i, got, want)
			}
			if got := End(b[:want], i); got != want {
				t.Fatalf("End(%s, %d) = %d, want %d, its length (no closing quote)", b[:want], i, got, want)
			}
		}
	}
}
