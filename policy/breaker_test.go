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
