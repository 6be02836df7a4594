//go:build unix

package runner

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// awaitClose waits until nc's socket has something to read, and says
// whether that is its peer's close (or a reset): it peeks (MSG_PEEK), so
// what the peer sent stays to be read. It returns at nc's read deadline
// (os.ErrDeadlineExceeded), and at once, neither peeked nor closed, for a
// connection without a socket of its own.
func awaitClose(nc net.Conn) (peeked, closed bool, err error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false, false, nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false, false, nil
	}
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		for {
			n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				return false // nothing yet: wait on the poller
			}
			closed = n == 0 || err != nil
			return true
		}
	})
	return true, closed, err
}

// waiting reports whether nc's socket holds bytes not read yet (peeked,
// MSG_DONTWAIT: it never waits).
func waiting(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var n int
	var b [1]byte
	rc.Control(func(fd uintptr) {
		for {
			var err error
			if n, _, err = unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT); err != unix.EINTR {
				return
			}
		}
	})
	return n > 0
}
