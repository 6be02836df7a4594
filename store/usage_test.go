package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/internal/redistest"
	"github.com/toolgate/toolgate/selection"
	"github.com/toolgate/toolgate/store"
)

// testUsage: records come back in order, each once, from any reader's
// cursor; a second reader (another replica) sees what the first appended.
func testUsage(t *testing.T, a, b selection.UsageLog) {
	ctx := context.Background()
	recs, cur, err := a.ReadUsage(ctx, "")
	if err != nil || len(recs) != 0 {
		t.Fatalf("empty log: %q %v", recs, err)
	}
	for i := range 3 {
		if err := a.AppendUsage(ctx, []byte(fmt.Sprint(`{"n":`, i, `}`))); err != nil {
			t.Fatal(err)
		}
	}
	recs, cur, err = a.ReadUsage(ctx, cur)
	if err != nil || len(recs) != 3 || string(recs[2]) != `{"n":2}` {
		t.Fatalf("after three appends: %q %v", recs, err)
	}
	if again, cur2, err := a.ReadUsage(ctx, cur); err != nil || len(again) != 0 || cur2 != cur {
		t.Fatalf("read again: %q %q %v", again, cur2, err)
	}
	b.AppendUsage(ctx, []byte(`{"n":3}`))
	if recs, _, err = a.ReadUsage(ctx, cur); err != nil || len(recs) != 1 || string(recs[0]) != `{"n":3}` {
		t.Fatalf("the other's append: %q %v", recs, err)
	}
	if all, _, err := b.ReadUsage(ctx, ""); err != nil || len(all) != 4 {
		t.Fatalf("the other reads %d records: %v", len(all), err)
	}
}

func TestBoltUsage(t *testing.T) {
	s, err := store.OpenBoltUsage(filepath.Join(t.TempDir(), "usage.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	testUsage(t, s, s)
	if _, _, err := s.ReadUsage(context.Background(), "zz"); err == nil {
		t.Error("a bad cursor was accepted")
	}
}

func TestRedisUsage(t *testing.T) {
	srv := redistest.Start(t)
	testUsage(t, store.NewRedisUsage(client(t, srv.URL()), "t:"), store.NewRedisUsage(client(t, srv.URL()), "t:"))
}
