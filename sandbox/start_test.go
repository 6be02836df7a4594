//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestStartStreams starts a long-lived command: it answers each line of its
// standard input as it comes, its standard error goes where it is told,
// its home folder is its own and writable, and when it is killed the
// daemon it double-forked goes with it.
func TestStartStreams(t *testing.T) {
	ws := t.TempDir()
	pidFile := filepath.Join(ws, "daemon.pid")
	stderr := &lockedWriter{w: &bytes.Buffer{}}
	script := `(sleep 3071 & echo $! > ` + pidFile + `) ; echo hi >&2; echo x > "$HOME/state" ;` +
		` while read line; do echo "got $line $(cat $HOME/state)"; done`
	n := &Native{}
	defer n.Close()
	p, err := n.Start(context.Background(), Spec{Shell: script, Root: ws, PrivateHome: true,
		Limits: Limits{CPU: time.Hour}}, stderr)
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(p.Stdout)
	for _, w := range []string{"one", "two"} {
		if _, err := p.Stdin.Write([]byte(w + "\n")); err != nil {
			t.Fatal(err)
		}
		line, err := out.ReadString('\n')
		if err != nil || line != "got "+w+" x\n" {
			t.Fatalf("answer %q, %v; stderr %s", line, err, stderr)
		}
	}
	// The daemon's pid is its pid in the sandbox; find it on the host by
	// its command line and namespace instead: it is a sleep 3071 whose pid
	// namespace is not ours.
	host := daemons(t)
	if len(host) == 0 {
		t.Fatal("the double-forked daemon is not running (the test would prove nothing)")
	}
	p.Kill()
	o, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if o.Killed != "stopped" || o.Protections.Seccomp == false {
		t.Errorf("outcome %+v", o)
	}
	if _, err := out.ReadString('\n'); err == nil {
		t.Error("stdout did not end with the command")
	}
	for _, pid := range host {
		for i := 0; syscall.Kill(pid, 0) == nil; i++ {
			if i > 200 {
				t.Fatalf("the daemon %d outlived the command", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if !strings.Contains(stderr.String(), "hi") {
		t.Errorf("stderr %q", stderr.String())
	}
}

// daemons returns the host pids of `sleep 3071` processes in another pid
// namespace than this test's.
func daemons(t *testing.T) []int {
	mine, _ := os.Readlink("/proc/self/ns/pid")
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		ns, _ := os.Readlink("/proc/" + e.Name() + "/ns/pid")
		if string(cmd) == "sleep\x003071\x00" && ns != mine {
			out = append(out, pid)
		}
	}
	return out
}

// TestStartFails: a command that cannot start is an error of Start.
func TestStartFails(t *testing.T) {
	n := &Native{}
	defer n.Close()
	_, err := n.Start(context.Background(), Spec{Argv: []string{"/nonexistent/server"}, Root: t.TempDir()}, nil)
	if err == nil {
		t.Fatal("Start of a missing program succeeded")
	}
}

// TestStartFailedExecReleasesNotify: a started command whose program
// cannot be executed (exec format error) fails after the seccomp
// supervisor started, and its notify descriptor is released each time
// (it was kept, one per failed Start); a running command holds one, and
// lets it go when it ends.
func TestStartFailedExecReleasesNotify(t *testing.T) {
	n := &Native{}
	defer n.Close()
	ws := t.TempDir()
	prog := filepath.Join(ws, "notexec")
	must(t, os.WriteFile(prog, []byte("\x00\x01not a program\n"), 0o755))
	before := notifyFds(t)
	p, err := n.Start(context.Background(), Spec{Shell: "read line", Root: ws}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if held := notifyFds(t); held != before+1 {
		t.Fatalf("a running command holds %d seccomp notify descriptors more, want 1 (the test would prove nothing)", held-before)
	}
	p.Kill()
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		_, err := n.Start(context.Background(), Spec{Argv: []string{prog}, Root: ws}, nil)
		if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "exec format error") {
			t.Fatalf("Start of a file that is no program: %v, want its exec error", err)
		}
	}
	if after := notifyFds(t); after != before {
		t.Errorf("seccomp notify descriptors open: %d before, %d after a command and 10 failed execs", before, after)
	}
}

// notifyFds counts the seccomp notify descriptors this process holds.
func notifyFds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l == "anon_inode:seccomp notify" {
			n++
		}
	}
	return n
}

// lockedWriter is a writer safe for concurrent use.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// TestStartTakesWarmed: Start takes the helper that WarmFor started ahead
// for its very limits (the command runs in that process, confined as
// ever), and leaves it to wait when its limits differ; a second WarmFor
// while one waits starts none.
func TestStartTakesWarmed(t *testing.T) {
	n := &Native{}
	defer n.Close()
	warm := Limits{CPU: time.Hour, Memory: 200 << 20}
	n.WarmFor(warm)
	n.WarmFor(warm)
	waiting := warmedHelpers(t)
	if len(waiting) != 1 {
		t.Fatalf("two WarmFor started %d helpers, want 1", len(waiting))
	}
	w := waiting[0]
	start := func(l Limits) *Process {
		t.Helper()
		p, err := n.Start(context.Background(), Spec{Argv: []string{"cat"}, Root: t.TempDir(), Limits: l}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Kill(); p.Wait() })
		return p
	}
	start(Limits{CPU: time.Hour, Memory: 300 << 20})
	if c := cmdline(w); c != initArg0+"\x00native\x00" {
		t.Fatalf("a Start with other limits took the helper started ahead (it runs %q)", c)
	}
	p := start(warm)
	if c := cmdline(w); c != "cat\x00" {
		t.Fatalf("Start did not take the helper started ahead for its limits (it runs %q)", c)
	}
	if len(childHelpers(t)) != 0 {
		t.Error("a helper is still waiting")
	}
	if mine, _ := os.Readlink("/proc/self/ns/pid"); mine == nsOf(w, "pid") || !p.Protections.Seccomp || p.Protections.NoNewPrivs == false {
		t.Errorf("the command in the helper started ahead is not confined: %+v", p.Protections)
	}
	if _, err := p.Stdin.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(p.Stdout).ReadString('\n'); err != nil || line != "hello\n" {
		t.Fatalf("answer %q, %v", line, err)
	}
}

// TestStartAfterWarmedDied: a helper started ahead that died while it
// waited (review 6, W4) is not given the command: Start runs it in a
// helper of its own.
func TestStartAfterWarmedDied(t *testing.T) {
	n := &Native{}
	defer n.Close()
	l := Limits{CPU: time.Hour}
	n.WarmFor(l)
	waiting := warmedHelpers(t)
	must(t, syscall.Kill(waiting[0], syscall.SIGKILL))
	for i := 0; syscall.Kill(waiting[0], 0) == nil; i++ {
		if i > 1000 {
			t.Fatal("the killed helper was not reaped")
		}
		time.Sleep(10 * time.Millisecond)
	}
	p, err := n.Start(context.Background(), Spec{Argv: []string{"cat"}, Root: t.TempDir(), Limits: l}, nil)
	if err != nil {
		t.Fatalf("Start after the helper started ahead died: %v", err)
	}
	defer func() { p.Kill(); p.Wait() }()
	if _, err := p.Stdin.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(p.Stdout).ReadString('\n'); err != nil || line != "hello\n" {
		t.Fatalf("answer %q, %v", line, err)
	}
}

// warmedHelpers waits until a helper started ahead is waiting and returns
// the pids of those that are (childHelpers).
func warmedHelpers(t *testing.T) []int {
	t.Helper()
	for range 1000 {
		time.Sleep(10 * time.Millisecond)
		if waiting := childHelpers(t); len(waiting) > 0 {
			return waiting
		}
	}
	t.Fatal("no helper was started ahead")
	return nil
}

// childHelpers returns the pids of this process's children that are
// sandbox helpers waiting for their spec.
func childHelpers(t *testing.T) []int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		// pid (comm) state ppid …: comm may hold spaces, the last ")" ends it.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) && cmdline(pid) == initArg0+"\x00native\x00" {
			out = append(out, pid)
		}
	}
	return out
}

func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return string(b)
}

func nsOf(pid int, ns string) string {
	s, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/" + ns)
	return s
}
