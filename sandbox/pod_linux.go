package sandbox

import (
	"fmt"
	"slices"
)

// podImpl is the pod's starter: a process in the pod's user and network
// namespaces that starts its commands' helpers; and, with Native.Prestart,
// the helpers started ahead in the pod for its next commands.
type podImpl struct {
	st     *starter
	exe    string
	spares []*helper // oldest first
}

// takeSpare returns the oldest helper started ahead in the pod for exe, if
// any.
func (p *Pod) takeSpare(exe string) *helper {
	p.mu.Lock()
	defer p.mu.Unlock()
	var h *helper
	for len(p.impl.spares) > 0 && h == nil {
		h, p.impl.spares = p.impl.spares[0], p.impl.spares[1:]
		if h.exe != exe {
			close(h.jobs)
			h = nil
		}
	}
	return h
}

// refill (with Native.Prestart) starts helpers in the pod until as many
// wait as Native keeps (Spares), their groups limited to l; as
// Native.refill does, once a command is over. A spare that waited its idle
// time leaves; takeSpare's caller then starts a helper anew.
func (p *Pod) refill(n *Native, exe string, l Limits) {
	size := n.size()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.impl.st == nil || !p.impl.st.usable() {
		return
	}
	for len(p.impl.spares) < size {
		p.impl.spares = append(p.impl.spares, n.startHelper(exe, l, p.leave, p))
	}
}

// leave takes a helper that stopped waiting out of the pod's.
func (p *Pod) leave(h *helper) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.impl.spares = slices.DeleteFunc(p.impl.spares, func(x *helper) bool { return x == h })
}

// starter returns the pod's starter, started now for its first command.
// A pod whose starter is gone is over: its namespace went with it.
func (p *Pod) starter(exe string) (*starter, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return nil, fmt.Errorf("%w: the pod is closed", ErrUnavailable)
	case p.impl.st == nil:
		st, err := startStarter(exe, true)
		if err != nil {
			return nil, err
		}
		p.impl.st, p.impl.exe = st, exe
	case !p.impl.st.usable() || p.impl.exe != exe:
		return nil, fmt.Errorf("%w: the pod's namespace is gone", ErrUnavailable)
	}
	return p.impl.st, nil
}

// Close ends the pod's starter: no command starts in it any more, and
// its namespaces go once its last command is gone. Commands running in
// it are the caller's to stop.
func (p *Pod) Close() error {
	p.mu.Lock()
	st, spares := p.impl.st, p.impl.spares
	p.closed, p.impl.spares = true, nil
	p.mu.Unlock()
	for _, h := range spares {
		close(h.jobs)
	}
	for _, h := range spares {
		<-h.gone
	}
	if st != nil {
		st.close()
	}
	return nil
}
