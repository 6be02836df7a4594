package sandbox

import (
	"errors"
	"fmt"
	"testing"
)

// TestRefusalKeepsOnlyLasting: a passing shortage is never remembered (the
// next command tries the backend again); the first lasting refusal is, and
// a later one does not replace it.
func TestRefusalKeepsOnlyLasting(t *testing.T) {
	var r refusal
	passing := fmt.Errorf("%w: starting the helper: resource temporarily unavailable", ErrUnavailable)
	if r.note(passing) != passing || r.get() != nil {
		t.Fatalf("a passing failure was remembered: %v", r.get())
	}
	first := lastingError{fmt.Errorf("%w: starting the helper: operation not permitted", ErrUnavailable)}
	r.note(first)
	r.note(lastingError{errors.New("another")})
	if got := r.get(); got != error(first) || !errors.Is(got, ErrUnavailable) {
		t.Fatalf("remembered %v, want the first lasting refusal, still ErrUnavailable", got)
	}
}
