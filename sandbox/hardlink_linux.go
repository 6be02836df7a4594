package sandbox

import (
	"fmt"
	"os"
	"syscall"
)

// linkedReadOnly refuses a read-only grant that is a file with more than
// one hard link, wherever the others lie: a mount covers a name, not the
// file, so the file would be writable in the sandbox through another
// name in a writable place (no name can be found from the file to cover
// it too). The file system does not tell them apart: one mounted inside
// the workspace (a bound cache, a volume) is writable there too. A
// read-only folder's files are not looked at (each is a walk of the
// tree).
func linkedReadOnly(spec Spec) error {
	for _, r := range spec.ReadOnly {
		fi, err := os.Stat(r)
		if err != nil || fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			return fmt.Errorf("%w: %w: %s has %d hard links: a read-only mount covers one name, and the file would be writable through any other that lies where the command may write (a file system mounted inside the workspace included); make the others copies or symbolic links", ErrInvalidSpec, ErrLinkedReadOnly, r, st.Nlink)
		}
	}
	return nil
}
