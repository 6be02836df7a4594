package fs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameAt renames name in folder from to name in folder to, both given as
// open handles (so that no path is resolved again). With noReplace it fails
// when the destination exists. (fallback is for systems without renameat.)
func renameAt(from *os.File, oldName string, to *os.File, newName string, noReplace bool, _ func() error) error {
	var flags uint
	if noReplace {
		flags = unix.RENAME_NOREPLACE
	}
	err := unix.Renameat2(int(from.Fd()), oldName, int(to.Fd()), newName, flags)
	if errors.Is(err, unix.ENOSYS) || (noReplace && errors.Is(err, unix.EINVAL)) {
		// An old kernel, or a file system without RENAME_NOREPLACE: the
		// caller checked that the destination did not exist.
		err = unix.Renameat(int(from.Fd()), oldName, int(to.Fd()), newName)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldName, New: newName, Err: err}
	}
	return nil
}
