//go:build !linux

package fs

import "os"

// renameAt renames through the root (fallback) on systems without renameat2;
// the caller has already checked that the destination does not exist.
func renameAt(_ *os.File, _ string, _ *os.File, _ string, _ bool, fallback func() error) error {
	return fallback()
}
