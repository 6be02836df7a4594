package sandbox

import (
	"errors"
	"sync/atomic"
)

// A lastingError is an ErrUnavailable that lasts as long as this process:
// the kernel or the container refuses what a backend is built on (a user
// namespace, a /proc of its own), which no retry changes, unlike a passing
// shortage (out of processes, memory or ports). Only failures that depend
// on no spec are marked so.
type lastingError struct{ error }

func (e lastingError) Unwrap() error { return e.error }

// Lasting reports whether err is an ErrUnavailable that lasts as long as
// this process (the kernel, the container or the system refuses what the
// backend is built on), not a passing shortage worth another try.
func Lasting(err error) bool { return errors.As(err, new(lastingError)) }

// refusal remembers the first lasting error a backend met. From then on
// the backend answers with it at once instead of starting a helper (or a
// bwrap) bound to fail again: where commands run at a lower link of a
// Chain, as in a pod without user namespaces, each command paid for the
// failed attempts of the stronger backends before it.
type refusal struct{ err atomic.Pointer[error] }

// get returns the lasting error met, or nil.
func (r *refusal) get() error {
	if p := r.err.Load(); p != nil {
		return *p
	}
	return nil
}

// note keeps err when it is lasting, and returns it.
func (r *refusal) note(err error) error {
	if Lasting(err) {
		r.err.CompareAndSwap(nil, &err)
	}
	return err
}
