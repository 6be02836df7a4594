//go:build unix

package sandboxes

import (
	"io"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// waiting reads a connection to a runner. A read that finds nothing waits
// for the answer in poll(2), up to waitInPoll, on the calling goroutine's
// thread, and only then parks the goroutine on the runtime's poller: a
// call's answer, which comes in a fraction of that, wakes the thread that
// waits for it directly, instead of the parked goroutine's thread looking
// for other work, sleeping, and being woken by the poller's (bench/remote:
// about 20 µs of the replica's CPU a call). A call longer than waitInPoll
// holds no thread. Cancelling shuts the connection's reading down (do),
// which ends the wait.
type waiting struct {
	rc syscall.RawConn
}

// waitingReader is nc read through waiting, or nc when it has no
// descriptor to wait on.
func waitingReader(nc net.Conn) io.Reader {
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			return &waiting{rc: rc}
		}
	}
	return nc
}

func (w *waiting) Read(p []byte) (int, error) {
	var (
		n      int
		err    error
		polled bool
	)
	rerr := w.rc.Read(func(fd uintptr) bool {
		for {
			n, err = unix.Read(int(fd), p)
			switch {
			case err == unix.EINTR:
				continue
			case err != unix.EAGAIN:
				return true
			case polled:
				return false // park on the poller, which calls again
			}
			polled = true
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			unix.Poll(fds, waitInPoll) // whatever it says, the read tells
		}
	})
	switch {
	case rerr != nil:
		return 0, rerr
	case err != nil:
		return 0, &net.OpError{Op: "read", Net: "tcp", Err: err}
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}

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
