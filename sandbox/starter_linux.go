package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
)

// starterArg0 is the argv[0] by which a process knows it is the starter,
// podStarterArg0 the starter of a pod (see Pod).
const (
	starterArg0    = "toolgate-sandbox-starter"
	podStarterArg0 = "toolgate-sandbox-pod"
)

// A starter is a small long-lived process (the helper program, started
// once) that starts helpers for a Native with Prestart: forking it costs a
// fraction of forking a large program (its page tables, and the pages the
// program writes while the child shares them). Go cannot vfork a child
// with a new user namespace, so every helper start was a full fork of the
// caller: 3 ms of CPU per command for toolgate serve, measured.
//
// The starter clones each helper with CLONE_PARENT: the helper is this
// process's child, as one forked here would be. This process waits for
// it (its exit status and resource usage) and kills it; its parent-death
// signal is that of the thread that started the starter, which is kept
// until every helper started through the starter is gone. When the
// starter fails (killed, say), the helper is forked here instead, with
// files of its own, and the starter is started again for the next one; a
// helper it may have started just before failing ends at once (its
// control socket is closed), left unwaited for.
type starter struct {
	mu      sync.Mutex // one request at a time
	sock    *os.File
	msgs    *msgReader
	broken  atomic.Bool   // the starter did not answer: not used again (read without mu: usable)
	exited  chan struct{} // closed once the starter process is gone
	helpers helperCount   // helpers started through it and not yet waited for
}

// helperCount counts helpers; unlike a WaitGroup's, its count may rise
// from zero while another goroutine waits for it to be zero. zero.L is mu.
type helperCount struct {
	mu   sync.Mutex
	n    int
	zero sync.Cond
}

func (c *helperCount) add(d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n += d; c.n == 0 {
		c.zero.Broadcast()
	}
}

func (c *helperCount) done() { c.add(-1) }

// wait returns once the count is zero.
func (c *helperCount) wait() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.n > 0 {
		c.zero.Wait()
	}
}

type starterReply struct {
	Pid   int    `json:",omitempty"`
	Error string `json:",omitempty"`
}

// startStarter starts exe as a starter; with pod, in new user and network
// namespaces, whose loopback it brings up, and the helpers it starts stay
// in them.
func startStarter(exe string, pod bool) (*starter, error) {
	sock, child, err := socketPair("sandbox-starter")
	if err != nil {
		return nil, err
	}
	s := &starter{sock: sock, msgs: &msgReader{f: sock}, exited: make(chan struct{})}
	s.helpers.zero.L = &s.helpers.mu
	started := make(chan error, 1)
	go func() {
		// The helpers' parent-death signal is this thread's: it is kept
		// (locked, never handed back) until the last of them is gone,
		// and ends with this goroutine.
		runtime.LockOSThread()
		arg0, sys := starterArg0, &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
		if pod {
			arg0, sys = podStarterArg0, helperAttr(0)
			sys.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
		}
		p, err := os.StartProcess(exe, []string{arg0}, &os.ProcAttr{
			Env:   []string{"GOMAXPROCS=1"},
			Files: []*os.File{nil, nil, os.Stderr, child},
			Sys:   sys,
		})
		child.Close()
		started <- err
		if err != nil {
			close(s.exited)
			return
		}
		p.Wait()
		close(s.exited)
		s.helpers.wait()
	}()
	if err := <-started; err != nil {
		sock.Close()
		return nil, fmt.Errorf("%w: starting the sandbox starter: %v", ErrUnavailable, err)
	}
	return s, nil
}

// start has the starter start a helper with files as its fds 0, 1, 2, 3;
// gone must be called once the helper has been waited for.
func (s *starter) start(files []*os.File) (p *os.Process, gone func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken.Load() {
		return nil, nil, errors.New("the sandbox starter is gone")
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	s.helpers.add(1) // before the helper exists: the starter's thread waits for it
	var r starterReply
	err = sendMsg(s.sock, struct{}{}, fds)
	if err == nil {
		var passed []int
		passed, err = s.msgs.read(&r)
		closeAll(passed)
	}
	switch {
	case err != nil:
		err = fmt.Errorf("the sandbox starter: %w", err)
	case r.Error != "":
		err = errors.New(r.Error)
	case r.Pid <= 0:
		err = fmt.Errorf("the sandbox starter answered pid %d", r.Pid)
	}
	if err != nil {
		// Not asked again: a helper whose exec failed may be left to
		// this process as a child no one waits for.
		s.broken.Store(true)
		s.helpers.done()
		return nil, nil, err
	}
	// The helper is this process's child: found by a pidfd, waited for
	// here.
	p, err = os.FindProcess(r.Pid)
	if err != nil {
		s.helpers.done()
		return nil, nil, err
	}
	return p, s.helpers.done, nil
}

// usable reports whether the starter may still start helpers. It does not
// wait for a start in progress (which holds mu).
func (s *starter) usable() bool {
	select {
	case <-s.exited:
		return false
	default:
		return !s.broken.Load()
	}
}

// close ends the starter and waits until it is gone (the helpers it
// started run on).
func (s *starter) close() {
	s.mu.Lock()
	s.broken.Store(true)
	s.sock.Close()
	s.mu.Unlock()
	<-s.exited
}

// starterMain is the starter: for each request on its fd 3 (the helper's
// fds 0 to 3 passed along), it starts a helper, this program again, as a
// sibling (CLONE_PARENT), and answers its pid. It returns when the socket
// closes. A pod's starter brings its loopback up first, and starts each
// helper in its own user and network namespaces (the other namespaces
// are new, as for any helper).
func starterMain(pod bool) int {
	sock := os.NewFile(ctlFD, "sandbox-starter")
	msgs := &msgReader{f: sock}
	exe, err := os.Executable() // this very program (its path as /proc/self/exe resolves it)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox starter:", err)
		return 126
	}
	attr := helperAttr(syscall.CLONE_PARENT)
	if pod {
		if err := loopbackUp(); err != nil {
			fmt.Fprintln(os.Stderr, "sandbox pod:", err)
			return 126
		}
		attr = podHelperAttr()
	}
	for {
		var req struct{}
		fds, err := msgs.read(&req)
		if err != nil {
			closeAll(fds)
			return 0
		}
		var r starterReply
		if len(fds) != 4 {
			r.Error = fmt.Sprintf("the sandbox starter got %d files, not 4", len(fds))
		} else {
			files := make([]*os.File, len(fds))
			for i, fd := range fds {
				files[i] = os.NewFile(uintptr(fd), "helper-file")
			}
			p, err := os.StartProcess(exe, helperArgs, &os.ProcAttr{Env: helperEnv, Files: files, Sys: attr})
			if err != nil {
				r.Error = fmt.Sprintf("starting the helper: %v", err)
			} else {
				r.Pid = p.Pid
				p.Release()
			}
			for _, f := range files {
				f.Close()
			}
			fds = nil
		}
		closeAll(fds)
		if err := sendMsg(sock, r, nil); err != nil {
			return 0
		}
	}
}

func closeAll(fds []int) {
	for _, fd := range fds {
		syscall.Close(fd)
	}
}
