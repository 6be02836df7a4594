package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/tool"
)

func testStore(t *testing.T, s store.Store) {
	ctx := context.Background()
	if _, ok, err := s.Get(ctx, "missing"); ok || err != nil {
		t.Fatalf("Get(missing) = %v, %v", ok, err)
	}
	if err := s.Put(ctx, "k", []byte("v1"), 0); err != nil {
		t.Fatal(err)
	}
	// Timing-free: an hour is never over during the test, and the sleep
	// outlasts a millisecond however loaded the machine is.
	if err := s.Put(ctx, "long", []byte("kept"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "short", []byte("gone soon"), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := s.Get(ctx, "k"); !ok || string(v) != "v1" {
		t.Fatalf("Get(k) = %q, %v", v, ok)
	}
	if _, ok, _ := s.Get(ctx, "long"); !ok {
		t.Fatal("entry gone before its ttl")
	}
	time.Sleep(20 * time.Millisecond)
	if _, ok, _ := s.Get(ctx, "short"); ok {
		t.Fatal("entry outlived its ttl")
	}
}

func TestMemory(t *testing.T) { testStore(t, store.NewMemory()) }

func TestBolt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "idem.db")
	s, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testStore(t, s)
	s.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("store file mode: %v %v", fi.Mode(), err)
	}
	s, err = store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, ok, _ := s.Get(context.Background(), "k"); !ok || string(v) != "v1" {
		t.Errorf("after reopening Get(k) = %q, %v", v, ok)
	}
}

// TestHelperProcess is the second process of TestIdempotencyAcrossProcesses.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv("STORE_HELPER_DB")
	if path == "" {
		return
	}
	s, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		os.Exit(3)
	}
	defer s.Close()
	idem := store.NewIdempotency(s, time.Hour)
	res, replayed := idem.Do(context.Background(), "k", func() tool.Result { return tool.TextResult("second run") })
	out, _ := json.Marshal(map[string]any{"text": res.Text(), "replayed": replayed})
	os.Stdout.Write(out)
	os.Exit(0)
}

func TestIdempotencyAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "idem.db")
	s, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	idem := store.NewIdempotency(s, time.Hour)
	res, replayed := idem.Do(context.Background(), "k", func() tool.Result { return tool.TextResult("first run") })
	if replayed || res.Text() != "first run" {
		t.Fatalf("first Do: %v %q", replayed, res.Text())
	}
	s.Close() // the first process ends

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "STORE_HELPER_DB="+path)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("second process: %v", err)
	}
	var got struct {
		Text     string
		Replayed bool
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("second process printed %q", out)
	}
	if !got.Replayed || got.Text != "first run" {
		t.Errorf("after a restart the key ran again: %+v", got)
	}
}

type brokenStore struct{ *store.Memory }

func (brokenStore) Get(context.Context, string) ([]byte, bool, error) {
	return nil, false, errors.New("disk on fire")
}

func TestIdempotencyFailsClosed(t *testing.T) {
	idem := store.NewIdempotency(brokenStore{store.NewMemory()}, time.Hour)
	ran := false
	res, _ := idem.Do(context.Background(), "k", func() tool.Result { ran = true; return tool.TextResult("x") })
	if ran || res.Error == nil || res.Error.Type != tool.Unavailable {
		t.Errorf("with an unreadable store the call ran (%v) or the error is wrong: %+v", ran, res.Error)
	}
}

func TestRetryableFailuresAreNotRecorded(t *testing.T) {
	idem := store.NewIdempotency(store.NewMemory(), time.Hour)
	ctx := context.Background()
	idem.Do(ctx, "k", func() tool.Result {
		return tool.ErrorResult(tool.Errorf(tool.Unavailable, "upstream down").WithRetry(0))
	})
	res, replayed := idem.Do(ctx, "k", func() tool.Result { return tool.TextResult("worked") })
	if replayed || res.Text() != "worked" {
		t.Errorf("a retryable failure was replayed: %+v", res)
	}
	idem.Do(ctx, "k2", func() tool.Result { return tool.ErrorResult(tool.Errorf(tool.Conflict, "exists")) })
	if res, replayed := idem.Do(ctx, "k2", func() tool.Result { return tool.TextResult("ran again") }); !replayed || res.Error == nil {
		t.Errorf("a final failure must be replayed: %+v", res)
	}
}
