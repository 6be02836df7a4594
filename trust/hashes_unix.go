//go:build linux || darwin

package trust

import (
	"os"
	"syscall"
	"time"
)

// fileKey is what tells a file's content without reading it: its device,
// inode, size, modification and change times (nanoseconds).
type fileKey struct {
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Size    int64  `json:"size"`
	ModNs   int64  `json:"mtime_ns"`
	ChangNs int64  `json:"ctime_ns"`
}

// changed is the later of the file's modification and change times.
func (k fileKey) changed() time.Time { return time.Unix(0, max(k.ModNs, k.ChangNs)) }

// statKey returns the key of the open file f.
func statKey(f *os.File) (fileKey, bool) {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return fileKey{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	m, c := statTimes(st)
	return fileKey{Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size, ModNs: m.Nano(), ChangNs: c.Nano()}, true
}

// ownedAlone reports whether fi is this user's and no one else may read
// or write it.
func ownedAlone(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid() && fi.Mode().Perm()&0o077 == 0
}
