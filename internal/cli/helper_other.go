//go:build !unix

package cli

import "os"

// trusted reports false: there is no sandbox helper on this system.
func trusted(os.FileInfo) bool { return false }

// ownedAlone reports false: ownership is not checked on this system.
func ownedAlone(os.FileInfo) bool { return false }
