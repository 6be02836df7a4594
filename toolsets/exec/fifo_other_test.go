//go:build !unix

package exec

import "errors"

// mkfifo fails: this system has no named pipes in its file system.
func mkfifo(string, uint32) error { return errors.ErrUnsupported }
