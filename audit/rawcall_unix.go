//go:build darwin || freebsd || netbsd || openbsd || dragonfly || (linux && !(amd64 || arm64))

package audit

import "syscall"

// rawCalls: Options.RawCalls changes nothing here (raw calls are made on
// Linux on amd64 and arm64): the calls are ordinary ones.
const rawCalls = false

func flock(fd uintptr, how int, _ bool) error { return syscall.Flock(int(fd), how) }

func fstat(fd uintptr, st *syscall.Stat_t, _ bool) error { return syscall.Fstat(int(fd), st) }

// writeOnce makes one write(2) of b: rawWrite's step.
func writeOnce(fd uintptr, b []byte) (int, error) {
	n, err := syscall.Write(int(fd), b)
	return max(n, 0), err
}
