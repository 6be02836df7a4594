//go:build linux && (amd64 || arm64)

package audit

import (
	"syscall"
	"unsafe"
)

// rawCalls: Options.RawCalls makes raw system calls here.
const rawCalls = true

func flock(fd uintptr, how int, raw bool) error {
	if raw {
		_, _, e := syscall.RawSyscall(syscall.SYS_FLOCK, fd, uintptr(how), 0)
		return errno(e)
	}
	return syscall.Flock(int(fd), how)
}

func fstat(fd uintptr, st *syscall.Stat_t, raw bool) error {
	if raw {
		_, _, e := syscall.RawSyscall(syscall.SYS_FSTAT, fd, uintptr(unsafe.Pointer(st)), 0)
		return errno(e)
	}
	return syscall.Fstat(int(fd), st)
}

// writeOnce makes one write(2) of b, raw: rawWrite's step.
func writeOnce(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
