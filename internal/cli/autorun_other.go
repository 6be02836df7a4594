//go:build !linux

package cli

import (
	"errors"
	"os"
)

// readFlags open an entry that should be a regular file (no box here).
const readFlags = os.O_RDONLY

// watchAutoRun is not needed where there is no box.
func watchAutoRun([]autoRunEntry, func()) (func(), error) {
	return func() {}, nil
}

// renameOut is not available here: the entry is copied, then removed.
func renameOut(*os.Root, string, string) error {
	return errors.ErrUnsupported
}
