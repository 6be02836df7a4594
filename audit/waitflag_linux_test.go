package audit

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWaitingFlag: a flag raised on one handle is seen from every other
// handle of the file, never from its own, and is gone once lowered or once
// its handle is closed; the same with raw system calls (Options.RawCalls),
// and one made with either is seen by the other.
func TestWaitingFlag(t *testing.T) {
	for _, raw := range []bool{false, true} {
		t.Run(map[bool]string{false: "ordinary", true: "raw"}[raw], func(t *testing.T) { testWaitingFlag(t, raw) })
	}
}

func testWaitingFlag(t *testing.T, raw bool) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func() *os.File {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	a, b, c := open(), open(), open()
	want := func(f *os.File, w bool) {
		t.Helper()
		got, err := othersWaiting(f.Fd(), !raw) // seen by the other kind of call
		if err != nil || got != w {
			t.Fatalf("othersWaiting = %v, %v; want %v", got, err, w)
		}
	}
	want(b, false)
	if err := setWaiting(a.Fd(), raw, true); err != nil {
		t.Fatal(err)
	}
	want(a, false)
	want(b, true)
	want(c, true)
	if err := setWaiting(b.Fd(), raw, true); err != nil { // two waiters
		t.Fatal(err)
	}
	want(a, true)
	if err := setWaiting(a.Fd(), raw, false); err != nil {
		t.Fatal(err)
	}
	want(c, true)
	want(a, true)
	b.Close()
	want(a, false)
	want(c, false)
	// The flag does not touch the file's bytes or the append lock.
	if busy, err := tryLockFile(c.Fd(), raw); err != nil || busy {
		t.Fatalf("tryLockFile = %v, %v", busy, err)
	}
	if data, _ := os.ReadFile(path); string(data) != "x\n" {
		t.Fatalf("the file changed: %q", data)
	}
}
