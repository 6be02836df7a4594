package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Chain tries its backends in order and runs the command with the first
// that can (one that is unavailable here, or cannot give what the spec
// asks, is skipped); the Outcome names the backend that ran and the ones
// skipped. When none can, Run returns ErrRefused: a chain never runs a
// command unconfined. Put a DryRun last to report what would have run
// instead of refusing.
type Chain struct {
	Backends []Backend
}

// NewChain returns a chain of the given backends.
func NewChain(backends ...Backend) *Chain { return &Chain{Backends: backends} }

// Default returns the usual chain: native, then bubblewrap, then the
// reduced sandbox without namespaces, else refuse.
func Default() *Chain { return NewChain(&Native{}, &Bwrap{}, &Reduced{}) }

// Name returns "chain".
func (c *Chain) Name() string { return "chain" }

// upTo returns the chain of c's backends up to the one named name, that
// one included (all of them when none is).
func (c *Chain) upTo(name string) *Chain {
	for i, b := range c.Backends {
		if b.Name() == name {
			return &Chain{Backends: c.Backends[:i+1]}
		}
	}
	return c
}

// Run runs spec with the first backend that can.
func (c *Chain) Run(ctx context.Context, spec Spec) (Outcome, error) {
	var skipped []string
	for _, b := range c.Backends {
		o, err := b.Run(ctx, spec)
		if err == nil {
			o.Skipped = skipped
			return o, nil
		}
		if !errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrUnsupported) {
			return Outcome{}, err
		}
		skipped = append(skipped, b.Name()+": "+err.Error())
	}
	return Outcome{}, fmt.Errorf("%w (%s)", ErrRefused, strings.Join(skipped, "; "))
}
