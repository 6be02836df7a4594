//go:build unix

package exec

import "syscall"

// signalPid sends sig to pid.
func signalPid(pid int, sig syscall.Signal) { syscall.Kill(pid, sig) }

// pidAlive reports whether a process pid exists.
func pidAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }

const sigTSTP = syscall.SIGTSTP
