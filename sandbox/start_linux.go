package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
)

// Process is a long-lived command started by Native.Start: a server that
// speaks on its standard input and output (an MCP server over stdio).
// It runs in the same sandbox as a command of Run, with no wall-clock
// limit: until it ends, Kill is called or the context given to Start ends.
// It is pid 1 of its pid namespace, so when it goes, the kernel kills
// every process it left (double-forked daemons included); and the helper
// is killed with the thread of this process that started it (Pdeathsig),
// so nothing outlives the program that started it either.
type Process struct {
	// Stdin is the command's standard input (close it to send EOF);
	// Stdout its standard output: the pipes themselves (non-blocking, the
	// runtime's poller waits on them), nothing copies between them and
	// the command. Stdout ends once every process of the sandbox is gone;
	// closing it makes the command's writes fail. The caller closes both.
	Stdin  *os.File
	Stdout *os.File

	// Protections are what held, measured as the command started.
	Protections Protections

	stderr io.Writer
	ready  chan struct{} // closed once the command was started
	mu     sync.Mutex
	l      *launched
	res    chan jobResult
	done   chan struct{} // closed when the outcome is known
	out    Outcome
	err    error
}

// Start starts spec's command in the sandbox and returns once it runs (or
// could not be started: the error then says why, as Run's would).
// Spec.Stdin and Limits.Wall are not used; Limits.CPU is the CPU time of
// each process (give a long-lived server a large one); the command's
// standard error goes to stderr (nil: discarded).
func (n *Native) Start(ctx context.Context, spec Spec, stderr io.Writer) (*Process, error) {
	p, err := prepare(spec)
	if err != nil {
		return nil, err
	}
	exe, err := n.helperProgram()
	if err != nil {
		return nil, err
	}
	cfg, err := helperConfig(p)
	if err != nil {
		return nil, err
	}
	if stderr == nil {
		stderr = io.Discard
	}
	proc := &Process{stderr: stderr, ready: make(chan struct{}),
		res: make(chan jobResult, 1), done: make(chan struct{})}
	j := &job{ctx: ctx, p: p, cfg: cfg, res: proc.res, stream: proc}
	// A helper started ahead for these very limits (WarmFor), else one of
	// its own: a spare of the pool had its groups made for another Run's
	// limits, and a started process keeps its helper for as long as it
	// runs (nothing refills the pool after it).
	if h := n.takeSpareFor(exe, p.limits); h == nil || !h.give(j) { // none, or it waited too long and left
		n.startHelper(exe, p.limits, nil, nil).give(j)
	}
	go func() {
		r := <-proc.res
		proc.mu.Lock()
		proc.out, proc.err = r.out, r.err
		proc.mu.Unlock()
		close(proc.done)
	}()
	select {
	case <-proc.ready:
		return proc, nil
	case <-proc.done:
		if proc.err != nil {
			return nil, proc.err
		}
		return nil, fmt.Errorf("sandbox: %s ended as it started (exit %d%s)", p.argv[0], proc.out.ExitCode, signalText(proc.out.Signal))
	}
}

func signalText(sig string) string {
	if sig == "" {
		return ""
	}
	return ", " + sig
}

// started is called by the helper's goroutine once the command runs,
// with its streams: they are the caller's from then on.
func (p *Process) started(l *launched, held Protections, s *streams) {
	p.mu.Lock()
	p.l = l
	p.Protections = held
	p.Stdin, p.Stdout = s.in, s.out
	p.mu.Unlock()
	close(p.ready)
}

// handed reports whether the streams were handed to the caller.
func (p *Process) handed() bool {
	select {
	case <-p.ready:
		return true
	default:
		return false
	}
}

// Kill ends the command and every process in its sandbox.
func (p *Process) Kill() {
	p.mu.Lock()
	l := p.l
	p.mu.Unlock()
	if l != nil {
		l.kill("stopped")
	}
}

// Done is closed when the command has ended and its outcome is known.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the command to end and returns its outcome (the output
// streams are not in it: they went to Stdout and stderr).
func (p *Process) Wait() (Outcome, error) {
	<-p.done
	return p.out, p.err
}
