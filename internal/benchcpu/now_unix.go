//go:build unix

package benchcpu

import (
	"syscall"
	"time"
)

// Now is the CPU time this process has used so far.
func Now() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
