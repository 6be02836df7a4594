//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"context"
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
