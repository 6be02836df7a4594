//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"errors"
	"io"
	"syscall"
)

// extraOpenFlags refuse a symbolic link as the last path element and keep a
// FIFO from blocking the open.
const extraOpenFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// tryLockFile tries to take the exclusive advisory lock that every process
// appending to the same log takes around its append; busy reports that
// another open file holds it. With raw, this and the other calls of an
// append are raw system calls where rawCalls says so (Options.RawCalls).
func tryLockFile(fd uintptr, raw bool) (busy bool, err error) {
	for {
		err := flock(fd, syscall.LOCK_EX|syscall.LOCK_NB, raw)
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return true, nil
		case !errors.Is(err, syscall.EINTR):
			return false, err
		}
	}
}

func unlockFile(fd uintptr, raw bool) error { return flock(fd, syscall.LOCK_UN, raw) }

// fileSize is the current size of the open file fd.
func fileSize(fd uintptr, raw bool) (int64, error) {
	var st syscall.Stat_t
	if err := fstat(fd, &st, raw); err != nil {
		return 0, err
	}
	return st.Size, nil
}

// errno is e as an error: nil for 0.
func errno(e syscall.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

// rawWrite writes b whole to fd with write(2) (raw where rawCalls),
// again after a short write or EINTR.
func rawWrite(fd uintptr, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := writeOnce(fd, b[n:])
		n += m
		switch {
		case err == syscall.EINTR:
		case err != nil:
			return n, err
		case m == 0:
			return n, io.ErrShortWrite
		}
	}
	return n, nil
}

// isSymlinkRefusal reports whether an open failed because of O_NOFOLLOW.
func isSymlinkRefusal(err error) bool { return errors.Is(err, syscall.ELOOP) }
