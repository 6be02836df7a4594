//go:build unix

package cli

import (
	"os"
	"syscall"
)

// noFollow opens a path that is not a link.
const noFollow = syscall.O_NOFOLLOW

// noBlock opens a FIFO without waiting for its other end (a regular file
// reads as without it).
const noBlock = syscall.O_NONBLOCK

// lockFolder takes an exclusive flock of a box folder's lock file f,
// waiting for it or not (then an error if another holds it). The kernel
// frees it when the holder's process ends, however it ends.
func lockFolder(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

// ownedByUser reports whether fi is owned by this process's user.
func ownedByUser(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
