//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the stream's writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls until cond holds, failing the test after a long while (a
// bound on a hang, not a timed assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStreamInterleavedAndInput(t *testing.T) {
	e := newEnv(t)
	var out syncBuffer
	in, w := io.Pipe()
	done := make(chan Outcome, 1)
	go func() {
		done <- e.run(t, Spec{Shell: `echo out; echo err >&2; read line; echo "got $line"`, Stream: &out, Input: in})
	}()
	waitFor(t, "the first lines", func() bool { return strings.Contains(out.String(), "err\n") })
	io.WriteString(w, "hello\n")
	o := <-done
	w.Close()
	if o.ExitCode != 0 || out.String() != "out\nerr\ngot hello\n" {
		t.Fatalf("exit %d, stream %q", o.ExitCode, out.String())
	}
	if len(o.Stdout)+len(o.Stderr) != 0 {
		t.Fatalf("a streamed command's output was kept as well: %q %q", o.Stdout, o.Stderr)
	}
}

func TestStreamTTY(t *testing.T) {
	e := newEnv(t)
	var out syncBuffer
	o := e.run(t, Spec{Shell: `test -t 0 && test -t 1 && stty size && echo "$TERM"`, Stream: &out, TTY: true,
		Env: []string{"TERM=xterm-256color"}})
	if o.ExitCode != 0 || out.String() != "24 80\r\nxterm-256color\r\n" {
		t.Fatalf("exit %d, terminal output %q", o.ExitCode, out.String())
	}
}

func TestStartedKillsWholeTree(t *testing.T) {
	e := newEnv(t)
	var out syncBuffer
	procs := make(chan *os.Process, 1)
	done := make(chan Outcome, 1)
	// A double-forked child, away from its parent's group and session.
	go func() {
		done <- e.run(t, Spec{Shell: `(setsid sh -c 'sleep 1000 & echo $!' &) ; sleep 1000`, Stream: &out,
			Started: func(p *os.Process) { procs <- p }})
	}()
	p := <-procs
	waitFor(t, "the grandchild's pid", func() bool { return strings.HasSuffix(out.String(), "\n") })
	p.Signal(syscall.SIGKILL)
	o := <-done
	if o.Signal != "SIGKILL" {
		t.Fatalf("outcome %+v", o)
	}
}

func TestPodSharesLoopback(t *testing.T) {
	e := newEnv(t)
	pod, other := &Pod{}, &Pod{}
	defer pod.Close()
	defer other.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	served := make(chan Outcome, 1)
	go func() {
		o, _ := e.native.Run(ctx, Spec{Root: e.ws, Argv: []string{"python3", "-m", "http.server", "--bind", "127.0.0.1", "8765"},
			Stream: &out, Pod: pod, Limits: Limits{Wall: time.Minute}})
		served <- o
	}()
	fetch := `python3 -c 'import urllib.request as u; print(u.urlopen("http://127.0.0.1:8765/").status)'`
	waitFor(t, "the server to answer in its pod", func() bool {
		return e.run(t, Spec{Shell: fetch, Pod: pod}).ExitCode == 0
	})
	if o := e.run(t, Spec{Shell: fetch, Pod: other}); o.ExitCode == 0 {
		t.Fatalf("another pod reached the server: %s", o.Stdout)
	}
	if o := e.run(t, Spec{Shell: fetch}); o.ExitCode == 0 {
		t.Fatalf("a command outside any pod reached the server: %s", o.Stdout)
	}
	cancel()
	<-served
}

// TestPodSpare: with Prestart, a pod keeps helpers started ahead once a
// command is over; the next command takes the oldest, runs in the pod's
// network namespace as the first did, and another is started ahead; Close
// lets them go.
func TestPodSpare(t *testing.T) {
	e := newEnv(t)
	pod := &Pod{}
	netns := func() string {
		t.Helper()
		o := e.run(t, Spec{Argv: []string{"readlink", "/proc/self/ns/net"}, Pod: pod})
		if o.ExitCode != 0 || !strings.HasPrefix(string(o.Stdout), "net:[") {
			t.Fatalf("readlink: %+v %s", o, o.Stderr)
		}
		return string(o.Stdout)
	}
	spare := func() *helper { // the newest
		pod.mu.Lock()
		defer pod.mu.Unlock()
		if len(pod.impl.spares) == 0 {
			return nil
		}
		return pod.impl.spares[len(pod.impl.spares)-1]
	}
	first := netns()
	h := spare()
	if h == nil {
		t.Fatal("no helper started ahead in the pod")
	}
	if second := netns(); second != first {
		t.Fatalf("the command through the spare ran in %s, the pod is %s", second, first)
	}
	next := spare()
	if next == nil || next == h {
		t.Fatal("the spare was not taken and replaced")
	}
	pod.Close()
	<-next.gone
}

// TestPodSpareDied: a helper started ahead in a pod that dies while it
// waits (killed by another command of the pod, out of memory) is never
// handed the pod's next command.
func TestPodSpareDied(t *testing.T) {
	e := newEnv(t)
	pod := &Pod{}
	defer pod.Close()
	o := e.run(t, Spec{Argv: []string{"readlink", "/proc/self/ns/net"}, Pod: pod})
	netns := strings.TrimSpace(string(o.Stdout))
	if o.ExitCode != 0 || !strings.HasPrefix(netns, "net:[") {
		t.Fatalf("readlink: %+v %s", o, o.Stderr)
	}
	pod.mu.Lock()
	ahead := slices.Clone(pod.impl.spares)
	pod.mu.Unlock()
	if len(ahead) == 0 {
		t.Fatal("no helper started ahead in the pod")
	}
	// The pod's waiting helpers: its starter's children, in its network.
	var killed []int
	for i := 0; len(killed) < len(ahead); i++ {
		if i > 1000 {
			t.Fatalf("found %d of the pod's %d helpers started ahead", len(killed), len(ahead))
		}
		killed = killed[:0]
		ents, _ := os.ReadDir("/proc")
		for _, ent := range ents {
			pid, err := strconv.Atoi(ent.Name())
			if err != nil || cmdline(pid) != initArg0+"\x00native\x00" {
				continue
			}
			if ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)); ns == netns {
				killed = append(killed, pid)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, pid := range killed {
		must(t, syscall.Kill(pid, syscall.SIGKILL))
	}
	// Each leaves the pod's pool once its end is seen (without the fix,
	// not before its idle minute: the next command then met a dead one).
	for _, h := range ahead {
		select {
		case <-h.gone:
		case <-time.After(20 * time.Second):
		}
	}
	o, err := e.native.Run(t.Context(), Spec{Shell: "echo hi", Root: e.ws, Pod: pod})
	if err != nil || o.ExitCode != 0 || string(o.Stdout) != "hi\n" {
		t.Fatalf("the pod's command after its helpers started ahead died: %+v %v", o, err)
	}
}
