//go:build unix

package exec

import "syscall"

// mkfifo makes a named pipe (tests that a tool refuses one).
func mkfifo(path string, mode uint32) error { return syscall.Mkfifo(path, mode) }
