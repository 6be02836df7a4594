//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"errors"
	"syscall"
)

// extraOpenFlags refuse a symbolic link as the last path element and keep a
// FIFO from blocking the open.
const extraOpenFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// tryLockFile tries to take the exclusive advisory lock that every process
// appending to the same log takes around its append; busy reports that
// another open file holds it.
func tryLockFile(fd uintptr) (busy bool, err error) {
	for {
		err := syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
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

func unlockFile(fd uintptr) error { return syscall.Flock(int(fd), syscall.LOCK_UN) }

// fileSize is the current size of the open file fd.
func fileSize(fd uintptr) (int64, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(fd), &st); err != nil {
		return 0, err
	}
	return st.Size, nil
}

// isSymlinkRefusal reports whether an open failed because of O_NOFOLLOW.
func isSymlinkRefusal(err error) bool { return errors.Is(err, syscall.ELOOP) }
