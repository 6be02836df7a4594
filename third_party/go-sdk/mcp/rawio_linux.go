// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// PATCH(toolgate): a pipe in non-blocking mode is read and written with raw
// system calls (patch 7).
//
// os.File's Read and Write tell the scheduler they enter a system call
// (entersyscall). While the process waits for input, the runtime's monitor
// thread (sysmon) sleeps; the first system call after that wakes it, and it
// then polls every 20 µs for as long as any goroutine runs. A stdio gateway
// wakes it at least twice per call (the request, the answer), and perf put
// the monitor's wake-ups at about a quarter of toolgate proxy's CPU. On a
// non-blocking pipe a read or write never blocks (EAGAIN instead), which is
// what a raw system call is for; waiting is still the poller's, through the
// file's RawConn, which also keeps its deadlines and Close.

// rawFile reads and writes a non-blocking pipe or socket with raw system
// calls. Its results are the file's own: n, io.EOF at the end, and the
// file's errors (an error of the call in an *os.PathError; a closed file
// or a passed deadline is answered by the file's own Read or Write).
type rawFile struct {
	f    rawFiler
	conn syscall.RawConn
}

// rawFiler is an *os.File, or a type that embeds one (os/exec's stdin
// pipe).
type rawFiler interface {
	io.Reader
	io.Writer
	Name() string
	SyscallConn() (syscall.RawConn, error)
}

// maxRW is the most one system call reads or writes (internal/poll's).
const maxRW = 1 << 30

// rawIO returns x read and written with raw system calls when it is a file
// in non-blocking mode that the runtime's poller waits on, else nil.
func rawIO(x any) *rawFile {
	f, ok := x.(rawFiler)
	if !ok {
		return nil
	}
	conn, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	nonblocking := false
	if conn.Control(func(fd uintptr) {
		fl, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nonblocking = errno == 0 && fl&syscall.O_NONBLOCK != 0
	}) != nil || !nonblocking {
		return nil
	}
	return &rawFile{f: f, conn: conn}
}

func (r *rawFile) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return r.f.Read(p)
	}
	if len(p) > maxRW {
		p = p[:maxRW]
	}
	var (
		n     int
		errno syscall.Errno
	)
	err := r.conn.Read(func(fd uintptr) bool {
		for {
			r1, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // the poller waits
			}
			n, errno = int(r1), e
			return true
		}
	})
	switch {
	case err != nil: // closed, or past its deadline: the file says so
		return r.f.Read(p)
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (r *rawFile) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		q := p[n:]
		if len(q) > maxRW {
			q = q[:maxRW]
		}
		var (
			m     int
			errno syscall.Errno
		)
		err := r.conn.Write(func(fd uintptr) bool {
			for {
				r1, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&q[0])), uintptr(len(q)))
				switch e {
				case syscall.EINTR:
					continue
				case syscall.EAGAIN:
					return false
				}
				m, errno = int(r1), e
				return true
			}
		})
		switch {
		case err != nil:
			k, err := r.f.Write(p[n:])
			return n + k, err
		case errno != 0:
			return n, &os.PathError{Op: "write", Path: r.f.Name(), Err: errno}
		case m == 0:
			return n, &os.PathError{Op: "write", Path: r.f.Name(), Err: io.ErrUnexpectedEOF}
		}
		n += m
	}
	return n, nil
}
