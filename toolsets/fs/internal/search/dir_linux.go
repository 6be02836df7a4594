//go:build linux

package search

import (
	"encoding/binary"
	"io/fs"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// dir is an open folder of the walk, shared by the jobs of its entries and
// closed when the last of them is done.
//
// On Linux the walk works on raw descriptors, which saves half the system
// calls of *os.File (poller registration, eager lstat of every entry of a
// folder opened in an os.Root): the searched folder is opened through the
// os.Root, and everything below it with openat(2) relative to its folder's
// descriptor, by a single name read from that folder and with O_NOFOLLOW, so
// no open can leave the folder, let alone the root.
type dir struct {
	refs atomic.Int32
	fd   int
	top  *os.File // the searched folder, opened through the root; nil below
}

func openTop(root *os.Root, name string) (*dir, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	d := &dir{fd: int(f.Fd()), top: f}
	d.refs.Store(1)
	return d, nil
}

func (d *dir) release() {
	if d.refs.Add(-1) == 0 {
		if d.top != nil {
			d.top.Close()
		} else {
			unix.Close(d.fd)
		}
	}
}

func (d *dir) sub(name string) (*dir, error) {
	fd, err := openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	s := &dir{fd: fd}
	s.refs.Store(1)
	return s, nil
}

func openat(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// list reads the folder's entries with their types, using scratch as the
// getdents buffer.
func (d *dir) list(scratch *[]byte) ([]entry, error) {
	if len(*scratch) < 32<<10 {
		*scratch = make([]byte, 32<<10)
	}
	buf := *scratch
	var entries []entry
	for {
		n, err := unix.Getdents(d.fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return entries, err
		}
		if n <= 0 {
			return entries, nil
		}
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			typ := b[18]
			name := b[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			b = b[reclen:]
			if len(name) == 0 || name[0] == '.' && (len(name) == 1 || len(name) == 2 && name[1] == '.') {
				continue
			}
			e := entry{name: string(name)}
			switch typ {
			case unix.DT_REG:
			case unix.DT_DIR:
				e.typ = fs.ModeDir
			case unix.DT_LNK:
				e.typ = fs.ModeSymlink
			case unix.DT_UNKNOWN:
				var st unix.Stat_t
				if err := unix.Fstatat(d.fd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					continue
				}
				e.typ = modeType(st.Mode)
			default:
				e.typ = fs.ModeIrregular
			}
			entries = append(entries, e)
		}
	}
}

func modeType(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}

// read reads the regular file name of the folder into the worker's buffer.
// It opens without blocking and checks the type before reading, so a FIFO
// put in place of the file cannot hang the search.
func (d *dir) read(name string, w *worker) ([]byte, readStatus) {
	fd, err := openat(d.fd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC)
	if err != nil {
		return nil, readFailed
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, readFailed
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, readIrregular
	}
	if st.Nlink > 1 && !w.s.opts.HardLinks {
		return nil, readHardLinked
	}
	if st.Size > w.s.opts.MaxFileSize {
		return nil, readTooLarge
	}
	buf := w.grow(st.Size)
	n := 0
	for n < len(buf) {
		k, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, readFailed
		}
		if k == 0 {
			break
		}
		n += k
	}
	return buf[:n], readOK
}
