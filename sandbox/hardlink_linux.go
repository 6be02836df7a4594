package sandbox

import (
	"fmt"
	"os"
	"syscall"
)

// linkedReadOnly refuses a read-only grant that is a file with another
// hard link on the file system of a writable place (Root or a Writable
// path): a mount covers a name, not the file, so the file would be
// writable in the sandbox through that other name, wherever it lies in
// the writable tree (no name can be found from the file to cover it
// too). A read-only folder's files are not looked at (each is a walk of
// the tree), nor a file whose other links lie on another file system
// (no writable place there can reach them).
func linkedReadOnly(spec Spec) error {
	var devs []uint64
	for _, w := range append([]string{spec.Root}, spec.Writable...) {
		if fi, err := os.Stat(w); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				devs = append(devs, st.Dev)
			}
		}
	}
	for _, r := range spec.ReadOnly {
		fi, err := os.Stat(r)
		if err != nil || fi.IsDir() {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Nlink <= 1 {
			continue
		}
		for _, d := range devs {
			if d == st.Dev {
				return fmt.Errorf("%w: %w: %s has %d hard links on the file system of a writable place, so it would be writable through another of them; make the others copies or symbolic links", ErrInvalidSpec, ErrLinkedReadOnly, r, st.Nlink)
			}
		}
	}
	return nil
}
