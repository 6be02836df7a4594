package sandbox

import "fmt"

// podImpl is the pod's starter: a process in the pod's user and network
// namespaces that starts its commands' helpers.
type podImpl struct {
	st  *starter
	exe string
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
	st := p.impl.st
	p.closed = true
	p.mu.Unlock()
	if st != nil {
		st.close()
	}
	return nil
}
