package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
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

// TestHelperProcess is the child of TestConcurrentProcesses: it appends to
// the log named by AUDIT_HELPER_PATH.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv("AUDIT_HELPER_PATH")
	if path == "" {
		return // not a child: nothing to do
	}
	n, _ := strconv.Atoi(os.Getenv("AUDIT_HELPER_N"))
	l, err := Open(path, Options{})
	io.Copy(io.Discard, os.Stdin) // wait for the parent's start signal
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	for i := range n {
		rec := testRecord(i)
		rec.Principal = "pid-" + strconv.Itoa(os.Getpid())
		if err := l.Append(context.Background(), rec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
	if err := l.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	os.Exit(0)
}

func TestConcurrentProcesses(t *testing.T) {
	const procs, each = 2, 1000
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	cmds := make([]*exec.Cmd, procs)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), "AUDIT_HELPER_PATH="+path, "AUDIT_HELPER_N="+strconv.Itoa(each))
		cmd.Stderr = os.Stderr
		cmds[i] = cmd
	}
	var starts []io.WriteCloser
	for _, cmd := range cmds {
		w, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, w)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range starts {
		w.Close() // go
	}
	// This process appends too, while the children run.
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range each {
		if err := l.Append(context.Background(), testRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	rep := verifyFile(t, path)
	if !rep.OK || rep.Records != (procs+1)*each {
		t.Fatalf("report: ok=%v records=%d problems=%v", rep.OK, rep.Records, rep.Problems)
	}
	// The processes really interleaved: count the changes of writer.
	recs, err := Select(mustOpen(t, path), Query{})
	if err != nil {
		t.Fatal(err)
	}
	writers, switches := map[string]bool{}, 0
	for i, r := range recs {
		writers[r.Principal] = true
		if i > 0 && r.Principal != recs[i-1].Principal {
			switches++
		}
	}
	t.Logf("%d records, the writer changed %d times", len(recs), switches)
	if len(writers) != procs+1 {
		t.Errorf("records from %d writers, want %d", len(writers), procs+1)
	}
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
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
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
