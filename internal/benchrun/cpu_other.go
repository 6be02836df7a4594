//go:build !linux

package benchrun

import (
	"errors"
	"time"
)

// TreeCPU needs Linux's /proc: elsewhere it returns [errors.ErrUnsupported].
func TreeCPU(pid int) (cpu time.Duration, found bool, err error) {
	return 0, false, errors.ErrUnsupported
}
