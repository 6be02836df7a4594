//go:build linux && arm64

package sandbox

import "golang.org/x/sys/unix"

// auditArch is the seccomp_data.arch value of this architecture's calls.
const auditArch = unix.AUDIT_ARCH_AARCH64

// x32Bit is 0: this architecture has no x32 ABI.
const x32Bit = 0

// archSyscalls are the listed calls only this architecture has: none.
var archSyscalls []sysName

// absentSyscalls are rule names this architecture does not have.
var absentSyscalls = []string{"chmod", "iopl", "ioperm"}
