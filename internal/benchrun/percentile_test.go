package benchrun

import (
	"testing"
	"time"
)

// TestIndexes pins the two index formulas the bench programs' figures
// depend on, and that the sample is not reordered.
func TestIndexes(t *testing.T) {
	d := []time.Duration{9, 1, 8, 2, 7, 3, 6, 4, 5, 10}
	for _, c := range []struct {
		p    int
		want time.Duration
	}{{0, 1}, {50, 5}, {99, 9}, {100, 10}} {
		if got := Percentile(d, c.p); got != c.want {
			t.Errorf("Percentile(%d) = %d, want %d", c.p, got, c.want)
		}
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0, 1}, {0.5, 6}, {0.95, 10}, {1, 10}} {
		if got := Quantile(d, c.q); got != c.want {
			t.Errorf("Quantile(%v) = %d, want %d", c.q, got, c.want)
		}
	}
	if d[0] != 9 || d[9] != 10 {
		t.Errorf("the sample was reordered: %v", d)
	}
}
