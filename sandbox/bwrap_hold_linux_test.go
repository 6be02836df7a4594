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

// TestBwrapKillReachesSandbox: a kill on timeout, cancel or the output
// limit reaches the sandbox's first process, not bwrap alone, and nothing
// of the sandbox outlives Run. The first process binds itself to bwrap's life
// (--die-with-parent) only after it read the block byte: one stopped in
// that window (here by SIGSTOP, before the byte is written) outlived a
// kill of bwrap and, continued, ran the command unwatched.
func TestBwrapKillReachesSandbox(t *testing.T) {
	t.Cleanup(func() { hookBeforeRelease = nil })
	for _, how := range []string{"timeout", "cancelled", "output"} {
		t.Run(how, func(t *testing.T) {
			ws := t.TempDir()
			marker := filepath.Join(ws, "ran")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			first := -1
			hookBeforeRelease = func(pid int) {
				fd, err := unix.PidfdOpen(pid, 0)
				if err != nil {
					t.Errorf("pidfd of the first process: %v", err)
					return
				}
				first = fd
				switch how {
				case "cancelled":
					cancel()
					fallthrough
				case "timeout":
					unix.PidfdSendSignal(fd, unix.SIGSTOP, nil, 0)
				}
			}
			shell, wall := "touch "+marker, time.Second
			if how == "output" { // killed past 64 MiB of output
				shell, wall = "yes; touch "+marker, time.Minute
			}
			o, err := (&Bwrap{}).Run(ctx, Spec{Shell: shell, Root: ws, Writable: []string{},
				Limits: Limits{Wall: wall, Output: 1024}})
			if err != nil {
				t.Fatal(err)
			}
			if first < 0 {
				t.Fatal("the hook was not called")
			}
			defer unix.Close(first)
			if o.Killed != how {
				t.Errorf("killed %q, want %q", o.Killed, how)
			}
			// Gone when Run returned, or else let go on: a first process
			// left over reads its byte and runs the command.
			n, _ := unix.Poll([]unix.PollFd{{Fd: int32(first), Events: unix.POLLIN}}, 0)
			if n != 1 {
				t.Error("the sandbox's first process outlived Run")
				unix.PidfdSendSignal(first, unix.SIGCONT, nil, 0)
				unix.Poll([]unix.PollFd{{Fd: int32(first), Events: unix.POLLIN}}, 10000)
			}
			if _, err := os.Lstat(marker); err == nil {
				t.Error("the killed sandbox ran its command")
			}
		})
	}
}
