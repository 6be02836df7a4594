package cli

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// autoRunTick is how often the auto-run watcher checks the write grants
// whatever inotify reported (an event lost to a full queue, a folder made
// between two looks).
const autoRunTick = time.Second

// readFlags open an entry that should be a regular file without following
// a link or blocking on a FIFO swapped in since it was listed.
const readFlags = os.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK

// watchAutoRun watches the folders that hold or would hold the guarded
// entries (the tops of the write grants, and the folders of nested entries
// as they appear) and calls check after each change there and every autoRunTick,
// until stop is called. check is called once at the start too.
func watchAutoRun(missing []autoRunEntry, check func()) (stop func(), err error) {
	return watchAutoRunEvery(missing, check, autoRunTick)
}

// watchAutoRunEvery is watchAutoRun with the tick given.
//
// A watch is kept by its descriptor: when its folder is removed or moved
// (IN_IGNORED, IN_DELETE_SELF, IN_MOVE_SELF) the watches of that folder and
// of every folder under its old path are dropped, so a folder made again
// under the same name is watched again.
func watchAutoRunEvery(missing []autoRunEntry, check func(), every time.Duration) (stop func(), err error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "inotify")
	watched := map[string]int{} // folder → watch descriptor
	watch := func() {
		for _, m := range missing {
			for d := filepath.Dir(m.path()); within(d, m.grant); d = filepath.Dir(d) {
				if _, ok := watched[d]; !ok {
					if wd, err := unix.InotifyAddWatch(fd, d, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW); err == nil {
						watched[d] = wd
					}
				}
				if d == m.grant {
					break
				}
			}
		}
	}
	drop := func(gone []int) {
		for _, wd := range gone {
			for p, w := range watched {
				if w != wd {
					continue
				}
				for q, qw := range watched {
					if within(q, p) {
						unix.InotifyRmWatch(fd, uint32(qw)) // EINVAL when the kernel dropped it already
						delete(watched, q)
					}
				}
			}
		}
	}
	watch()
	events := make(chan []int)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(events)
		buf := make([]byte, 64<<10)
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			var gone []int
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				wd := int(int32(binary.NativeEndian.Uint32(buf[off:])))
				mask := binary.NativeEndian.Uint32(buf[off+4:])
				if mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
					gone = append(gone, wd)
				}
				off += unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[off+12:]))
			}
			select {
			case events <- gone:
			case <-quit:
				return
			}
		}
	}()
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		check()
		for {
			select {
			case gone, ok := <-events:
				if !ok {
					return
				}
				drop(gone)
			case <-tick.C:
			case <-quit:
				return
			}
			watch() // a folder on the way to a nested entry may have appeared
			check()
		}
	}()
	return func() {
		close(quit)
		f.Close()
		<-done
	}, nil
}

// renameOut moves base, in the folder parent, to dst by its name in that
// folder (renameat): a link is moved as a link, never followed.
func renameOut(parent *os.Root, base, dst string) error {
	from, err := parent.Open(".")
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := os.Open(filepath.Dir(dst))
	if err != nil {
		return err
	}
	defer to.Close()
	return unix.Renameat(int(from.Fd()), base, int(to.Fd()), filepath.Base(dst))
}
