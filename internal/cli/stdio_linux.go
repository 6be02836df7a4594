package cli

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pollable opens f again through /proc/self/fd in non-blocking mode when
// it is a pipe open for reading (or, with write, for writing) in blocking
// mode (see pollableStdin), else it returns nil.
func pollable(f *os.File, write bool) *os.File {
	rc, err := f.SyscallConn() // not f.Fd(), which would make a pollable file blocking
	if err != nil {
		return nil
	}
	mode, other := unix.O_RDONLY, unix.O_WRONLY
	if write {
		mode, other = unix.O_WRONLY, unix.O_RDONLY
	}
	var out *os.File
	rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		if err := unix.Fstat(int(fd), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			return
		}
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		if err != nil || fl&unix.O_NONBLOCK != 0 || fl&unix.O_ACCMODE == other {
			return // already polled, or not open for this
		}
		nfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(int(fd)), mode|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		out = os.NewFile(uintptr(nfd), f.Name())
	})
	return out
}
