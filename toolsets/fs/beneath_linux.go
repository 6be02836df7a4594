package fs

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"
)

// beneathHow opens for reading with the kernel resolving the path beneath
// the root's handle, through no symbolic link of any kind (any component,
// the last included, and no /proc magic link): a path that would go
// through one fails with ELOOP, and the walk decides. Nonblocking, so that
// a FIFO swapped in after the type check cannot hang the open.
var beneathHow = unix.OpenHow{
	Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NOFOLLOW | unix.O_NONBLOCK,
	Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
}

// openBeneath is read_file's fast open: for a path that is already
// canonical (no ".", ".." or empty component) and not protected as
// written, three system calls — the type of what the path names (fstatat,
// so that nothing but a regular file is ever opened), openat2 beneath the
// root through no symbolic link, and fstat of the open file (the same
// file, still regular, no other hard link) — replace the walk's Lstat per
// component, os.Root's open and the /proc/self/fd check. Without symbolic
// links the path as written is where it leads, and the kernel checks that
// atomically with the open, so a component swapped for a link at any
// moment makes the open fail. ok is false whenever anything is not so
// (the path goes through a link, does not exist, is not a regular file,
// ...): the caller then takes the walk, which gives the answer and its
// error exactly as before.
func (s *Set) openBeneath(p string) (l Location, f io.ReadCloser, size int64, ok bool) {
	if s.roots.noOpenat2.Load() || checkPath(p) != nil {
		return Location{}, nil, 0, false
	}
	l, ok = s.roots.lexical(p)
	if !ok || s.guard.check(l, Read) != nil {
		return Location{}, nil, 0, false
	}
	dir := l.root.handle()
	if dir < 0 {
		return Location{}, nil, 0, false
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dir, l.Rel, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		l.root.release()
		return Location{}, nil, 0, false
	}
	if s.beforeOpen != nil {
		s.beforeOpen(l)
	}
	how := beneathHow
	fd, err := unix.Openat2(dir, l.Rel, &how)
	l.root.release()
	if err != nil {
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
			s.roots.noOpenat2.Store(true)
		}
		return Location{}, nil, 0, false
	}
	var got unix.Stat_t
	if err := unix.Fstat(fd, &got); err != nil || got.Mode&unix.S_IFMT != unix.S_IFREG ||
		got.Dev != st.Dev || got.Ino != st.Ino || (got.Nlink > 1 && !s.opts.AllowHardLinks) {
		unix.Close(fd)
		return Location{}, nil, 0, false
	}
	return l, &fdFile{fd: fd}, got.Size, true
}

// fdFile reads a regular file by its descriptor: an *os.File would cost an
// fcntl and an epoll_ctl (refused for a regular file) on every open. Its
// end of file is sticky: bufio forgets an io.EOF once returned and would
// ask again, one read(2) more per call; what is read is the file up to the
// first time its end was met.
type fdFile struct {
	fd  int
	eof bool
}

func (f *fdFile) Read(b []byte) (int, error) {
	if f.eof {
		return 0, io.EOF
	}
	for {
		n, err := unix.Read(f.fd, b)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(b) > 0:
			f.eof = true
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f *fdFile) Close() error { return unix.Close(f.fd) }
