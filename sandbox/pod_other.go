//go:build !linux

package sandbox

type podImpl struct{}

// Close ends the pod; there is nothing to end on this system.
func (p *Pod) Close() error { return nil }
