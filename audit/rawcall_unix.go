//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import "syscall"

// Options.RawCalls changes nothing here: the calls are ordinary ones.

func flock(fd uintptr, how int, _ bool) error { return syscall.Flock(int(fd), how) }

func fstat(fd uintptr, st *syscall.Stat_t, _ bool) error { return syscall.Fstat(int(fd), st) }

func write(fd uintptr, b []byte, _ bool) (int, error) {
	n, err := syscall.Write(int(fd), b)
	return max(n, 0), err
}
