//go:build linux

package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPollableStdin: a blocking pipe open for reading is read through the
// poller from a description of its own (the original's flags untouched,
// every byte read, EOF when the writer closes); anything else is left as
// it is.
func TestPollableStdin(t *testing.T) {
	blockingPipe := func(t *testing.T) (r, w *os.File) {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		r, w = os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
		t.Cleanup(func() { r.Close(); w.Close() })
		return r, w
	}
	fifo := func(t *testing.T, flags int) (r, w *os.File) {
		path := filepath.Join(t.TempDir(), "fifo")
		if err := unix.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		r = os.NewFile(uintptr(fd), path)
		w, err = os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		return r, w
	}
	for _, tc := range []struct {
		name string
		in   func(t *testing.T) (in io.Reader, w *os.File)
		poll bool
	}{
		{name: "blocking pipe", poll: true, in: func(t *testing.T) (io.Reader, *os.File) { return blockingPipe(t) }},
		{name: "blocking named pipe, read-write", poll: true, in: func(t *testing.T) (io.Reader, *os.File) { return fifo(t, unix.O_RDWR) }},
		{name: "pipe already polled", in: func(t *testing.T) (io.Reader, *os.File) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close(); w.Close() })
			return r, w
		}},
		{name: "write end of a pipe", in: func(t *testing.T) (io.Reader, *os.File) {
			_, w := blockingPipe(t)
			return w, nil
		}},
		{name: "regular file", in: func(t *testing.T) (io.Reader, *os.File) {
			path := filepath.Join(t.TempDir(), "in")
			if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f, nil
		}},
		{name: "character device", in: func(t *testing.T) (io.Reader, *os.File) {
			f, err := os.Open(os.DevNull)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f, nil
		}},
		{name: "not a file", in: func(t *testing.T) (io.Reader, *os.File) { return strings.NewReader("{}\n"), nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, w := tc.in(t)
			var before int
			if f, ok := in.(*os.File); ok {
				before = flags(t, f)
			}
			got := pollableStdin(in)
			if !tc.poll {
				if got != in {
					t.Fatalf("pollableStdin returned %v, want the input itself", got)
				}
				if f, ok := in.(*os.File); ok && flags(t, f) != before {
					t.Fatalf("the input's flags changed: %#x -> %#x", before, flags(t, f))
				}
				return
			}
			nf, ok := got.(*os.File)
			if !ok || nf == in {
				t.Fatalf("pollableStdin returned %T %v, want a new file", got, got)
			}
			defer nf.Close()
			if after := flags(t, in.(*os.File)); after != before || after&unix.O_NONBLOCK != 0 {
				t.Fatalf("the input's own flags changed: %#x -> %#x", before, after)
			}
			if flags(t, nf)&unix.O_NONBLOCK == 0 {
				t.Fatal("the new description is not non-blocking")
			}
			if err := nf.SetReadDeadline(time.Time{}); err != nil {
				t.Fatalf("the new file is not pollable: %v", err)
			}
			// Bytes written before and after are all read, then EOF once
			// the last writer is gone.
			want := strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n", 3000) // more than a pipe holds
			if _, err := io.WriteString(w, want[:100]); err != nil {
				t.Fatal(err)
			}
			rdwr := before&unix.O_ACCMODE == unix.O_RDWR
			go func() {
				io.WriteString(w, want[100:])
				w.Close()
				if rdwr {
					in.(*os.File).Close() // a read-write end is a writer too
				}
			}()
			data, err := io.ReadAll(nf)
			if err != nil || string(data) != want {
				t.Fatalf("read %d bytes (%v), want %d", len(data), err, len(want))
			}
		})
	}
}

func flags(t *testing.T, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fl int
	if cerr := rc.Control(func(fd uintptr) { fl, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }); cerr != nil || err != nil {
		t.Fatal(cerr, err)
	}
	return fl
}

// TestPollableStdout: a blocking pipe open for writing gets a non-blocking
// description of its own (the original's flags untouched, every byte
// written reaches the reader); anything else gets none.
func TestPollableStdout(t *testing.T) {
	blockingPipe := func(t *testing.T) (r, w *os.File) {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		r, w = os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
		t.Cleanup(func() { r.Close(); w.Close() })
		return r, w
	}
	r, w := blockingPipe(t)
	before := flags(t, w)
	nf := pollableStdout(w)
	if nf == nil {
		t.Fatal("a blocking pipe open for writing got no description of its own")
	}
	if after := flags(t, w); after != before || after&unix.O_NONBLOCK != 0 {
		t.Fatalf("the output's own flags changed: %#x -> %#x", before, after)
	}
	if flags(t, nf)&unix.O_NONBLOCK == 0 || flags(t, nf)&unix.O_ACCMODE != unix.O_WRONLY {
		t.Fatalf("the new description is %#x, want non-blocking and write-only", flags(t, nf))
	}
	want := strings.Repeat(`{"jsonrpc":"2.0","id":1,"result":{}}`+"\n", 3000) // more than a pipe holds
	go func() {
		io.WriteString(nf, want)
		nf.Close()
		w.Close()
	}()
	data, err := io.ReadAll(r)
	if err != nil || string(data) != want {
		t.Fatalf("read %d bytes (%v), want %d", len(data), err, len(want))
	}

	polledR, polledW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { polledR.Close(); polledW.Close() })
	readEnd, _ := blockingPipe(t)
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { null.Close() })
	for name, out := range map[string]io.Writer{
		"pipe already polled": polledW, "read end of a pipe": readEnd, "character device": null, "not a file": io.Discard,
	} {
		if f := pollableStdout(out); f != nil {
			f.Close()
			t.Errorf("%s: got a description of its own", name)
		}
	}
}
