package cli

import (
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// watchAutoRun watches the folders that would hold the missing entries (the
// tops of the write grants, and the folders of nested entries as they
// appear) and calls check after each change there, until stop is called.
// check is called once at the start too.
func watchAutoRun(missing []autoRunEntry, check func()) (stop func(), err error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "inotify")
	var watched []string
	watch := func() {
		for _, m := range missing {
			for d := filepath.Dir(m.path); within(d, m.grant); d = filepath.Dir(d) {
				if slices.Contains(watched, d) {
					break
				}
				if _, err := unix.InotifyAddWatch(fd, d, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW); err == nil {
					watched = append(watched, d)
				}
				if d == m.grant {
					break
				}
			}
		}
	}
	watch()
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		check()
		for {
			if _, err := f.Read(buf); err != nil {
				return
			}
			watch() // a folder on the way to a nested entry may have appeared
			check()
		}
	}()
	return func() {
		f.Close()
		<-done
	}, nil
}
