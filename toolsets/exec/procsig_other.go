//go:build !unix

package exec

import "syscall"

// signalPid does nothing here: processes run in Linux sandboxes only.
func signalPid(pid int, sig syscall.Signal) {}

// pidAlive reports true: nothing is swept here.
func pidAlive(pid int) bool { return true }

const sigTSTP = syscall.Signal(20)
