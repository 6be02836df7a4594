//go:build !linux

package fs

import (
	"io/fs"
	"time"
)

const openNonblock = 0

func fileTimes(fs.FileInfo) (atime, ctime time.Time, ok bool) { return time.Time{}, time.Time{}, false }
