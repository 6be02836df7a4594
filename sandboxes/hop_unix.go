//go:build unix

package sandboxes

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// open says whether a kept connection's socket is still open, as far as
// it can tell now: nothing to read on it and not closed by the runner (a
// runner that restarted, or closed it idle). A runner may still close it
// just after.
func open(rc syscall.RawConn) bool {
	alive := false
	var b [1]byte
	err := rc.Read(func(fd uintptr) bool {
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		alive = err == unix.EAGAIN // nothing yet: neither data nor the runner's close
		return true
	})
	return err == nil && alive
}
