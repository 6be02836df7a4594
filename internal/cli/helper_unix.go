//go:build unix

package cli

import (
	"os"
	"syscall"
)

// trusted reports whether no one but its owner can change fi, and its
// owner is this user or root: a helper anyone could replace would run
// every command.
func trusted(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || fi.Mode().Perm()&0o022 != 0 {
		return false
	}
	return st.Uid == 0 || int(st.Uid) == os.Getuid()
}

// ownedAlone reports whether fi is this user's and no one else may read
// or write it.
func ownedAlone(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode().Perm()&0o077 == 0 && int(st.Uid) == os.Getuid()
}
