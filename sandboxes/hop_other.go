//go:build !unix

package sandboxes

import (
	"io"
	"net"
	"syscall"
)

// waitingReader is nc itself where there is no poll(2) to wait in first.
func waitingReader(nc net.Conn) io.Reader { return nc }

// open says a kept connection cannot be asked whether it is still open
// here, so none is used again after it idled: each call dials afresh.
func open(syscall.RawConn) bool { return false }
