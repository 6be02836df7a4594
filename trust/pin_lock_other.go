//go:build !unix

package trust

import (
	"errors"
	"os"
)

// Without flock the pin file cannot be shared safely: refuse it.
func lockFile(*os.File) error   { return errors.New("pin files need flock, which this system lacks") }
func unlockFile(*os.File) error { return nil }
