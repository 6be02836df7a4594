package main

import "syscall"

// ptraceAttach attaches to pid (the hostile upstream tries it on its box's
// init: box_test.go).
func ptraceAttach(pid int) error { return syscall.PtraceAttach(pid) }
