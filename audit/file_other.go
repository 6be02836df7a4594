//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package audit

import "errors"

// errUnsupported fails closed where the file locking that keeps concurrent
// appenders from breaking the chain is not implemented.
var errUnsupported = errors.New("audit: file logs need a Unix system with flock(2)")

const extraOpenFlags = 0

const rawCalls = false // Options.RawCalls changes nothing here

func tryLockFile(uintptr, bool) (bool, error) { return false, errUnsupported }
func unlockFile(uintptr, bool) error          { return errUnsupported }
func fileSize(uintptr, bool) (int64, error)   { return 0, errUnsupported }
func rawWrite(uintptr, []byte) (int, error)   { return 0, errUnsupported }
func isSymlinkRefusal(error) bool             { return false }
