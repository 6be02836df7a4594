// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"io"
	"os"
	"sync"
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

	// The system call of the Read (and of the Write) in progress, bound
	// once with its buffer and results in these fields: a closure made per
	// call escaped to the heap with the results it wrote, two allocations
	// a Read and two a Write, four pipe calls of a gateway's call.
	rmu  sync.Mutex
	rp   []byte
	rn   int
	rerr syscall.Errno
	read func(fd uintptr) bool

	wmu   sync.Mutex
	wq    []byte
	wn    int
	werr  syscall.Errno
	write func(fd uintptr) bool
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
	r := &rawFile{f: f, conn: conn}
	r.read, r.write = r.readFD, r.writeFD
	return r
}

func (r *rawFile) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return r.f.Read(p)
	}
	if len(p) > maxRW {
		p = p[:maxRW]
	}
	r.rmu.Lock()
	r.rp = p
	err := r.conn.Read(r.read)
	n, errno := r.rn, r.rerr
	r.rp, r.rn, r.rerr = nil, 0, 0
	r.rmu.Unlock()
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

// readFD reads into r.rp, as the RawConn's Read calls it: false asks the
// poller to wait.
func (r *rawFile) readFD(fd uintptr) bool {
	for {
		r1, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&r.rp[0])), uintptr(len(r.rp)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // the poller waits
		}
		r.rn, r.rerr = int(r1), e
		return true
	}
}

func (r *rawFile) Write(p []byte) (int, error) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	defer func() { r.wq = nil }()
	n := 0
	for n < len(p) {
		q := p[n:]
		if len(q) > maxRW {
			q = q[:maxRW]
		}
		r.wq, r.wn, r.werr = q, 0, 0
		err := r.conn.Write(r.write)
		m, errno := r.wn, r.werr
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

// writeFD writes r.wq, as the RawConn's Write calls it.
func (r *rawFile) writeFD(fd uintptr) bool {
	for {
		r1, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&r.wq[0])), uintptr(len(r.wq)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		r.wn, r.werr = int(r1), e
		return true
	}
}
