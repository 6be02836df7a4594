//go:build unix

package search

import (
	"io/fs"
	"syscall"
)

// LinkCount returns how many hard links the file fi describes has (1 when
// fi carries no stat data). The file tools read it here too, so that they
// and the search agree on every system.
func LinkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink) // uint16 on darwin, uint32 or uint64 elsewhere
	}
	return 1
}
