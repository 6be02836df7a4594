package audit

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestConcurrentGoroutines(t *testing.T) {
	const workers, each = 64, 40
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				rec := testRecord(w*each + i)
				if err := l.Append(context.Background(), rec); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep := verifyFile(t, path)
	if !rep.OK || rep.Records != workers*each {
		t.Fatalf("report: ok=%v records=%d problems=%v", rep.OK, rep.Records, rep.Problems)
	}
}

// TestHelperProcess is the child of the tests with several processes: it
// appends to the log named by AUDIT_HELPER_PATH, as principal
// AUDIT_HELPER_NAME (default its pid). It waits for its standard input to
// close, then appends AUDIT_HELPER_N records; with AUDIT_HELPER_N=busy it
// appends from the start, one record after the other, until its standard
// input closes, with an idle timer of an hour (holdIdle): it lets the lock
// go only when it looks on an append.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv("AUDIT_HELPER_PATH")
	if path == "" {
		return // not a child: nothing to do
	}
	name := cmp.Or(os.Getenv("AUDIT_HELPER_NAME"), "pid-"+strconv.Itoa(os.Getpid()))
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	busy := os.Getenv("AUDIT_HELPER_N") == "busy"
	if busy {
		holdIdle = time.Hour
	}
	l, err := Open(path, Options{})
	if err != nil {
		fail(err)
	}
	var stop atomic.Bool
	closed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		stop.Store(true)
		close(closed)
	}()
	n := 0
	if !busy {
		<-closed // the parent's start signal
		n, _ = strconv.Atoi(os.Getenv("AUDIT_HELPER_N"))
	}
	for i := 0; busy && !stop.Load() || i < n; i++ {
		rec := testRecord(i)
		rec.Principal = name
		if err := l.Append(context.Background(), rec); err != nil {
			fail(err)
		}
	}
	if err := l.Close(); err != nil {
		fail(err)
	}
	os.Exit(0)
}

// helper starts TestHelperProcess appending n records ("busy": until its
// standard input closes) to path as principal name; closing the returned
// writer starts it (n) or stops it (busy).
func helper(t *testing.T, path, name, n string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "AUDIT_HELPER_PATH="+path, "AUDIT_HELPER_N="+n, "AUDIT_HELPER_NAME="+name)
	cmd.Stderr = os.Stderr
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.Close()
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, w
}

// TestConcurrentProcesses has several processes, and goroutines in this
// one, append to one log at once: every record is there, in one chain.
func TestConcurrentProcesses(t *testing.T) {
	for _, tc := range []struct {
		procs, goroutines, each int
	}{
		{procs: 2, goroutines: 1, each: 1000},
		{procs: 4, goroutines: 4, each: 300},
		{procs: 6, goroutines: 2, each: 100},
	} {
		t.Run(fmt.Sprintf("%dx%d", tc.procs, tc.goroutines), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			var cmds []*exec.Cmd
			var starts []io.WriteCloser
			for i := range tc.procs {
				cmd, w := helper(t, path, "child-"+strconv.Itoa(i), strconv.Itoa(tc.each))
				cmds, starts = append(cmds, cmd), append(starts, w)
			}
			for _, w := range starts {
				w.Close() // go
			}
			// This process appends too, while the children run.
			l, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for g := range tc.goroutines {
				wg.Go(func() {
					for i := range tc.each {
						rec := testRecord(i)
						rec.Principal = "parent-" + strconv.Itoa(g)
						if err := l.Append(context.Background(), rec); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			for _, cmd := range cmds {
				if err := cmd.Wait(); err != nil {
					t.Fatalf("child: %v", err)
				}
			}
			rep := verifyFile(t, path)
			if want := (tc.procs + tc.goroutines) * tc.each; !rep.OK || rep.Records != want || len(rep.Problems) > 0 {
				t.Fatalf("report: ok=%v records=%d (want %d) problems=%v", rep.OK, rep.Records, want, rep.Problems)
			}
			recs, err := Select(mustOpen(t, path), Query{})
			if err != nil {
				t.Fatal(err)
			}
			count, switches := map[string]int{}, 0
			for i, r := range recs {
				count[r.Principal]++
				if i > 0 && r.Principal != recs[i-1].Principal {
					switches++
				}
			}
			t.Logf("%d records, the writer changed %d times", len(recs), switches)
			if len(count) != tc.procs+tc.goroutines {
				t.Errorf("records from %d writers, want %d: %v", len(count), tc.procs+tc.goroutines, count)
			}
			for who, n := range count {
				if n != tc.each {
					t.Errorf("%s wrote %d records, want %d", who, n, tc.each)
				}
			}
		})
	}
}

// TestBusyWriterLetsOthersIn: while one process appends without a pause,
// other processes (this one, and one started after it) still get their
// turns, within the default LockTimeout, and the chain holds.
func TestBusyWriterLetsOthersIn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	busy, stopBusy := helper(t, path, "busy", "busy")
	waitGrowth(t, path, 0)

	other, startOther := helper(t, path, "other", "300")
	startOther.Close()
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		rec := testRecord(i)
		rec.Principal = "parent"
		if err := l.Append(context.Background(), rec); err != nil {
			t.Fatal(err) // ErrLocked: the busy writer kept the lock
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := other.Wait(); err != nil {
		t.Fatalf("the other child: %v", err)
	}
	if busy.ProcessState != nil {
		t.Fatal("the busy writer stopped early")
	}
	waitGrowth(t, path, sizeOf(t, path)) // it is still busy, and was all along
	stopBusy.Close()
	if err := busy.Wait(); err != nil {
		t.Fatalf("the busy child: %v", err)
	}
	rep := verifyFile(t, path)
	if !rep.OK || len(rep.Problems) > 0 {
		t.Fatalf("report: ok=%v records=%d problems=%v", rep.OK, rep.Records, rep.Problems)
	}
	recs, err := Select(mustOpen(t, path), Query{})
	if err != nil {
		t.Fatal(err)
	}
	first, last := map[string]int{}, map[string]int{}
	for i, r := range recs {
		if _, ok := first[r.Principal]; !ok {
			first[r.Principal] = i
		}
		last[r.Principal] = i
	}
	for _, who := range []string{"parent", "other"} {
		if !(first["busy"] < first[who] && last[who] < last["busy"]) {
			t.Errorf("%s's records (%d to %d) are not inside the busy writer's (%d to %d)", who, first[who], last[who], first["busy"], last["busy"])
		}
	}
}

// TestKilledWriterLetsGo: a process killed while it holds the lock (it
// appends without a pause) frees it; the next writer continues the chain.
func TestKilledWriterLetsGo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	busy, _ := helper(t, path, "busy", "busy")
	waitGrowth(t, path, 0)
	if err := busy.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	busy.Wait()
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := l.Append(context.Background(), testRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// SIGKILL may land inside the busy writer's write(2): Linux checks for
	// a fatal signal between the pages it copies, so a record across a page
	// boundary can be cut short. That is the crash a torn line records: at
	// most one, a warning, with the chain going on across it.
	rep := verifyFile(t, path)
	torn := 0
	for _, p := range rep.Problems {
		if p.Kind == KindTorn && p.Warning {
			torn++
		}
	}
	if torn > 1 || torn != len(rep.Problems) || rep.Omitted != 0 || rep.Records < 10 {
		t.Fatalf("report: ok=%v records=%d problems=%v", rep.OK, rep.Records, rep.Problems)
	}
}

// sizeOf is the size of the file at path (0 when there is none).
func sizeOf(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// waitGrowth waits until the file at path has grown by 100 records' worth
// beyond size.
func waitGrowth(t *testing.T, path string, size int64) {
	t.Helper()
	for sizeOf(t, path) < size+100*400 {
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTwoLogsTakeTurns: two Logs of one file in one process (two writers
// as far as the lock is concerned, one of them making raw system calls)
// both append without a pause; neither keeps the other out, and the chain
// holds.
func TestTwoLogsTakeTurns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var logs [2]*Log
	for i := range logs {
		l, err := Open(path, Options{LockTimeout: time.Minute, RawCalls: i == 1})
		if err != nil {
			t.Fatal(err)
		}
		logs[i] = l
	}
	const each = 500
	var done [2]atomic.Bool
	var wg sync.WaitGroup
	for i, l := range logs {
		wg.Go(func() {
			// Keep appending until both did their share: each is busy while
			// the other needs its turns.
			for n := 0; n < each || !done[1-i].Load(); n++ {
				rec := testRecord(n)
				rec.Principal = "log-" + strconv.Itoa(i)
				if err := l.Append(context.Background(), rec); err != nil {
					t.Error(err)
					done[i].Store(true)
					return
				}
				if n == each-1 {
					done[i].Store(true)
				}
			}
		})
	}
	wg.Wait()
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	rep := verifyFile(t, path)
	if !rep.OK || rep.Records < 2*each || len(rep.Problems) > 0 {
		t.Fatalf("report: ok=%v records=%d problems=%v", rep.OK, rep.Records, rep.Problems)
	}
}

// TestSparseWriterLetsGo: a Log keeps the lock after an append that
// followed the one before within holdIdle, and lets it go as it ends an
// append that came later than that, so a writer appending less often than
// every holdIdle needs no timer to wake and let go between its appends.
// (Where the waiting flag is missing, every append lets go.)
func TestSparseWriterLetsGo(t *testing.T) {
	defer func(d time.Duration) { holdIdle = d }(holdIdle)
	l, path, held := watchedLog(t)
	defer l.Close()
	appendOne := func(n int) {
		t.Helper()
		if err := l.Append(context.Background(), testRecord(n)); err != nil {
			t.Fatal(err)
		}
	}
	holdIdle = time.Hour // every append follows the last within holdIdle
	appendOne(0)
	appendOne(1)
	if held() != holdLock {
		t.Fatalf("after a busy writer's append the lock is held: %v, want %v", !holdLock, holdLock)
	}
	holdIdle = time.Millisecond
	appendOne(2) // arms the idle timer with the new holdIdle
	for n := 3; n < 6; n++ {
		time.Sleep(5 * holdIdle)
		appendOne(n)
		if held() {
			t.Fatalf("append %d came %v after the one before and kept the lock", n, 5*holdIdle)
		}
	}
	if rep := verifyFile(t, path); !rep.OK || rep.Records != 6 {
		t.Fatalf("report: ok=%v records=%d problems=%v", rep.OK, rep.Records, rep.Problems)
	}
}

// TestSteadyWriterKeepsLock: a Log appending every few milliseconds (a
// gateway serving one call at a time) keeps the lock between its appends:
// holdIdle is long beside the kernel's tick (10 ms at 100 Hz, 4 at 250),
// so neither does every append take and let go of the lock nor is the idle
// timer due within a tick of most of the process's sleeps (see holdIdle).
func TestSteadyWriterKeepsLock(t *testing.T) {
	if !holdLock {
		t.Skip("without the waiting flag every append lets the lock go")
	}
	if holdIdle < 50*time.Millisecond {
		t.Fatalf("holdIdle %v: a timer due that soon is within a tick (10 ms at 100 Hz) of a sleep for a fifth of the time or more", holdIdle)
	}
	l, path, held := watchedLog(t)
	defer l.Close()
	for n := range 10 {
		time.Sleep(3 * time.Millisecond)
		if err := l.Append(context.Background(), testRecord(n)); err != nil {
			t.Fatal(err)
		}
		if !held() {
			t.Fatalf("append %d, 3 ms after the one before, let the lock go", n)
		}
	}
	if rep := verifyFile(t, path); !rep.OK || rep.Records != 10 {
		t.Fatalf("report: ok=%v records=%d problems=%v", rep.OK, rep.Records, rep.Problems)
	}
}

// TestIdleTimerNotPushedBack: an append does not touch the idle timer (a
// reset timer still wakes the runtime when it was first due); the timer,
// once it fires, waits for what is left of holdIdle since the last append,
// and lets the lock go only when holdIdle passed without one.
func TestIdleTimerNotPushedBack(t *testing.T) {
	if !holdLock {
		t.Skip("without the waiting flag every append lets the lock go: no idle timer")
	}
	defer func(d time.Duration) { holdIdle = d }(holdIdle)
	holdIdle = time.Hour
	l, path, held := watchedLog(t)
	defer l.Close()
	if !l.check.Stop() {
		t.Fatal("Open took the lock without arming the idle timer")
	}
	for n := range 3 {
		if err := l.Append(context.Background(), testRecord(n)); err != nil {
			t.Fatal(err)
		}
	}
	if l.check.Stop() {
		t.Fatal("an append armed the idle timer again")
	}
	if !held() {
		t.Fatal("a busy writer let the lock go")
	}
	l.checkHold() // fired within holdIdle of the last append
	if !held() {
		t.Fatal("the idle timer let the lock go within holdIdle of an append")
	}
	if !l.check.Stop() {
		t.Fatal("the idle timer did not wait again for the rest of holdIdle")
	}
	l.mu.Lock()
	l.last = time.Now().Add(-holdIdle)
	l.mu.Unlock()
	l.checkHold() // fired holdIdle after the last append
	if held() {
		t.Fatal("the idle timer kept the lock after holdIdle without an append")
	}
	if err := l.Append(context.Background(), testRecord(3)); err != nil {
		t.Fatal(err)
	}
	if rep := verifyFile(t, path); !rep.OK || rep.Records != 4 {
		t.Fatalf("report: ok=%v records=%d problems=%v", rep.OK, rep.Records, rep.Problems)
	}
}

// watchedLog opens a Log on a new file, and a second handle of the file
// that held asks whether the Log holds the file lock (lockHeld). The
// caller closes the Log.
func watchedLog(t *testing.T) (l *Log, path string, held func() bool) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	other := mustOpen(t, path)
	return l, path, func() bool { t.Helper(); return lockHeld(t, other) }
}

// lockHeld reports whether another handle holds the file lock of other's
// file: other tries it, and lets it go again when it got it.
func lockHeld(t testing.TB, other *os.File) bool {
	t.Helper()
	busy, err := tryLockFile(other.Fd(), false)
	if err != nil {
		t.Fatal(err)
	}
	if !busy {
		if err := unlockFile(other.Fd(), false); err != nil {
			t.Fatal(err)
		}
	}
	return busy
}

func mustOpen(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "dirs")
	path := filepath.Join(dir, "audit.jsonl")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %04o, want 0600", fi.Mode().Perm())
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		di, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if di.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %04o, want 0700", d, di.Mode().Perm())
		}
	}
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	real := writeLog(t, 2)
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling.jsonl")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open.jsonl")
	if err := os.WriteFile(open, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want error
	}{
		{link, ErrSymlink},
		{dangling, ErrSymlink},
		{dir, ErrNotRegular},
		{fifo, ErrNotRegular},
		{open, ErrInsecureMode},
	} {
		l, err := Open(tc.path, Options{})
		if err == nil {
			l.Close()
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("Open(%s) = %v, want %v", filepath.Base(tc.path), err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); !os.IsNotExist(err) {
		t.Errorf("a dangling link's target was created: %v", err)
	}
	if rep := verifyFile(t, real); !rep.OK || rep.Records != 2 {
		t.Errorf("the link's target changed: %+v", rep)
	}
}

func TestExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, Options{Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := l.Append(context.Background(), testRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Another writer cannot get in while l is open…
	if other, err := Open(path, Options{LockTimeout: 30 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		if err == nil {
			other.Close()
		}
		t.Fatalf("Open beside an exclusive Log = %v, want ErrLocked", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// …and continues the chain after Close.
	other, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Append(context.Background(), testRecord(5)); err != nil {
		t.Fatal(err)
	}
	other.Close()
	if rep := verifyFile(t, path); !rep.OK || rep.Records != 6 {
		t.Fatalf("report = %+v", rep)
	}
}

// TestRawCallsSameLog: a Log with Options.RawCalls writes the same bytes as
// one without, for the same records, whether or not another writer
// appended to the file between them (the raw size and lock calls see the
// other's appends, and the chain goes on from them).
func TestRawCallsSameLog(t *testing.T) {
	var files [2][]byte
	for i, raw := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		l, err := Open(path, Options{RawCalls: raw})
		if err != nil {
			t.Fatal(err)
		}
		other, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for n := range 40 {
			w := l
			if n%7 == 3 {
				w = other
			}
			if err := w.Append(context.Background(), testRecord(n)); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []*Log{l, other} {
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if files[i], err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
		if rep := verifyFile(t, path); rep.Records != 40 {
			t.Fatalf("raw %v: report: ok=%v records=%d problems=%v", raw, rep.OK, rep.Records, rep.Problems)
		}
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Fatalf("the logs differ:\n%s\n---\n%s", files[0], files[1])
	}
}
