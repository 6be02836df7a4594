package audit

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// A writer waiting for the file lock says so with an open file description
// lock (F_OFD_SETLK) on one byte far past the end of the file, on its
// read-only handle: no data lies there, flock(2) does not see it, and the
// kernel drops it when the process dies. A writer holding the lock between
// appends looks for such a lock of another handle (F_OFD_GETLK) and lets go.

// holdLock reports whether a Log may keep the file lock between appends:
// only where waiting writers can make themselves known.
const holdLock = true

// flagOffset is the byte the waiting flag locks.
const flagOffset = 1 << 62

func flag(typ int16) unix.Flock_t {
	return unix.Flock_t{Type: typ, Whence: 0, Start: flagOffset, Len: 1}
}

// setWaiting raises (on) or lowers this handle's waiting flag (raw: see
// tryLockFile).
func setWaiting(fd uintptr, raw, on bool) error {
	lk := flag(unix.F_UNLCK)
	if on {
		lk.Type = unix.F_RDLCK
	}
	return fcntlLock(fd, unix.F_OFD_SETLK, &lk, raw)
}

// othersWaiting reports whether another handle raised its waiting flag
// (false with an error).
func othersWaiting(fd uintptr, raw bool) (bool, error) {
	lk := flag(unix.F_WRLCK)
	if err := fcntlLock(fd, unix.F_OFD_GETLK, &lk, raw); err != nil {
		return false, err
	}
	return lk.Type != unix.F_UNLCK, nil
}

// fcntlLock is fcntl(fd, cmd, lk) for the open file description locks of
// the waiting flag (F_OFD_SETLK, F_OFD_GETLK: neither waits).
func fcntlLock(fd uintptr, cmd int, lk *unix.Flock_t, raw bool) error {
	if raw && rawCalls {
		_, _, e := unix.RawSyscall(unix.SYS_FCNTL, fd, uintptr(cmd), uintptr(unsafe.Pointer(lk)))
		return errno(e)
	}
	return unix.FcntlFlock(fd, cmd, lk)
}
