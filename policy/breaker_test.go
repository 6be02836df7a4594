package policy_test

import (
	"testing"
	"time"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// TestBreakerCoolsDown: the breaker stays open until its cool-down has
// passed since the last refusal, then a call runs and closes it.
func TestBreakerCoolsDown(t *testing.T) {
	b := &policy.Breaker{Threshold: 2}
	now := time.Now()
	b.Record("s", tool.LevelWrite, true, now)
	b.Record("s", tool.LevelWrite, true, now.Add(time.Second))
	if _, open := b.Open("s", tool.LevelWrite, policy.Allow, now.Add(2*time.Second)); !open {
		t.Fatal("two refusals in a row did not open a breaker of threshold 2")
	}
	if _, open := b.Open("s", tool.LevelRead, policy.Allow, now.Add(2*time.Second)); open {
		t.Error("an allowed read was stopped")
	}
	if _, open := b.Open("s", tool.LevelRead, policy.Deny, now.Add(2*time.Second)); !open {
		t.Error("a denied read passed an open breaker")
	}
	if _, open := b.Open("s", tool.LevelWrite, policy.Allow, now.Add(61*time.Second)); open {
		t.Error("the breaker is still open a minute after the last refusal")
	}
	// A refusal long after the streak starts a new one.
	b.Record("s", tool.LevelWrite, true, now.Add(2*time.Minute))
	if _, open := b.Open("s", tool.LevelWrite, policy.Allow, now.Add(2*time.Minute)); open {
		t.Error("an old streak counted after it cooled down")
	}
}

// TestBreakerGuardsCounts: Guards and Counts say exactly when Open and
// Record look at the session (a caller skips them, and the session's key,
// when they say no): for every level and effect, an open breaker stops the
// call if and only if Guards says so; for every level and outcome, Record
// moves the streak (a refusal adds one, anything else ends it) if and only
// if Counts says so. The answers are the rule's: only an allowed read
// passes unlooked at, only a read that was not refused is not counted.
func TestBreakerGuardsCounts(t *testing.T) {
	now := time.Now()
	levels := []tool.Level{tool.LevelRead, tool.LevelWrite, tool.LevelMedium, tool.LevelHigh}
	for _, lv := range levels {
		for _, eff := range []policy.Effect{policy.Allow, policy.Ask, policy.Deny} {
			b := &policy.Breaker{}
			for i := range 3 {
				b.Record("s", tool.LevelWrite, true, now.Add(time.Duration(i)*time.Second))
			}
			_, open := b.Open("s", lv, eff, now.Add(3*time.Second))
			if open != b.Guards(lv, eff) {
				t.Errorf("level %d, %s: Open says open %v, Guards %v", lv, eff, open, b.Guards(lv, eff))
			}
			if want := !(lv == tool.LevelRead && eff == policy.Allow); b.Guards(lv, eff) != want {
				t.Errorf("level %d, %s: Guards %v, want %v", lv, eff, b.Guards(lv, eff), want)
			}
		}
		for _, refused := range []bool{false, true} {
			// Two refusals, the outcome, one more refusal: a refusal
			// counted makes four (open), anything else counted ends
			// the streak (one: closed), an outcome not counted leaves
			// three (open).
			b := &policy.Breaker{}
			b.Record("s", tool.LevelWrite, true, now)
			b.Record("s", tool.LevelWrite, true, now.Add(time.Second))
			b.Record("s", lv, refused, now.Add(2*time.Second))
			b.Record("s", tool.LevelWrite, true, now.Add(3*time.Second))
			n, open := b.Open("s", tool.LevelWrite, policy.Deny, now.Add(4*time.Second))
			counted := refused && n == 4 || !refused && !open
			if !open && n != 0 || open && n != 3 && n != 4 {
				t.Fatalf("level %d, refused %v: Open gave %d, %v", lv, refused, n, open)
			}
			if counted != b.Counts(lv, refused) {
				t.Errorf("level %d, refused %v: Record counted it %v (streak %d, open %v), Counts %v", lv, refused, counted, n, open, b.Counts(lv, refused))
			}
			if want := refused || lv != tool.LevelRead; b.Counts(lv, refused) != want {
				t.Errorf("level %d, refused %v: Counts %v, want %v", lv, refused, b.Counts(lv, refused), want)
			}
		}
	}
}
