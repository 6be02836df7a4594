package sandbox

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// initArg0 is the argv[0] by which a process knows it is a sandbox helper.
const initArg0 = "toolgate-sandbox-init"

// Native runs commands in new Linux namespaces, by re-executing the
// current program as a helper (see Init). Its zero value is ready to use.
type Native struct {
	// Executable is the program to re-execute as the helper; empty means
	// os.Executable(). It must call Init first thing in main (or TestMain).
	Executable string
	// NoCgroup skips cgroups (rlimits only), e.g. where creating groups is
	// not wanted.
	NoCgroup bool
	// Prestart keeps Spares helpers started ahead, so that a Run skips
	// starting a process, moving it into its cgroup (limited as the last
	// Run's was) and building the system part of its root: the larger
	// part of its latency. A Run takes the oldest and starts its
	// replacement once its command is over; with two or more, the next
	// Run finds one ready even when it comes at once. Each helper is still
	// one command's alone: its namespaces, mounts and cgroup are fresh
	// and used once. A helper waits at most a minute (then leaves the
	// pool), and a Run's groups are removed just after it returns; Close
	// stops the helpers and waits for both. The helpers are started by a
	// starter process (see starter), which Close stops too.
	Prestart bool
	// Spares is how many helpers Prestart keeps ready: 0 means 2 (one for
	// the next command, one for the command after it while the first's
	// replacement starts), at most maxSpares.
	Spares int

	mu       sync.Mutex
	spares   []*helper      // started ahead, oldest first
	expect   *Limits        // the limits of the last Run: the groups of helpers started ahead get them
	closed   bool           // Close was called: no more helpers ahead
	cleaning sync.WaitGroup // groups removed after their Run returned
	idle     time.Duration  // how long a helper started ahead waits; 0: spareIdle
	layout   cgroupLayouts  // where the groups are made
	refused  refusal        // what this kernel or container refuses for good
	st       *starter       // with Prestart: starts the helpers
	stExe    string         // the program st starts
}

// maxSpares bounds Native.Spares: each spare is a process and its groups.
const maxSpares = 8

// Name returns "native".
func (n *Native) Name() string { return "native" }

// initConfig is what the helper is told.
type initConfig struct {
	Argv         []string
	Env          []string
	Dir          string
	Mounts       []mountSpec
	Limits       Limits
	MemoryRlimit bool // no memory cgroup: use RLIMIT_DATA
	CPUByCgroup  bool `json:",omitempty"` // the cgroup's cpu quota holds and is the only CPU bound: no RLIMIT_CPU
	Proxy        bool
	ProxyPort    int  `json:",omitempty"` // 0: ProxyPort
	Pod          bool `json:",omitempty"` // in a pod: TCP on its loopback is allowed
	Stdio        bool `json:",omitempty"` // the standard files come with the spec: stdin, output
	OwnStderr    bool `json:",omitempty"` // … stdin and stdout only: stderr stays the helper's (Start)
	TTY          bool `json:",omitempty"` // … a terminal, made the controlling one
	PrivateHome  bool // a writable tmpfs on Home
	Gate         bool `json:",omitempty"` // wait for a gateMsg after the reply, before exec
}

// gateMsg lets a gated helper exec its command (Go) or end without it.
type gateMsg struct{ Go bool }

// mountSpec is one host path to show inside the sandbox at the same path.
type mountSpec struct {
	Path     string
	Writable bool
}

// initReply is what the helper answers once the sandbox is set up (or not).
type initReply struct {
	Error     string   `json:",omitempty"` // setup failed
	Lasting   bool     `json:",omitempty"` // and will again: the base (no spec) was refused
	ExecError string   `json:",omitempty"` // the command could not be started
	Landlock  string   `json:",omitempty"`
	Seccomp   bool     `json:",omitempty"`
	Report    bool     `json:",omitempty"`
	NNP       bool     `json:",omitempty"`
	Caps      string   `json:",omitempty"`
	Rlimits   []string `json:",omitempty"`
	FDs       []string `json:",omitempty"` // names of the passed fds: "notify", "listener"
	// NS are the helper's namespace ids and NNP, Seccomp as its
	// /proc/self/status tells them once set: what held, not what was asked.
	NS map[string]uint64 `json:",omitempty"`
}

// Run runs spec in the sandbox.
func (n *Native) Run(ctx context.Context, spec Spec) (Outcome, error) {
	p, err := prepare(spec)
	if err != nil {
		return Outcome{}, err
	}
	exe, err := n.helperProgram()
	if err != nil {
		return Outcome{}, err
	}
	cfg, err := helperConfig(p)
	if err != nil {
		return Outcome{}, err
	}
	res := make(chan jobResult, 1)
	j := &job{ctx: ctx, p: p, cfg: cfg, res: res}
	if pod := spec.Pod; pod != nil {
		cfg.Pod = true
		if cfg.Proxy {
			if cfg.ProxyPort = pod.takePort(); cfg.ProxyPort == 0 {
				return Outcome{}, fmt.Errorf("%w: %d commands of the pod already have a network", ErrUnavailable, podPorts)
			}
			defer pod.givePort(cfg.ProxyPort)
			if cfg.Env, err = buildEnv(spec.Env, cfg.ProxyPort); err != nil {
				return Outcome{}, err
			}
		}
		if h := pod.takeSpare(exe); h == nil || !h.give(j) { // none, or it waited too long and left
			n.startHelper(exe, p.limits, nil, pod).give(j)
		}
		r := <-res
		n.refused.note(r.err)
		if n.Prestart {
			pod.refill(n, exe, p.limits)
		}
		return r.out, r.err
	}
	if h := n.takeSpare(exe); h == nil || !h.give(j) { // none, or it waited too long and left
		n.startHelper(exe, p.limits, nil, nil).give(j)
	}
	r := <-res
	n.refused.note(r.err)
	n.refill(exe, p.limits)
	return r.out, r.err
}

// A helper is a sandbox helper process started ahead of its command: it
// waits, in its fresh namespaces, for the spec. Its goroutine keeps the
// OS thread that started it (Pdeathsig fires when that thread ends) until
// the helper is gone.
type helper struct {
	jobs    chan *job     // unbuffered: a job is given only to a helper that takes it
	gone    chan struct{} // closed when the helper takes no more jobs and is cleaned up
	exe     string
	cgroups bool
	limits  Limits // what its groups were limited to as it started
}

// isClosed reports whether c is closed.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// give hands j to the helper; false if the helper has left (it waited its
// idle time for a job, or died waiting).
func (h *helper) give(j *job) bool {
	select {
	case h.jobs <- j:
		return true
	case <-h.gone:
		return false
	}
}

type job struct {
	ctx context.Context
	p   *prepared
	cfg *initConfig
	res chan jobResult
	// stream, for Start: the command's output goes to it as written, its
	// standard input stays open, and no wall-clock limit applies.
	stream *Process
	// listener, when set, is the proxy network's listening socket, made
	// by the caller (the reduced backend's, on the server's loopback)
	// rather than by the helper.
	listener net.Listener
	// backend names the backend in the outcome: "" is "native".
	backend string
}

type jobResult struct {
	out Outcome
	err error
}

// spareIdle is how long a started-ahead helper waits for a command.
const spareIdle = time.Minute

// startHelper starts a helper (with its cgroup, given the limits expect,
// unless n.NoCgroup); its first job runs in it. One started ahead, for a
// pool (Native's spares or a pod's), is given leave, which takes it out of
// its pool when it has waited its idle time for a job or died waiting; nil
// for a helper started for a job now.
func (n *Native) startHelper(exe string, expect Limits, leave func(*helper), pod *Pod) *helper {
	idle := n.idle
	if idle <= 0 {
		idle = spareIdle
	}
	h := &helper{jobs: make(chan *job), gone: make(chan struct{}), exe: exe, cgroups: !n.NoCgroup, limits: expect}
	goLocked(func() {
		defer close(h.gone)
		var layout *cgroupLayouts
		if h.cgroups {
			layout = &n.layout
		}
		var l *launched
		st, err := n.starter(exe), error(nil)
		if pod != nil {
			st, err = pod.starter(exe)
		}
		if err == nil {
			l, err = launch(exe, st, layout, expect, pod != nil)
		}
		timer := time.NewTimer(idle)
		defer timer.Stop()
		// A helper started ahead that dies while it waits (killed, out of
		// memory) leaves its pool; one that died as it was taken gets a
		// new helper for its job: a command is never handed to a dead
		// helper.
		var died <-chan struct{}
		if err == nil && leave != nil {
			died = l.waitDone
		}
		select {
		case <-died:
			leave(h)
			l.ctl.Close()
			l.release()
		case j, ok := <-h.jobs:
			if !ok { // not wanted after all
				if err == nil {
					l.abandon()
				}
				return
			}
			if died != nil && isClosed(died) {
				l.ctl.Close()
				l.release()
				l, err = launch(exe, st, layout, expect, pod != nil)
			}
			if err != nil {
				j.res <- jobResult{err: err}
				return
			}
			out, err := l.run(j)
			if !n.cleanLater() {
				l.release()
				j.res <- jobResult{out, err}
				return
			}
			// The mount namespace and the groups go once the caller has
			// its outcome: both wait for the kernel.
			j.res <- jobResult{out, err}
			l.release()
			n.cleaning.Done()
		case <-timer.C:
			if leave != nil {
				leave(h)
			}
			if err == nil {
				l.abandon()
			}
		}
	})
	return h
}

// goLocked runs f in a goroutine of its own, locked to a thread other
// than the thread group leader, for a helper forked there: the helper
// dies with that thread (Pdeathsig), and the thread enters the helper's
// groups as it forks (cgroup.enter), which the leader must not (under v1
// the whole process's memory is charged to the leader's memory group).
// A thread that could not leave the groups ends with f (locked once more
// by launchBy); else it is handed back once f returns.
func goLocked(f func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != os.Getpid() {
			defer runtime.UnlockOSThread()
			f()
			return
		}
		// Held on the leader until f's goroutine is locked to a thread:
		// the leader runs no other goroutine meanwhile.
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(locked)
			defer runtime.UnlockOSThread()
			f()
		}()
		<-locked
		runtime.UnlockOSThread()
	}()
}

// Warm starts helpers now for the next Runs, unless they are waiting
// already: a program that knows a command is coming overlaps the helper's
// start with its own work. Without Prestart, one helper is started, which
// only the next Run uses; with it, the pool of Spares is filled. An unused
// helper leaves after a minute, or at Close.
func (n *Native) Warm() {
	if exe, err := n.helperProgram(); err == nil {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.fill(exe, max(n.size(), 1), n.expected())
	}
}

// WarmFor starts a helper now for a command to come whose limits are l,
// its groups limited to them, unless one is waiting already: the helper
// that Start takes (a started process keeps its helper for as long as it
// runs, so Start takes only one started for its very limits). A program
// that knows it will start a long-lived command overlaps the helper's
// start (a fork with seven new namespaces, the system part of the root,
// the cgroup) with its own work. An unused helper leaves after a minute,
// or at Close.
func (n *Native) WarmFor(l Limits) {
	l = l.withDefaults()
	if exe, err := n.helperProgram(); err == nil {
		n.mu.Lock()
		defer n.mu.Unlock()
		if !n.closed && !slices.ContainsFunc(n.spares, func(h *helper) bool { return h.fits(exe, l, n.NoCgroup) }) {
			n.spares = append(n.spares, n.startHelper(exe, l, n.leave, nil))
		}
	}
}

// fits reports whether the helper was started for exe, with groups as
// noCgroup says, limited to l.
func (h *helper) fits(exe string, l Limits, noCgroup bool) bool {
	return h.exe == exe && h.cgroups == !noCgroup && h.limits == l
}

// helperProgram is the program to start as the helper, where the native
// backend can run at all.
func (n *Native) helperProgram() (string, error) {
	if err := n.refused.get(); err != nil {
		return "", err
	}
	if err := nativeAvailable(); err != nil {
		return "", n.refused.note(lastingError{err})
	}
	if n.Executable != "" {
		return n.Executable, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("%w: cannot find the helper executable: %v", ErrUnavailable, err)
	}
	return exe, nil
}

// size is how many helpers are kept ready (0 without Prestart).
func (n *Native) size() int {
	switch {
	case !n.Prestart:
		return 0
	case n.Spares <= 0:
		return 2
	}
	return min(n.Spares, maxSpares)
}

// takeSpare returns the oldest helper started ahead, if any.
func (n *Native) takeSpare(exe string) *helper {
	n.mu.Lock()
	defer n.mu.Unlock()
	var h *helper
	for len(n.spares) > 0 && h == nil {
		h, n.spares = n.spares[0], n.spares[1:]
		if h.exe != exe || h.cgroups == n.NoCgroup {
			close(h.jobs) // started for another program or setting: let it go
			h = nil
		}
	}
	return h
}

// takeSpareFor returns the oldest helper started ahead for exe with
// groups limited to l (WarmFor), if any; the others stay in the pool.
func (n *Native) takeSpareFor(exe string, l Limits) *helper {
	n.mu.Lock()
	defer n.mu.Unlock()
	i := slices.IndexFunc(n.spares, func(h *helper) bool { return h.fits(exe, l, n.NoCgroup) })
	if i < 0 {
		return nil
	}
	h := n.spares[i]
	n.spares = slices.Delete(n.spares, i, i+1)
	return h
}

// refill (with Prestart) starts the helpers that replace those taken, their
// groups limited to l (the limits of the Run that calls it). A Run calls it
// once its command is over: a helper's start (a fork with seven new
// namespaces, tens of mounts, a cgroup) costs several times the CPU of
// `true` in it, and started while the command runs (when the helper was
// taken, or once the sandbox was set up) it made that command 1.3 to 1.6
// times slower (bench/sandbox, 2 busy cores). The second spare covers a
// Run that comes before the replacement is ready.
func (n *Native) refill(exe string, l Limits) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.expect = &l
	n.fill(exe, n.size(), l)
}

// fill starts helpers until size are waiting (none once closed), their
// groups limited to l. n.mu is held.
func (n *Native) fill(exe string, size int, l Limits) {
	for !n.closed && n.refused.get() == nil && len(n.spares) < size {
		n.spares = append(n.spares, n.startHelper(exe, l, n.leave, nil))
	}
}

// expected returns the limits the groups of helpers started ahead get:
// those of the last Run, else the defaults. n.mu is held.
func (n *Native) expected() Limits {
	if n.expect != nil {
		return *n.expect
	}
	return Limits{}.withDefaults()
}

// cleanLater reports whether the groups of a Run that is over may be
// removed after it returns (Close then waits for them): with Prestart,
// until Close. Otherwise they are removed first, for a caller that may
// never call Close.
func (n *Native) cleanLater() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.Prestart || n.closed {
		return false
	}
	n.cleaning.Add(1)
	return true
}

// starter returns the starter of the helpers of exe, started now if need
// be, or nil: without Prestart (a caller that may never call Close), once
// closed, or when none can be started (a helper is then forked from this
// process, as without Prestart).
func (n *Native) starter(exe string) *starter {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.Prestart || n.closed {
		return nil
	}
	if n.st != nil && (n.stExe != exe || !n.st.usable()) {
		n.st.close()
		n.st = nil
	}
	if n.st == nil {
		st, err := startStarter(exe, false)
		if err != nil {
			return nil
		}
		n.st, n.stExe = st, exe
	}
	return n.st
}

// leave takes a helper that stopped waiting out of the pool.
func (n *Native) leave(h *helper) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.spares = slices.DeleteFunc(n.spares, func(x *helper) bool { return x == h })
}

// Close stops the helpers started ahead and waits until they are gone,
// with their groups and the groups of the Runs that are over. Runs after
// Close still work, each starting its own helper; none is started ahead
// any more.
func (n *Native) Close() error {
	n.mu.Lock()
	spares, st := n.spares, n.st
	n.spares, n.closed, n.st = nil, true, nil
	n.mu.Unlock()
	for _, h := range spares {
		close(h.jobs)
	}
	for _, h := range spares {
		<-h.gone
	}
	if st != nil {
		st.close()
	}
	n.cleaning.Wait()
	n.layout.close()
	return nil
}

// launched is a started helper process.
type launched struct {
	proc           *os.Process
	ctl            *os.File
	stdin          *os.File
	stdout, stderr *capture
	fl             *flood
	start          time.Time
	waitDone       chan struct{} // closed when the helper is gone and its output read
	state          *os.ProcessState
	waitErr        error

	killMu     sync.Mutex
	killReason string

	// The cgroup is made while the helper starts, and the helper put in
	// it: cg, cgWhy and cgErr (the move's) are set when cgDone is closed
	// (nil when cgroups are off).
	cgDone chan struct{}
	cg     *cgroup
	cgWhy  string
	cgErr  error

	// mountNS holds the helper's mount namespace (-1: not held), so that
	// it is torn down (tens of mounts, and an RCU grace period) when
	// release closes it, after the caller has its outcome, rather than
	// when the command exits, before the caller learns that it did.
	mountNS int
}

// helperArgs and helperEnv start a helper; GOMAXPROCS=1 and GOGC=off make
// its start-up quicker.
var (
	helperArgs = []string{initArg0, "native"}
	helperEnv  = []string{"GOMAXPROCS=1", "GOGC=off"}
)

// helperAttr puts a helper in new namespaces, as uid and gid 0 mapped to
// the caller's, in a session of its own, killed when its parent (thread)
// goes.
func helperAttr(cloneflags uintptr) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags: cloneflags | syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET |
			syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Setsid:                     true,
		Pdeathsig:                  syscall.SIGKILL,
	}
}

// podHelperAttr is helperAttr for a helper started by a pod's starter:
// it stays in the pod's user and network namespaces, a sibling of the
// starter (CLONE_PARENT).
func podHelperAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_PARENT | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
			syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP,
		Setsid:    true,
		Pdeathsig: syscall.SIGKILL,
	}
}

// outputDelay is how long the output of what a helper left behind is
// still read once it is gone (exec.Cmd's WaitDelay): its pid namespace
// dies with it, so only a process passed out of it could hold the pipes.
const outputDelay = 2 * time.Second

// launch starts the helper process in new namespaces, through the starter
// st when there is one (else by forking this process), and, given where
// groups are made, makes its groups meanwhile, limited to expect. The
// helper then waits for its spec on the control socket.
func launch(exe string, st *starter, layout *cgroupLayouts, expect Limits, pod bool) (*launched, error) {
	if st != nil {
		l, err := launchBy(st.start, layout, expect, false, false)
		if err == nil {
			return l, nil
		}
		if pod { // only the pod's starter starts in its namespaces
			return nil, fmt.Errorf("%w: starting a command in the pod: %v", ErrUnavailable, err)
		}
		// The starter failed. A helper it started before it failed has
		// the files it was given: the helper forked here gets new ones.
	}
	return launchBy(func(files []*os.File) (*os.Process, func(), error) {
		p, err := os.StartProcess(exe, helperArgs, &os.ProcAttr{Env: helperEnv, Files: files, Sys: helperAttr(0)})
		return p, nil, err
	}, layout, expect, false, true)
}

// launchBy is launch with start, which starts a helper with files as its
// fds 0 to 3 and returns it, and a function to call once it has been
// waited for (or nil). With session (a helper without a pid namespace,
// the leader of a session of its own), every process left in its session
// is killed once it has ended, before it is reaped. With forks, start
// forks the helper from the calling thread (locked to its goroutine: the
// helper's Pdeathsig is tied to it), which then enters the groups first,
// so that the helper is born in them (cgroup.enter); else, or where the
// thread cannot enter them, the groups are made while the helper starts
// and it is added to them once started.
func launchBy(start func(files []*os.File) (*os.Process, func(), error), layout *cgroupLayouts, expect Limits, session, forks bool) (*launched, error) {
	ctl, child, err := socketPair("sandbox-control")
	if err != nil {
		return nil, err
	}
	l := &launched{ctl: ctl, fl: &flood{}, waitDone: make(chan struct{}), mountNS: -1}
	defer child.Close()
	l.stdout, l.stderr = newCapture(0, l.fl), newCapture(0, l.fl)
	// The helper's standard files are pipes; the helper's ends are
	// closed here once it has them.
	var theirs, ours [3]*os.File
	for i := range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range append(theirs[:i:i], ours[:i]...) {
				f.Close()
			}
			l.ctl.Close()
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		theirs[i], ours[i] = r, w
		if i > 0 { // output: the helper writes
			theirs[i], ours[i] = w, r
		}
	}
	defer func() {
		for _, f := range theirs {
			f.Close()
		}
	}()
	l.stdin = ours[0]
	started := make(chan int, 1) // the helper's pid; closed if it did not start
	var leave func() error       // moves this thread back out of the helper's groups
	if layout != nil {
		l.cgDone = make(chan struct{})
		if forks {
			if l.cg, l.cgWhy = limitedCgroup(layout, expect); l.cg != nil {
				leave, _ = l.cg.enter()
			}
		}
		if leave != nil || forks && l.cg == nil {
			close(l.cgDone) // born in its groups, or there are none
		} else {
			go func() {
				defer close(l.cgDone)
				if !forks {
					l.cg, l.cgWhy = limitedCgroup(layout, expect)
				}
				// Moving a process into a group waits for the kernel (an
				// RCU grace period: 6 to 25 ms measured here). Done now,
				// with the limits written, it overlaps the helper's start
				// and the caller's work instead of delaying the command;
				// run writes the limits again if its spec has others.
				if pid, ok := <-started; ok && l.cg != nil {
					l.cgErr = l.cg.add(pid)
				}
			}()
		}
	}
	l.start = time.Now()
	var gone func()
	l.proc, gone, err = start([]*os.File{theirs[0], theirs[1], theirs[2], child})
	stuck := false
	if leave != nil {
		if lerr := leave(); lerr != nil {
			// This thread stays in the helper's groups. Locked once more,
			// it ends with its goroutine (the caller's is its own: see
			// Reduced.Run), and the runtime ends the thread rather than
			// give it another goroutine; the groups go once it is gone.
			runtime.LockOSThread()
			stuck = true
			if err == nil {
				l.proc.Kill()
				l.proc.Wait()
			}
			err = fmt.Errorf("leaving the helper's groups: %v", lerr)
		}
	}
	if err != nil {
		close(started)
		l.ctl.Close()
		for _, f := range ours {
			f.Close()
		}
		if stuck {
			go l.releaseAfter(unix.Gettid())
		} else {
			l.release()
		}
		if errors.Is(err, unix.EPERM) { // the helper's new namespaces refused
			return nil, lastingError{fmt.Errorf("%w: starting the helper: %v", ErrUnavailable, err)}
		}
		return nil, fmt.Errorf("%w: starting the helper: %v", ErrUnavailable, err)
	}
	started <- l.proc.Pid
	if fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/mnt", l.proc.Pid), unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		l.mountNS = fd
	}
	var output sync.WaitGroup
	for i, c := range []*capture{l.stdout, l.stderr} {
		output.Go(func() { io.Copy(c, ours[i+1]) })
	}
	go func() {
		if session {
			waitExited(l.proc.Pid)
			killSession(l.proc.Pid)
		}
		l.state, l.waitErr = l.proc.Wait()
		if gone != nil {
			gone()
		}
		read := make(chan struct{})
		go func() { output.Wait(); close(read) }()
		select {
		case <-read:
		case <-time.After(outputDelay):
		}
		for _, f := range ours {
			f.Close()
		}
		<-read
		close(l.waitDone)
	}()
	return l, nil
}

// releaseAfter releases l once the thread tid of this process is gone.
func (l *launched) releaseAfter(tid int) {
	task := fmt.Sprintf("/proc/self/task/%d", tid)
	for {
		if _, err := os.Stat(task); errors.Is(err, os.ErrNotExist) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	l.release()
}

// limitedCgroup makes the groups of a helper, where layout says this
// process's groups are, limited to l; nil and why when there are none or
// no limit could be set (the rlimits then hold).
func limitedCgroup(layout *cgroupLayouts, l Limits) (*cgroup, string) {
	cg, why := newCgroup(layout)
	if cg != nil {
		if ok, why := cg.limit(l); !ok {
			cg.remove()
			return nil, why
		}
	}
	return cg, why
}

// socketPair returns the two ends of a new stream socket pair: this
// process's and the child's.
func socketPair(name string) (ours, theirs *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), name), os.NewFile(uintptr(fds[1]), name+"-child"), nil
}

// kill ends the helper (the pid namespace's init: the kernel kills the
// rest) and records why, once.
func (l *launched) kill(reason string) {
	l.killMu.Lock()
	defer l.killMu.Unlock()
	if l.killReason == "" {
		l.killReason = reason
		l.proc.Kill()
	}
}

// abandon ends a helper that got no command.
func (l *launched) abandon() {
	l.kill("unused")
	<-l.waitDone
	l.ctl.Close()
	l.release()
}

// takeCgroup waits for the helper's groups and returns them (nil when
// there are none) and what to report.
func (l *launched) takeCgroup() (*cgroup, string) {
	if l.cgDone == nil {
		return nil, "none: disabled"
	}
	<-l.cgDone
	return l.cg, l.cgWhy
}

// release lets the helper's mount namespace go and removes its groups,
// once no command runs in them.
func (l *launched) release() {
	if l.mountNS >= 0 {
		unix.Close(l.mountNS)
		l.mountNS = -1
	}
	if cg, _ := l.takeCgroup(); cg != nil {
		cg.remove()
	}
}

// run gives the helper its spec and sees the command through.
func (l *launched) run(j *job) (Outcome, error) {
	ctx, p, cfg := j.ctx, j.p, j.cfg
	defer l.ctl.Close()
	out := Outcome{
		Backend: cmp.Or(j.backend, "native"), Command: p.argv, ExitCode: -1,
		Protections: Protections{
			Filesystem: filesystemView,
			Network:    p.Network.Mode(),
			User:       fmt.Sprintf("0 -> host %d", os.Getuid()),
		},
	}
	fail := func(err error) (Outcome, error) {
		l.kill("setup")
		<-l.waitDone
		return Outcome{}, err
	}
	cg, why := l.takeCgroup()
	out.Protections.Cgroup = why
	cfg.MemoryRlimit = true
	if cg != nil {
		if l.cgErr != nil {
			return fail(fmt.Errorf("sandbox: %w", l.cgErr))
		}
		if !cg.fits(p.limits) {
			if ok, why := cg.limit(p.limits); !ok {
				cg, out.Protections.Cgroup = nil, why // a group without limits: the rlimits hold
			}
		}
	}
	if cg != nil {
		out.Protections.CgroupLimits = cg.limits
		cfg.MemoryRlimit = !contains(cg.limits, "memory")
		cfg.CPUByCgroup = p.limits.CPUByCgroup && contains(cg.limits, "cpu")
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stdio *streams
	var err error
	switch s := j.stream; {
	case s != nil:
		// A started command's stdin and stdout are pipes of their own,
		// passed with the spec and handed to the caller as they are: what
		// it writes is read from the pipe it wrote to, no copy between.
		if stdio, err = openStreams(false); err != nil {
			return fail(err)
		}
		defer func() {
			if !s.handed() {
				stdio.closeOurs()
			}
		}()
		cfg.Stdio, cfg.OwnStderr = true, true
		l.stderr.setSink(s.stderr)
		l.stdin.Close()
	case p.Stream != nil:
		l.stdout.setLimit(p.limits.Output)
		l.stderr.setLimit(p.limits.Output)
		l.fl.set(floodLimit(p.limits.Output), func() { go l.kill("output") })
		if stdio, err = openStreams(p.TTY); err != nil {
			return fail(err)
		}
		cfg.Stdio, cfg.TTY = true, p.TTY
		l.stdin.Close()
	default:
		l.stdout.setLimit(p.limits.Output)
		l.stderr.setLimit(p.limits.Output)
		l.fl.set(floodLimit(p.limits.Output), func() { go l.kill("output") })
		go func() {
			l.stdin.Write(p.Stdin)
			l.stdin.Close()
		}()
	}

	// Tell the helper what to do, and wait until it is set up.
	start := time.Now()
	setupDeadline := time.AfterFunc(p.limits.Wall, func() { l.kill("timeout") })
	defer setupDeadline.Stop()
	switch {
	case j.stream != nil:
		err = sendMsg(l.ctl, cfg, stdio.fds())
		stdio.closeTheirs()
	case stdio != nil:
		err = sendMsg(l.ctl, cfg, stdio.fds())
		stdio.start(p.Stream, p.Input)
		defer stdio.finish(outputDelay)
	default:
		err = writeMsg(l.ctl, cfg)
	}
	if err != nil {
		return fail(fmt.Errorf("%w: the sandbox helper did not start: %v", ErrUnavailable, err))
	}
	msgs := &msgReader{f: l.ctl}
	var reply initReply
	passed, err := msgs.read(&reply)
	if err != nil {
		return fail(fmt.Errorf("%w: the sandbox helper did not start: %v%s", ErrUnavailable, err, helperStderr(l)))
	}
	named := map[string]int{}
	for i, fd := range passed {
		if i < len(reply.FDs) {
			named[reply.FDs[i]] = fd
		} else {
			unix.Close(fd)
		}
	}
	if reply.Error != "" {
		for _, fd := range named {
			unix.Close(fd)
		}
		err := fmt.Errorf("%w: setting up the sandbox: %s", ErrUnavailable, reply.Error)
		if reply.Lasting {
			err = lastingError{err}
		}
		return fail(err)
	}
	out.Protections.Namespaces = newNamespaces(reply.NS)
	out.Protections.Landlock = reply.Landlock
	out.Protections.Seccomp = reply.Seccomp
	out.Protections.SeccompReport = reply.Report
	out.Protections.NoNewPrivs = reply.NNP
	out.Protections.Capabilities = reply.Caps
	out.Protections.Rlimits = reply.Rlimits
	if cfg.Gate {
		// The command has not started: it does only if what held is
		// enough. (A helper that could not find the program waits here
		// too, then says so: that is read below.)
		lv := Classify(out.Protections)
		lv.Backend = out.Backend
		ok := lv.Meets(p.Require) && lv.Level != LevelNone
		err := writeMsg(l.ctl, gateMsg{Go: ok})
		if !ok || err != nil {
			for _, fd := range named {
				unix.Close(fd)
			}
			if !ok {
				return fail(belowError(p.Require, lv))
			}
			return fail(fmt.Errorf("%w: the sandbox helper ended before its command started: %v%s", ErrUnavailable, err, helperStderr(l)))
		}
	}

	blocked := &blockedLog{notify: p.Refused}
	var supervisor sync.WaitGroup
	if fd, ok := named["notify"]; ok {
		supervisor.Add(1)
		go func() { defer supervisor.Done(); supervise(fd, blocked) }()
		// Every return from here on comes after the command ended (fail
		// kills it), so the supervisor sees POLLHUP and ends: release
		// its descriptor on each, a failed exec's included.
		defer func() {
			supervisor.Wait()
			unix.Close(fd)
		}()
	}
	var relay *proxyRelay
	if fd, ok := named["listener"]; ok {
		relay, err = startRelay(runCtx, fd, p.Network)
		if err != nil {
			return fail(fmt.Errorf("sandbox: %w", err))
		}
	} else if j.listener != nil {
		relay = relayOn(runCtx, j.listener, p.Network)
	}

	if p.Started != nil {
		p.Started(l.proc)
	}

	// Wait for the command, or the end of its time (a started process
	// has none: it runs until it ends, is stopped or its context ends).
	var expire <-chan time.Time
	if s := j.stream; s != nil {
		// The control socket closes at exec (close-on-exec), or the
		// helper says why exec failed.
		var late initReply
		if _, err := msgs.read(&late); err == nil && late.ExecError != "" {
			if relay != nil {
				relay.close()
			}
			return fail(fmt.Errorf("%w: %s", ErrInvalidSpec, late.ExecError))
		}
		setupDeadline.Stop()
		s.started(l, out.Protections, stdio)
	} else {
		timer := time.NewTimer(time.Until(start.Add(p.limits.Wall)))
		defer timer.Stop()
		expire = timer.C
	}
	select {
	case <-l.waitDone:
	case <-expire:
		l.kill("timeout")
		<-l.waitDone
	case <-ctx.Done():
		l.kill("cancelled")
		<-l.waitDone
	}
	out.Usage.Wall = time.Since(start)
	if relay != nil {
		relay.close()
	}
	supervisor.Wait() // the filter's last process is gone: the supervisor sees POLLHUP

	// Did the command start at all?
	var late initReply
	if _, err := msgs.read(&late); err == nil && late.ExecError != "" {
		l.stderr.Write([]byte("sandbox: " + late.ExecError + "\n"))
	}

	st := l.state
	if st == nil {
		return Outcome{}, fmt.Errorf("sandbox: waiting for the command: %w", l.waitErr)
	}
	ws, _ := st.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		out.Signal = unix.SignalName(ws.Signal())
	} else {
		out.ExitCode = ws.ExitStatus()
	}
	l.killMu.Lock()
	out.Killed = l.killReason
	l.killMu.Unlock()
	if j.stream == nil { // a started command's output went where it was told
		out.Stdout, out.StdoutTruncated = l.stdout.bytes()
		out.Stderr, out.StderrTruncated = l.stderr.bytes()
	}
	out.Usage.OutputSize = l.stdout.written() + l.stderr.written()
	out.Blocked = blocked.list()
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		out.Usage.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		out.Usage.MaxRSS = ru.Maxrss * 1024
	}
	var stats cgroupStats
	if cg != nil {
		stats = cg.stats()
		if stats.haveCPU {
			out.Usage.CPU = stats.cpu
		}
		if stats.haveMemory {
			out.Usage.MaxRSS = stats.memoryPeak
		}
	}
	out.LimitsHit = limitsHit(&out, p.limits, stats)
	return out, nil
}

// helperStderr is what a helper that failed early wrote, for the error.
func helperStderr(l *launched) string {
	l.kill("setup")
	<-l.waitDone
	if b, _ := l.stderr.bytes(); len(b) > 0 {
		return ": " + strings.TrimSpace(string(b))
	}
	return ""
}

// floodLimit is how much output a command may write in all before it is
// killed: far more than is kept, so that a chatty build still finishes.
func floodLimit(keep int) int64 {
	return max(int64(keep)*64, 64<<20)
}

// limitsHit works out which limits the command ran into, and refines
// out.Killed.
func limitsHit(out *Outcome, l Limits, s cgroupStats) []string {
	var hit []string
	if out.Killed == "timeout" {
		hit = append(hit, "wall")
	}
	if out.Signal == "SIGXCPU" || (out.Signal == "SIGKILL" && out.Killed == "" && out.Usage.CPU >= l.CPU) {
		hit = append(hit, "cpu")
	}
	if s.oomKills > 0 {
		hit = append(hit, "memory")
		if out.Killed == "" && out.Signal == "SIGKILL" {
			out.Killed = "memory"
		}
	}
	if s.pidsMax > 0 {
		hit = append(hit, "processes")
	}
	if out.Signal == "SIGXFSZ" {
		hit = append(hit, "file_size")
	}
	if out.Killed == "output" || out.StdoutTruncated || out.StderrTruncated {
		hit = append(hit, "output")
	}
	return hit
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// inTree reports whether p is dir or lies under it, component by component.
func inTree(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// helperConfig builds the helper's instructions from a prepared spec.
func helperConfig(p *prepared) (*initConfig, error) {
	cfg := &initConfig{Argv: p.argv, Env: p.env, Dir: p.dir, Limits: p.limits, Proxy: p.Network.Enabled(), ProxyPort: ProxyPort, PrivateHome: p.PrivateHome,
		Gate: p.Require != ""}
	root, err := filepath.EvalSymlinks(p.Root)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSpec, err)
	}
	add := func(path string, w bool) error {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidSpec, err)
		}
		if inTree(path, p.Root) && !inTree(real, root) {
			// A link inside the workspace to a place outside it (made
			// by a command, perhaps a moment ago): nothing is granted
			// through it, and its target is not shown.
			return nil
		}
		// Two names of one place (a link and its target: a program's
		// folder given both ways) are one mount: a second bind would
		// only cover the first, and cost a mount at start and on every
		// path walk through it. Read-only wins, as it does stacked.
		if i := slices.IndexFunc(cfg.Mounts, func(m mountSpec) bool { return m.Path == real }); i >= 0 {
			cfg.Mounts[i].Writable = cfg.Mounts[i].Writable && w
			return nil
		}
		cfg.Mounts = append(cfg.Mounts, mountSpec{Path: real, Writable: w})
		return nil
	}
	if err := add(p.Root, true); err != nil {
		return nil, err
	}
	// The working folder is given through the resolved root.
	if real, err := filepath.EvalSymlinks(p.Root); err == nil && real != p.Root {
		rel, _ := filepath.Rel(p.Root, p.dir)
		cfg.Dir = filepath.Join(real, rel)
	}
	for _, w := range p.Writable {
		if err := add(w, true); err != nil {
			return nil, err
		}
	}
	for _, r := range p.ReadOnly {
		if err := add(r, false); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

var errNoUserNS = errors.New("user namespaces are disabled")

// nativeAvailable reports ErrUnavailable when this kernel cannot give an
// unprivileged user namespace.
func nativeAvailable() error {
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && string(bytes.TrimSpace(b)) == "0" {
		return fmt.Errorf("%w: %v (user.max_user_namespaces = 0)", ErrUnavailable, errNoUserNS)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && string(bytes.TrimSpace(b)) == "0" && os.Getuid() != 0 {
		return fmt.Errorf("%w: %v (kernel.unprivileged_userns_clone = 0)", ErrUnavailable, errNoUserNS)
	}
	return nil
}

// writeMsg sends v as a length-prefixed JSON message.
func writeMsg(f *os.File, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	msg := make([]byte, 4+len(b))
	binary.LittleEndian.PutUint32(msg, uint32(len(b)))
	copy(msg[4:], b)
	_, err = f.Write(msg)
	return err
}

// msgReader reads the messages sent by sendMsg, with the fds passed
// along.
type msgReader struct {
	f   *os.File
	buf []byte // bytes read but not yet used
}

// read reads one message into v and returns the fds received with it.
func (m *msgReader) read(v any) ([]int, error) {
	rc, err := m.f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var fds []int
	chunk := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		if len(m.buf) >= 4 {
			size := int(binary.LittleEndian.Uint32(m.buf))
			if size > 16<<20 {
				return fds, errors.New("message too large")
			}
			if len(m.buf) >= 4+size {
				body := m.buf[4 : 4+size]
				m.buf = m.buf[4+size:]
				return fds, json.Unmarshal(body, v)
			}
		}
		var n, oobn int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, oobn, _, _, rerr = unix.Recvmsg(int(fd), chunk, oob, unix.MSG_CMSG_CLOEXEC)
			return rerr != unix.EAGAIN
		})
		if err != nil {
			return fds, err
		}
		if rerr != nil {
			return fds, rerr
		}
		if oobn > 0 {
			if cms, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for _, cm := range cms {
					if r, err := unix.ParseUnixRights(&cm); err == nil {
						fds = append(fds, r...)
					}
				}
			}
		}
		if n == 0 {
			return fds, io.ErrUnexpectedEOF
		}
		m.buf = append(m.buf, chunk[:n]...)
	}
}

// proxyRelay accepts connections on a listening socket made inside the
// sandbox's network namespace and joins each to the proxy.
type proxyRelay struct {
	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startRelay(ctx context.Context, fd int, n Network) (*proxyRelay, error) {
	f := os.NewFile(uintptr(fd), "sandbox-proxy-listener")
	ln, err := net.FileListener(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("proxy listener: %w", err)
	}
	return relayOn(ctx, ln, n), nil
}

// relayOn joins each connection accepted on ln to the proxy, until close.
func relayOn(ctx context.Context, ln net.Listener, n Network) *proxyRelay {
	r := &proxyRelay{ln: ln, conns: map[net.Conn]struct{}{}}
	dial := n.Dial
	if dial == nil {
		dial = func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", n.Proxy)
		}
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				r.join(ctx, c, dial)
			}()
		}
	}()
	return r
}

func (r *proxyRelay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns == nil {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *proxyRelay) join(ctx context.Context, in net.Conn, dial func(context.Context) (net.Conn, error)) {
	if !r.track(in) {
		in.Close()
		return
	}
	up, err := dial(ctx)
	if err != nil {
		in.Close()
		return
	}
	if !r.track(up) {
		in.Close()
		up.Close()
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
		done <- struct{}{}
	}
	go pipe(up, in)
	go pipe(in, up)
	<-done
	<-done
	in.Close()
	up.Close()
}

func (r *proxyRelay) close() {
	r.ln.Close()
	r.mu.Lock()
	for c := range r.conns {
		c.Close()
	}
	r.conns = nil
	r.mu.Unlock()
	r.wg.Wait()
}
