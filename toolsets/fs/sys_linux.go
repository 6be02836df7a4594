//go:build linux

package fs

import (
	"io/fs"
	"syscall"
	"time"
)

// openNonblock keeps an open from hanging on a FIFO that slipped in between
// the check and the open; it changes nothing for a regular file.
const openNonblock = syscall.O_NONBLOCK

// fileTimes returns the access and status-change times, when known.
func fileTimes(fi fs.FileInfo) (atime, ctime time.Time, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, time.Time{}, false
	}
	return statTime(st.Atim), statTime(st.Ctim), true
}

func statTime(ts syscall.Timespec) time.Time { return time.Unix(ts.Sec, ts.Nsec) }
