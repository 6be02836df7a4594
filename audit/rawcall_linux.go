package audit

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawCalls says whether Options.RawCalls makes raw system calls here: on
// 64-bit Linux, where the calls below take their arguments whole (32-bit
// systems lock with fcntl64).
const rawCalls = unsafe.Sizeof(uintptr(0)) == 8

// errno is e as an error: nil for 0.
func errno(e syscall.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

func flock(fd uintptr, how int, raw bool) error {
	if raw && rawCalls {
		_, _, e := syscall.RawSyscall(syscall.SYS_FLOCK, fd, uintptr(how), 0)
		return errno(e)
	}
	return syscall.Flock(int(fd), how)
}

func fstat(fd uintptr, st *syscall.Stat_t, raw bool) error {
	if raw && rawCalls {
		_, _, e := syscall.RawSyscall(syscall.SYS_FSTAT, fd, uintptr(unsafe.Pointer(st)), 0)
		return errno(e)
	}
	return syscall.Fstat(int(fd), st)
}

func write(fd uintptr, b []byte, raw bool) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if raw && rawCalls {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if e != 0 {
			return 0, e
		}
		return int(n), nil
	}
	n, err := syscall.Write(int(fd), b)
	return max(n, 0), err
}

// fcntlLock is fcntl(fd, cmd, lk) for the open file description locks of
// the waiting flag (F_OFD_SETLK, F_OFD_GETLK: neither waits).
func fcntlLock(fd uintptr, cmd int, lk *unix.Flock_t, raw bool) error {
	if raw && rawCalls {
		_, _, e := unix.RawSyscall(unix.SYS_FCNTL, fd, uintptr(cmd), uintptr(unsafe.Pointer(lk)))
		return errno(e)
	}
	return unix.FcntlFlock(fd, cmd, lk)
}
