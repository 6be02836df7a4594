package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestBwrapFirstUnheld: where no pidfd of bwrap's first process can be
// had (pidfd_open refused by a container's seccomp profile, or out of
// fds), the command is refused and never runs, and no process of the box
// is left (review T3: only bwrap was killed, and closing the block pipe
// let the first process run the command). Where pidfd_open fails
// altogether, no bwrap is started and the refusal lasts.
func TestBwrapFirstUnheld(t *testing.T) {
	t.Cleanup(func() { pidfdOpen = unix.PidfdOpen })
	ws := t.TempDir()
	marker := filepath.Join(ws, "ran-"+filepath.Base(ws))
	spec := Spec{Shell: "touch " + marker, Root: ws, Writable: []string{}}

	// This process's pidfd opens (the probe passes); the sandbox's does not.
	pidfdOpen = func(pid int, flags int) (int, error) {
		if pid == os.Getpid() {
			return unix.PidfdOpen(pid, flags)
		}
		return -1, unix.EMFILE
	}
	b := &Bwrap{}
	for range 3 {
		if _, err := b.Run(context.Background(), spec); !errors.Is(err, ErrUnavailable) || Lasting(err) {
			t.Fatalf("unheld sandbox: %v, want a passing ErrUnavailable", err)
		}
	}
	// Until no process names the marker (a leaked one would be running
	// the command, or blocked before it), at most 10 s.
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left := processesNaming(marker)
		if len(left) == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("processes of the refused box left: %v", left)
		}
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Fatal("the refused command ran")
	}

	pidfdOpen = func(int, int) (int, error) { return -1, unix.ENOSYS }
	b = &Bwrap{}
	_, err := b.Run(context.Background(), spec)
	if !errors.Is(err, ErrUnavailable) || !Lasting(err) || !strings.Contains(err.Error(), "pidfd_open") {
		t.Fatalf("no pidfds: %v, want a lasting ErrUnavailable", err)
	}
	pidfdOpen = unix.PidfdOpen
	if _, err2 := b.Run(context.Background(), spec); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("after a lasting refusal: %v, want %v", err2, err)
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Fatal("the refused command ran")
	}
	// The same backend, held, runs it.
	if _, err := (&Bwrap{}).Run(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(marker); err != nil {
		t.Fatalf("a held sandbox did not run the command: %v", err)
	}
}

// processesNaming returns the pids of this machine's processes whose
// command line holds s.
func processesNaming(s string) []string {
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		line, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(line, []byte(s)) {
			found = append(found, e.Name())
		}
	}
	return found
}
