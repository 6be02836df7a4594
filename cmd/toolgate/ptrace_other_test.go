//go:build !linux

package main

import "errors"

// ptraceAttach fails: there is no upstream box outside Linux.
func ptraceAttach(int) error { return errors.ErrUnsupported }
