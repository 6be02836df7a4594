//go:build unix

package exec

import (
	"fmt"
	"io/fs"
	"syscall"
)

// fileID is " dev:ino" of fi, which tells a replaced entry from the one
// it replaced even when size and time are the same.
func fileID(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf(" %d:%d", st.Dev, st.Ino)
	}
	return ""
}
