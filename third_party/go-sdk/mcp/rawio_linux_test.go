// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// PATCH(toolgate): patch 7. A non-blocking pipe read and written with raw
// system calls gives what the *os.File gives: the same bytes, io.EOF, and
// the same errors (a closed file, a passed deadline, a closed other end).
// Which streams are read and written so is checked here; that a connection
// reading raw reads every stream as v1.8.0's reader goroutine does is
// TestInlineReadMatchesReaderGoroutine's (patch_unix_test.go), whose
// patched connection reads raw.

// TestRawIO: which files are read and written raw.
func TestRawIO(t *testing.T) {
	r, w := pipe(t)
	if rawIO(r) == nil || rawIO(w) == nil {
		t.Error("an os.Pipe is not read or written raw")
	}
	b := os.NewFile(r.Fd(), "r") // Fd puts the pipe in blocking mode
	t.Cleanup(func() { b.Close() })
	if rawIO(b) != nil {
		t.Error("a blocking pipe is read raw (a raw read would block the thread)")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if rawIO(f) != nil {
		t.Error("a regular file is read raw")
	}
	if rawIO(io.NopCloser(r)) != nil || rawIO(nopCloserWriter{w}) != nil || rawIO(nil) != nil || rawIO((*os.File)(nil)) != nil {
		t.Error("not a file, yet read or written raw")
	}
	closed, _ := pipe(t)
	closed.Close()
	if rawIO(closed) != nil {
		t.Error("a closed file is read raw")
	}
	cmd := exec.Command("cat")
	in, err := cmd.StdinPipe() // os/exec's type, which embeds the *os.File
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if rawIO(in) == nil {
		t.Error("a command's stdin pipe is not written raw")
	}
}

// TestRawFileAllocs: a raw Read or Write allocates nothing (its system call
// is bound once), and reads and writes from several goroutines at once keep
// every byte (run with -race: the bound call's fields are guarded).
func TestRawFileAllocs(t *testing.T) {
	r, w := pipe(t)
	rr, rw := rawIO(r), rawIO(w)
	msg, buf := []byte("0123456789"), make([]byte, 64)
	if n := testing.AllocsPerRun(200, func() {
		if _, err := rw.Write(msg); err != nil {
			t.Fatal(err)
		}
		if n, err := rr.Read(buf); err != nil || n != len(msg) {
			t.Fatal(n, err)
		}
	}); n != 0 {
		t.Errorf("a raw Write and Read allocate %v times, want 0", n)
	}
	const writers, each = 4, 500
	done := make(chan error, writers)
	for range writers {
		go func() {
			for range each {
				if _, err := rw.Write(msg); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	got := make(chan int, 2)
	for range 2 {
		go func() {
			n, b := 0, make([]byte, 7)
			for {
				k, err := rr.Read(b)
				n += k
				if err != nil {
					got <- n
					return
				}
			}
		}()
	}
	for range writers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if n := <-got + <-got; n != writers*each*len(msg) {
		t.Errorf("read %d bytes, want %d", n, writers*each*len(msg))
	}
}

// TestRawStreams: a connection reads raw what it reads inline, and writes
// raw a command's stdin and an IOTransport's Writer that is a non-blocking
// file; everything else as v1.8.0 did.
func TestRawStreams(t *testing.T) {
	r, w := pipe(t)
	for _, tc := range []struct {
		name       string
		rw         io.ReadWriteCloser
		rawR, rawW bool
	}{
		{"polled pipes", rwc{r, w}, true, true},
		{"polled pipe, stdout-like writer", rwc{r, nopCloserWriter{w}}, true, false},
		{"reader behind NopCloser", rwc{io.NopCloser(r), w}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newIOConn(tc.rw)
			_, rawR := c.limiter.r.(*rawFile)
			_, rawW := c.writer().(*rawFile)
			if rawR != tc.rawR || rawW != tc.rawW {
				t.Errorf("reads raw %v, writes raw %v; want %v, %v", rawR, rawW, tc.rawR, tc.rawW)
			}
		})
	}
	ct := &CommandTransport{Command: exec.Command("cat")}
	conn, err := ct.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := conn.(*ioConn)
	_, rawR := c.limiter.r.(*rawFile)
	_, rawW := c.writer().(*rawFile)
	if !rawR || !rawW {
		t.Errorf("a command: reads raw %v, writes raw %v; want both", rawR, rawW)
	}
}

// TestRawFileMatchesFile: the bytes and errors of raw reads and writes are
// the file's.
func TestRawFileMatchesFile(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef\n"), 20000) // far more than a pipe holds
	for _, raw := range []bool{false, true} {
		t.Run(map[bool]string{false: "file", true: "raw"}[raw], func(t *testing.T) {
			// Bytes: a writer faster than its reader (partial writes, EAGAIN
			// on both sides), then io.EOF.
			r, w := pipe(t)
			var rd io.Reader = r
			var wr io.Writer = w
			if raw {
				rd, wr = rawIO(r), rawIO(w)
			}
			errc := make(chan error, 1)
			go func() {
				n, err := wr.Write(data)
				if err == nil && n != len(data) {
					err = io.ErrShortWrite
				}
				w.Close()
				errc <- err
			}()
			var got []byte
			buf := make([]byte, 1000)
			for {
				time.Sleep(time.Microsecond)
				n, err := rd.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF && n == 0 {
					break
				}
				if err != nil {
					t.Fatalf("read: %v", err)
				}
			}
			if err := <-errc; err != nil {
				t.Fatalf("write: %v", err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("read %d bytes, want the %d written", len(got), len(data))
			}
			if n, err := rd.Read(buf); n != 0 || err != io.EOF {
				t.Fatalf("read after the end: %d, %v", n, err)
			}
			if n, err := rd.Read(nil); n != 0 || err != nil {
				t.Fatalf("empty read: %d, %v", n, err)
			}
		})
	}
	// Errors: each case on a file and on its raw twin gives the same error.
	cases := []struct {
		name string
		do   func(t *testing.T, raw bool) error
	}{
		{"write, the reader gone", func(t *testing.T, raw bool) error {
			r, w := pipe(t)
			r.Close()
			_, err := writer(w, raw).Write([]byte("x"))
			return err
		}},
		{"read, closed", func(t *testing.T, raw bool) error {
			r, _ := pipe(t)
			rd := reader(r, raw)
			r.Close()
			_, err := rd.Read(make([]byte, 8))
			return err
		}},
		{"write, closed", func(t *testing.T, raw bool) error {
			_, w := pipe(t)
			wr := writer(w, raw)
			w.Close()
			_, err := wr.Write([]byte("x"))
			return err
		}},
		{"read, deadline passed", func(t *testing.T, raw bool) error {
			r, _ := pipe(t)
			r.SetReadDeadline(time.Now().Add(-time.Second))
			_, err := reader(r, raw).Read(make([]byte, 8))
			return err
		}},
		{"read, closed while waiting", func(t *testing.T, raw bool) error {
			r, _ := pipe(t)
			rd := reader(r, raw)
			go func() { time.Sleep(20 * time.Millisecond); r.Close() }()
			_, err := rd.Read(make([]byte, 8))
			return err
		}},
		{"write, deadline passes while the pipe is full", func(t *testing.T, raw bool) error {
			_, w := pipe(t)
			w.SetWriteDeadline(time.Now().Add(20 * time.Millisecond))
			_, err := writer(w, raw).Write(make([]byte, 1<<20))
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.do(t, false)
			got := tc.do(t, true)
			if want == nil || got == nil || got.Error() != want.Error() {
				t.Fatalf("raw: %v, file: %v", got, want)
			}
			var pg, pw *os.PathError
			if errors.As(got, &pg) != errors.As(want, &pw) {
				t.Fatalf("raw: %#v, file: %#v", got, want)
			}
			for _, target := range []error{os.ErrClosed, os.ErrDeadlineExceeded} {
				if errors.Is(got, target) != errors.Is(want, target) {
					t.Fatalf("raw: %v, file: %v (errors.Is %v)", got, want, target)
				}
			}
			if strings.Contains(tc.name, "reader gone") && !strings.Contains(got.Error(), "broken pipe") {
				t.Fatalf("raw: %v, want a broken pipe", got)
			}
		})
	}
}

func reader(f *os.File, raw bool) io.Reader {
	if raw {
		return rawIO(f)
	}
	return f
}

func writer(f *os.File, raw bool) io.Writer {
	if raw {
		return rawIO(f)
	}
	return f
}
