package sandbox

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// streams are the standard files of a command whose output is streamed
// (Spec.Stream): a pipe for its input and one for its output and error
// together, or one pseudo-terminal for all three.
type streams struct {
	in, out    *os.File // this process's ends (the same terminal master with a TTY)
	theirs     [2]*os.File
	tty        bool
	outputDone chan struct{}
	closeOnce  sync.Once
}

func openStreams(tty bool) (*streams, error) {
	s := &streams{tty: tty, outputDone: make(chan struct{})}
	if tty {
		m, slave, err := openPTY()
		if err != nil {
			return nil, err
		}
		s.in, s.out, s.theirs = m, m, [2]*os.File{slave, slave}
		return s, nil
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	s.in, s.out, s.theirs = inW, outR, [2]*os.File{inR, outW}
	return s, nil
}

// openPTY opens a new pseudo-terminal of TTYCols×TTYRows: its master
// (non-blocking, for the poller) and its slave.
func openPTY() (master, slave *os.File, err error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: terminal: %w", err)
	}
	fail := func(err error) (*os.File, *os.File, error) {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("sandbox: terminal: %w", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		return fail(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		return fail(err)
	}
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: TTYRows, Col: TTYCols}); err != nil {
		return fail(err)
	}
	sfd, err := unix.Open(fmt.Sprintf("/dev/pts/%d", n), unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	return os.NewFile(uintptr(fd), "pty-master"), os.NewFile(uintptr(sfd), "pty"), nil
}

// fds are the files the helper is sent: stdin, then the output.
func (s *streams) fds() []int {
	return []int{int(s.theirs[0].Fd()), int(s.theirs[1].Fd())}
}

// closeTheirs closes the helper's ends here (it has them).
func (s *streams) closeTheirs() {
	for _, f := range s.theirs {
		f.Close() // twice the same file with a terminal: the second is a no-op
	}
}

// closeOurs closes this process's ends (of streams never handed over).
func (s *streams) closeOurs() {
	s.in.Close()
	s.out.Close()
}

// start closes the helper's ends here and copies input to the command and
// its output to w.
func (s *streams) start(w io.Writer, input io.Reader) {
	s.closeTheirs()
	go func() {
		defer close(s.outputDone)
		io.Copy(w, s.out) // a terminal's master reads EIO once every slave is closed
	}()
	switch {
	case input != nil:
		go func() {
			io.Copy(s.in, input)
			if !s.tty {
				s.in.Close()
			}
		}()
	case !s.tty:
		s.in.Close()
	}
}

// finish waits (at most delay) for the output of a command that is over,
// then closes this process's ends.
func (s *streams) finish(delay time.Duration) {
	select {
	case <-s.outputDone:
	case <-time.After(delay):
	}
	s.closeOnce.Do(func() {
		s.out.Close()
		if !s.tty {
			s.in.Close()
		}
	})
	<-s.outputDone
}
