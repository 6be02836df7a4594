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
