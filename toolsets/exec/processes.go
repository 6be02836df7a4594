package exec

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/tool"
)

// ProcessLimits bound the processes of start_process (the policy's
// processes: block). Zero fields take the defaults named.
type ProcessLimits struct {
	PerOwner     int           // running at once per owner (principal + session): 8
	PerPrincipal int           // running at once per principal: 32
	PerServer    int           // running at once in all: 256
	Idle         time.Duration // an owner without a call this long has its processes stopped: 30 min
	Keep         time.Duration // an exited process stays readable this long: 30 min
	MaxTimeout   time.Duration // the longest timeout a process may ask for: 8 h
	Memory       int64         // output bytes kept in memory per process: 1 MiB
	File         int64         // output bytes kept in its spill file: 64 MiB
	// Dir is where the spill files go (the state folder); "": the
	// system's temporary folder. Files of processes that are gone are
	// removed; those a dead server left are removed at the next start.
	Dir string
	// AllowSecretInput lets a model write to a process that asked for a
	// password or passphrase (refused by default: a model must not type
	// secrets).
	AllowSecretInput bool
	// Board, when set, is where the replicas of a server tell each other
	// of their processes (the state.redis they share): read_process and
	// list_processes then answer for a process another replica runs, and
	// a process whose replica stopped renewing its lease is lost.
	Board policy.ProcessBoard
	// Replica names this server on the board (with a random suffix of
	// each run); Lease is how long its processes stay running there
	// without a renewal (15 s; renewed every third of it).
	Replica string
	Lease   time.Duration
}

func (l ProcessLimits) withDefaults() ProcessLimits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.PerOwner, 8)
	def(&l.PerPrincipal, 32)
	def(&l.PerServer, 256)
	if l.Idle <= 0 {
		l.Idle = 30 * time.Minute
	}
	if l.Keep <= 0 {
		l.Keep = 30 * time.Minute
	}
	if l.MaxTimeout <= 0 {
		l.MaxTimeout = 8 * time.Hour
	}
	if l.Memory <= 0 {
		l.Memory = 1 << 20
	}
	if l.File <= 0 {
		l.File = 64 << 20
	}
	if l.Dir == "" {
		l.Dir = filepath.Join(os.TempDir(), "toolgate-processes")
	}
	if l.Lease <= 0 {
		l.Lease = 15 * time.Second
	}
	return l
}

// The reasons a process ended.
const (
	ReasonExited        = "exited"
	ReasonStopped       = "stopped"
	ReasonTimeout       = "timeout"
	ReasonOwnerGone     = "owner_gone"
	ReasonIdle          = "idle"
	ReasonMemory        = "memory"
	ReasonOutputLimit   = "output_limit"
	ReasonServerStopped = "server_stopped"
)

// Processes is the registry of the processes started by start_process in
// this server: by id, by owner, with each owner's pod (the network its
// commands share). Make one with NewProcesses and give it to Tools through
// Options.Processes; Close stops every process (reason server_stopped).
// It is safe for concurrent use.
type Processes struct {
	limits ProcessLimits
	dir    string // this server's folder of spill files, under limits.Dir
	board  *board // nil: no board (one replica)

	mu     sync.Mutex
	byID   map[string]*process
	owners map[string]*ownerState
	closed bool
	done   chan struct{} // closed by Close: the janitor stops
	events func(ProcessEvent)
	once   sync.Once // starts the janitor with the first process
}

// ProcessEvent is a start, write, stop or end of a process, for the audit
// log (Processes.OnEvent). A write carries its length, not its text.
type ProcessEvent struct {
	Kind    string // "start", "write", "stop", "end"
	ID      string
	Owner   string // principal
	Session string
	Command string
	Reason  string // end: why
	Bytes   int    // write: how many bytes
}

// ownerState is what the registry keeps of one owner.
type ownerState struct {
	principal, session string
	last               time.Time    // the owner's last call
	pod                *sandbox.Pod // made with its first process
}

// NewProcesses returns an empty registry. Its spill files go under
// limits.Dir, in a folder of this process's pid; folders of pids that
// are no longer running (a server that died) are removed now.
func NewProcesses(limits ProcessLimits) *Processes {
	l := limits.withDefaults()
	p := &Processes{limits: l, byID: map[string]*process{}, owners: map[string]*ownerState{}, done: make(chan struct{})}
	p.dir = filepath.Join(l.Dir, strconv.Itoa(os.Getpid()))
	if l.Board != nil {
		p.board = &board{b: l.Board, replica: incarnation(l.Replica), lease: l.Lease, keep: l.Keep, told: map[string]mirrored{}}
	}
	sweepSpills(l.Dir)
	return p
}

// OnEvent sets the function told of each start, write, stop and end (the
// audit log's); nil: none.
func (p *Processes) OnEvent(fn func(ProcessEvent)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = fn
}

func (p *Processes) emit(ev ProcessEvent) {
	p.mu.Lock()
	fn := p.events
	p.mu.Unlock()
	if fn != nil {
		fn(ev)
	}
}

// sweepSpills removes the spill folders of servers that are gone.
func sweepSpills(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 || !e.IsDir() {
			continue
		}
		if pidAlive(pid) || pid == os.Getpid() {
			continue
		}
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// owner is who calls a process tool: its key (principal and session),
// parts, and the call (whose credential a line check judges by).
type owner struct {
	key, principal, session string
	call                    tool.Call
}

type ownerCtxKey struct{}

func ownerOfCall(call tool.Call) owner {
	return owner{key: call.Caller(), principal: call.Principal, session: call.Session, call: call}
}

func ownerOf(ctx context.Context) owner {
	o, _ := ctx.Value(ownerCtxKey{}).(owner)
	if o.key == "" {
		o.key = "\x00"
	}
	return o
}

// touch records a call of the owner (the idle clock starts again).
func (p *Processes) touch(o owner) *ownerState {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.owners[o.key]
	if st == nil {
		st = &ownerState{principal: o.principal, session: o.session}
		p.owners[o.key] = st
	}
	st.last = time.Now()
	return st
}

// podOf returns the owner's pod while it has a running process (its
// commands then share the process's network), else nil.
func (p *Processes) podOf(o owner) *sandbox.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.owners[o.key]
	if st == nil || st.pod == nil {
		return nil
	}
	for _, pr := range p.byID {
		if pr.owner == o.key && pr.running() {
			return st.pod
		}
	}
	return nil
}

// newID returns a random process id: 100 bits.
func newID() string {
	var b [13]byte
	rand.Read(b[:])
	return "p-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])[:20])
}

// admit reserves a place for a new process of o, and its pod; the error
// says which limit is reached.
func (p *Processes) admit(o owner) (*sandbox.Pod, *tool.Error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, tool.Errorf(tool.Unavailable, "the server is stopping: no process can start").WithRetry(time.Second)
	}
	var mine, principal, all int
	for _, pr := range p.byID {
		if !pr.running() {
			continue
		}
		all++
		if pr.owner == o.key {
			mine++
		}
		if pr.principal == o.principal {
			principal++
		}
	}
	limit := func(n, max int, whose string) *tool.Error {
		return tool.Errorf(tool.RateLimited, "%s already %d processes running, the most allowed", whose, n).
			WithSuggestion("stop one you no longer need (stop_process; list_processes shows them), then start this one").
			WithDetail("limit", max)
	}
	switch {
	case mine >= p.limits.PerOwner:
		return nil, limit(mine, p.limits.PerOwner, "this conversation has")
	case principal >= p.limits.PerPrincipal:
		return nil, limit(principal, p.limits.PerPrincipal, "you have")
	case all >= p.limits.PerServer:
		return nil, limit(all, p.limits.PerServer, "the server has")
	}
	st := p.owners[o.key]
	if st == nil {
		st = &ownerState{principal: o.principal, session: o.session, last: time.Now()}
		p.owners[o.key] = st
	}
	if st.pod == nil {
		st.pod = &sandbox.Pod{}
	}
	p.once.Do(func() { go p.janitor() })
	return st.pod, nil
}

func (p *Processes) add(pr *process) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.byID[pr.id] = pr
}

// get returns the owner's process id; another owner's is not found, as
// an unknown id is.
func (p *Processes) get(o owner, id string) (*process, *tool.Error) {
	p.mu.Lock()
	pr := p.byID[id]
	p.mu.Unlock()
	if pr == nil || pr.owner != o.key {
		return nil, p.notFound(id)
	}
	return pr, nil
}

func (p *Processes) notFound(id string) *tool.Error {
	return tool.Errorf(tool.NotFound, "no process %q", id).
		WithSuggestion("list_processes shows your processes and their ids; an exited process is kept for %s", p.limits.Keep)
}

// list returns the owner's processes, oldest first.
func (p *Processes) list(o owner) []*process {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*process
	for _, pr := range p.byID {
		if pr.owner == o.key {
			out = append(out, pr)
		}
	}
	slices.SortFunc(out, func(a, b *process) int { return a.started.Compare(b.started) })
	return out
}

// EndSession stops the processes of every owner of session (the MCP
// session ended: stdio's input closed, an HTTP session deleted or
// expired), reason owner_gone, and lets their pods go.
func (p *Processes) EndSession(session string) {
	p.endOwners(func(st *ownerState) bool { return st.session == session }, ReasonOwnerGone)
}

// endOwners stops the processes of the owners that match, with reason.
func (p *Processes) endOwners(match func(*ownerState) bool, reason string) {
	p.mu.Lock()
	var stop []*process
	var pods []*sandbox.Pod
	for key, st := range p.owners {
		if !match(st) {
			continue
		}
		for _, pr := range p.byID {
			if pr.owner == key {
				stop = append(stop, pr)
			}
		}
		if st.pod != nil {
			pods = append(pods, st.pod)
			st.pod = nil
		}
		if reason != ReasonIdle {
			delete(p.owners, key)
		}
	}
	p.mu.Unlock()
	p.stopAll(stop, reason)
	for _, pod := range pods {
		pod.Close()
	}
}

// stopAll stops processes at once, each with TERM and the default grace.
func (p *Processes) stopAll(list []*process, reason string) {
	var wg sync.WaitGroup
	for _, pr := range list {
		wg.Go(func() { pr.stop(syscall.SIGTERM, defaultGrace, reason) })
	}
	wg.Wait()
}

// Close stops every process (reason server_stopped) and waits until they
// are gone; no process starts after it.
func (p *Processes) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	p.mu.Unlock()
	p.endOwners(func(*ownerState) bool { return true }, ReasonServerStopped)
	all := p.all()
	// Those an EndSession is stopping right now (their owner is gone from
	// owners already) are waited for too, so that every end is told before
	// Close returns (and the audit log closes).
	p.stopAll(all, ReasonServerStopped)
	if p.board != nil {
		p.board.push(all, false) // the other replicas see server_stopped, not lost
	}
	for _, pr := range all {
		pr.out.remove()
	}
	os.RemoveAll(p.dir)
	return nil
}

// janitorEvery is how often idle owners and old exited processes are
// looked for.
const janitorEvery = 10 * time.Second

func (p *Processes) janitor() {
	t := time.NewTicker(janitorEvery)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			p.sweep(time.Now())
		}
	}
}

// sweep stops the processes of owners idle too long and forgets the
// exited processes kept long enough.
func (p *Processes) sweep(now time.Time) {
	p.endOwners(func(st *ownerState) bool { return now.Sub(st.last) > p.limits.Idle && st.pod != nil }, ReasonIdle)
	p.mu.Lock()
	var gone []*process
	for id, pr := range p.byID {
		if end := pr.endedAt(); !end.IsZero() && now.Sub(end) > p.limits.Keep {
			delete(p.byID, id)
			gone = append(gone, pr)
		}
	}
	for key, st := range p.owners {
		if st.pod == nil && now.Sub(st.last) > p.limits.Idle+p.limits.Keep {
			delete(p.owners, key)
		}
	}
	p.mu.Unlock()
	var ids []string
	for _, pr := range gone {
		pr.out.remove()
		ids = append(ids, pr.id)
	}
	if p.board != nil {
		p.board.forget(ids)
	}
}

// Check puts in res, the result of a call of any tool, a line for each
// process of the caller that exited since it was last told (and
// meta["toolgate/processes"]), and starts the caller's idle clock again:
// it has the shape of the engine's result check (engine.ResultChecker),
// so that every tool's result tells and every call counts, not only the
// process tools'. A caller that never started a process costs one map
// lookup.
func (p *Processes) Check(_ context.Context, _ tool.Definition, call tool.Call, res tool.Result) tool.Result {
	o := ownerOfCall(call)
	p.mu.Lock()
	st := p.owners[o.key]
	if st != nil {
		st.last = time.Now()
	}
	p.mu.Unlock()
	if st == nil {
		return res
	}
	return p.withNotices(o, res)
}

// notices returns the owner's processes that exited and were not yet
// reported, marking them reported.
func (p *Processes) notices(o owner) []*process {
	var out []*process
	for _, pr := range p.list(o) {
		if pr.takeNotice() {
			out = append(out, pr)
		}
	}
	return out
}

// defaultGrace is how long a process has between TERM and KILL when its
// owner or the server goes.
const defaultGrace = 3 * time.Second

// process is one process started by start_process.
type process struct {
	id, name, command string
	owner, principal  string
	session           string
	tty, stdinOpen    bool
	kind              string // "shell", "code" or "": how lines written to it are checked
	program           string // the shell or interpreter ("python")
	started           time.Time
	out               *procOutput
	in                *inputQueue // nil: stdin closed
	done              chan struct{}
	cancel            context.CancelFunc
	reads             emptyReads

	lineMu sync.Mutex
	line   string // what was typed of the line not yet ended (kind shell or code), checked with what comes next

	mu       sync.Mutex
	proc     *os.Process
	reason   string // set by who stops it, or at the end
	exited   bool
	exitCode *int
	signal   string
	ended    time.Time
	cpu      time.Duration
	noticed  bool
}

func (pr *process) running() bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return !pr.exited
}

func (pr *process) endedAt() time.Time {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.ended
}

// takeNotice reports whether the process exited and its owner was not
// told yet, and marks it told.
func (pr *process) takeNotice() bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if !pr.exited || pr.noticed {
		return false
	}
	pr.noticed = true
	return true
}

// finish records the end of the process's run.
func (pr *process) finish(o sandbox.Outcome, err error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.exited, pr.ended = true, time.Now()
	pr.cpu = o.Usage.CPU
	switch {
	case err != nil: // it did not run: neither exit code nor signal
	case o.Signal != "":
		pr.signal = o.Signal
	default:
		c := o.ExitCode
		pr.exitCode = &c
	}
	if pr.reason == "" {
		switch {
		case o.Killed == "timeout":
			pr.reason = ReasonTimeout
		case o.Killed == "memory" || contains(o.LimitsHit, "memory") && o.Signal == "SIGKILL":
			pr.reason = ReasonMemory
		case o.Killed == "output":
			pr.reason = ReasonOutputLimit
		default:
			pr.reason = ReasonExited
		}
	}
}

// stop ends the process: sig to its tree, up to grace for it to end,
// then KILL of the whole tree. reason is recorded unless it had ended.
func (pr *process) stop(sig syscall.Signal, grace time.Duration, reason string) {
	pr.mu.Lock()
	if !pr.exited && pr.reason == "" {
		pr.reason = reason
	}
	proc := pr.proc
	pr.mu.Unlock()
	if proc != nil && sig != syscall.SIGKILL {
		signalTree(proc, sig)
		select {
		case <-pr.done:
		case <-time.After(grace):
		}
	}
	pr.cancel() // the sandbox kills the namespace's init: the kernel, the rest
	<-pr.done
}

// signalTree sends sig to p and every process below it (their pids as
// /proc/PID/task/TID/children lists them): the init of a pid namespace
// ignores a signal it has no handler for, its children do not.
func signalTree(p *os.Process, sig syscall.Signal) {
	pids := []int{p.Pid}
	for i := 0; i < len(pids) && len(pids) < 4096; i++ {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pids[i]))
		for _, t := range tasks {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pids[i], t.Name()))
			for _, f := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(f); err == nil {
					pids = append(pids, n)
				}
			}
		}
	}
	p.Signal(sig) // through the pidfd: never another process
	for _, pid := range pids[1:] {
		signalPid(pid, sig)
	}
}

// inputQueue is what a model wrote to a process and it has not read yet:
// at most maxPending bytes, so that a process that does not read its
// input makes write_process fail instead of hang.
type inputQueue struct {
	mu      sync.Mutex
	buf     []byte
	closed  bool
	ready   chan struct{} // closed and replaced when data comes or the queue closes
	stopped bool          // the process is gone: Read returns EOF
}

const maxPending = 64 << 10

func newInputQueue() *inputQueue { return &inputQueue{ready: make(chan struct{})} }

var errInputFull = errors.New("the process has not read the input written before")

func (q *inputQueue) write(b []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.stopped {
		return errors.New("the input is closed")
	}
	if len(q.buf)+len(b) > maxPending {
		return errInputFull
	}
	q.buf = append(q.buf, b...)
	close(q.ready)
	q.ready = make(chan struct{})
	return nil
}

// close ends the input once what was written is read (eof).
func (q *inputQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.ready)
		q.ready = make(chan struct{})
	}
}

// stop ends the input at once (the process is gone).
func (q *inputQueue) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.stopped = true
	close(q.ready)
	q.ready = make(chan struct{})
}

// Read is the sandbox's side: it blocks until there is input.
func (q *inputQueue) Read(p []byte) (int, error) {
	for {
		q.mu.Lock()
		if q.stopped {
			q.mu.Unlock()
			return 0, errors.New("stopped")
		}
		if len(q.buf) > 0 {
			n := copy(p, q.buf)
			q.buf = q.buf[n:]
			q.mu.Unlock()
			return n, nil
		}
		if q.closed {
			q.mu.Unlock()
			return 0, io.EOF
		}
		ready := q.ready
		q.mu.Unlock()
		<-ready
	}
}

// emptyReads counts the reads in a row that found nothing new, to ask for
// a longer wait each time (the loop guard's growing minimum wait).
type emptyReads struct {
	mu sync.Mutex
	n  int
}

// minWait returns the least wait a read should make now: none for the
// first two empty reads in a row, then 1 s, 2 s, 4 s… up to 30 s.
func (e *emptyReads) minWait() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n < 2 {
		return 0
	}
	return min(time.Second<<min(e.n-2, 5), 30*time.Second)
}

func (e *emptyReads) record(empty bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if empty {
		e.n++
	} else {
		e.n = 0
	}
}

// untilRegexp compiles a start_process or read_process "until".
func untilRegexp(s string) (*regexp.Regexp, *tool.Error) {
	if s == "" {
		return nil, nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, tool.Errorf(tool.InvalidArguments, "until is not a regular expression: %v", err).
			WithSuggestion(`give a Go (RE2) regular expression, e.g. "Listening on|ready"`)
	}
	return re, nil
}
