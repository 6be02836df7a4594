//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
)

// Native runs commands in new Linux namespaces; on this system it is
// unavailable.
type Native struct {
	Executable string
	NoCgroup   bool
	Prestart   bool
}

// Close does nothing here.
func (n *Native) Close() error { return nil }

// Warm does nothing here: there is no helper to start.
func (n *Native) Warm() {}

// WarmFor does nothing here: there is no helper to start.
func (n *Native) WarmFor(Limits) {}

// Name returns "native".
func (n *Native) Name() string { return "native" }

// Run returns ErrUnavailable: the native backend needs Linux.
func (n *Native) Run(ctx context.Context, spec Spec) (Outcome, error) {
	if _, err := prepare(spec); err != nil {
		return Outcome{}, err
	}
	return Outcome{}, lastingError{fmt.Errorf("%w: the native sandbox needs Linux (this is %s)", ErrUnavailable, runtime.GOOS)}
}

// Init returns false: there is no sandbox helper outside Linux.
func Init() bool { return false }

// Bwrap runs commands through bubblewrap; on this system it is
// unavailable.
type Bwrap struct{ Path string }

// Name returns "bwrap".
func (b *Bwrap) Name() string { return "bwrap" }

// Run returns ErrUnavailable: bubblewrap needs Linux.
func (b *Bwrap) Run(ctx context.Context, spec Spec) (Outcome, error) {
	if _, err := prepare(spec); err != nil {
		return Outcome{}, err
	}
	return Outcome{}, lastingError{fmt.Errorf("%w: bubblewrap needs Linux", ErrUnavailable)}
}

// Process is a long-lived command started by Native.Start; on this system
// none can be.
type Process struct {
	Stdin       *os.File
	Stdout      *os.File
	Protections Protections
}

// Start returns ErrUnavailable: the native backend needs Linux.
func (n *Native) Start(ctx context.Context, spec Spec, stderr io.Writer) (*Process, error) {
	if _, err := prepare(spec); err != nil {
		return nil, err
	}
	return nil, lastingError{fmt.Errorf("%w: the native sandbox needs Linux (this is %s)", ErrUnavailable, runtime.GOOS)}
}

// Kill does nothing here.
func (p *Process) Kill() {}

// Done is never closed here.
func (p *Process) Done() <-chan struct{} { return nil }

// Wait returns ErrUnavailable.
func (p *Process) Wait() (Outcome, error) { return Outcome{}, ErrUnavailable }

// Reduced runs commands under Landlock and seccomp without namespaces; on
// this system it is unavailable.
type Reduced struct {
	Executable string
	NoCgroup   bool
}

// Name returns "reduced".
func (r *Reduced) Name() string { return "reduced" }

// Close does nothing here.
func (r *Reduced) Close() error { return nil }

// Run returns ErrUnavailable: the reduced sandbox needs Linux.
func (r *Reduced) Run(ctx context.Context, spec Spec) (Outcome, error) {
	if _, err := prepare(spec); err != nil {
		return Outcome{}, err
	}
	return Outcome{}, lastingError{fmt.Errorf("%w: the reduced sandbox needs Linux (this is %s)", ErrUnavailable, runtime.GOOS)}
}

// linkedReadOnly checks nothing here: no backend runs a command.
func linkedReadOnly(Spec) error { return nil }
