package trust

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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

// statKey returns the key of the open file f: none unless it is a regular
// file on a file system keptFS allows.
func statKey(f *os.File) (fileKey, bool) {
	fd := int(f.Fd())
	var fs unix.Statfs_t
	if unix.Fstatfs(fd, &fs) != nil || !keptFS(int64(fs.Type)) {
		return fileKey{}, false
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fileKey{}, false
	}
	return fileKey{Dev: st.Dev, Ino: st.Ino, Size: st.Size, ModNs: st.Mtim.Nano(), ChangNs: st.Ctim.Nano()}, true
}

// keptFS reports whether a file system (statfs f_type) is one whose inode
// numbers and times the kernel keeps itself, so a file's key changes with
// its content: ext2/3/4, xfs, btrfs, tmpfs. Not FUSE (its daemon reports
// any inode, size and times), vfat and exfat (no change time: it follows
// the modification time, which utimes sets), NFS and SMB (the server's
// fields), overlayfs (a lower layer written from outside the overlay is
// not seen, and whether a writable mapping of a layer's file refuses a
// lease on the overlay's file depends on the kernel), nor any other type.
func keptFS(fsType int64) bool {
	switch fsType {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC:
		return true
	}
	return false
}

// readLease takes a read lease on f (opened read-only). The kernel grants
// it only while no one holds the file open for writing, a writable shared
// mapping included, and breaks it when someone opens the file for writing
// or truncates it while it is held (their open waits until it is given
// up). It needs the file to be this user's, or CAP_LEASE (root). release
// gives it up and reports whether it was held unbroken until then.
func readLease(f *os.File) (release func() bool, ok bool) {
	fd := f.Fd()
	if _, err := unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_RDLCK); err != nil {
		return nil, false
	}
	return func() bool {
		held, err := unix.FcntlInt(fd, unix.F_GETLEASE, 0)
		unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_UNLCK)
		return err == nil && held == unix.F_RDLCK
	}, true
}

// ownedAlone reports whether fi is this user's and no one else may read
// or write it.
func ownedAlone(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid() && fi.Mode().Perm()&0o077 == 0
}
