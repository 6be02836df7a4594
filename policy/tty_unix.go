//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package policy

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether f is a terminal. It asks through SyscallConn,
// not Fd, which would put the file in blocking mode and so defeat the read
// deadlines that let a cancelled question stop waiting.
func isTerminal(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	rc.Control(func(fd uintptr) {
		_, err := unix.IoctlGetTermios(int(fd), ioctlGetTermios)
		ok = err == nil
	})
	return ok
}
