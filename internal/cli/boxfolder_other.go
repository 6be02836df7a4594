//go:build !unix

package cli

import (
	"errors"
	"os"
)

// noFollow: no such flag here (and no box).
const noFollow = 0

// noBlock: no FIFOs to open here.
const noBlock = 0

// lockFolder: no flock here; a folder is never proved free.
func lockFolder(*os.File, bool) error { return errors.ErrUnsupported }

// ownedByUser: owners are not told here; nothing is swept.
func ownedByUser(os.FileInfo) bool { return false }
