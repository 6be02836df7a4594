package sandboxes

import (
	"context"
	"regexp"
	"testing"

	"github.com/toolgate/toolgate/runner"
)

func TestID(t *testing.T) {
	dns := regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	keys := [][2]string{
		{"alice", "conv-1"}, {"alice", "conv-2"}, {"bob", "conv-1"}, {"", ""},
		{"alice", ""}, {"", "alice"}, {"ab", "c"}, {"a", "bc"}, {"1:a", ""}, {"1", ":a"},
		{"émile", "conversation:日本"},
	}
	seen := map[string][2]string{}
	for _, k := range keys {
		id := ID(k[0], k[1])
		if err := runner.ValidID(id); err != nil {
			t.Errorf("ID%q = %q: %v", k, id, err)
		}
		if !dns.MatchString(id) || len(id) > 40 {
			t.Errorf("ID%q = %q: not a short DNS-1123 label", k, id)
		}
		if id != ID(k[0], k[1]) {
			t.Errorf("ID%q is not stable", k)
		}
		if other, ok := seen[id]; ok {
			t.Errorf("ID%q = ID%q = %q", k, other, id)
		}
		seen[id] = k
	}
}

func TestKey(t *testing.T) {
	if _, ok := KeyFrom(context.Background()); ok {
		t.Errorf("a bare context carries a key")
	}
	want := Key{Principal: Hash("alice"), Conversation: Hash("conv-1")}
	if k, ok := KeyFrom(WithKey(context.Background(), want)); !ok || k != want {
		t.Errorf("KeyFrom(WithKey(%v)) = %v, %v", want, k, ok)
	}
}
