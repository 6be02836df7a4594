//go:build linux && amd64

package sandbox

import "golang.org/x/sys/unix"

// auditArch is the seccomp_data.arch value of this architecture's calls.
const auditArch = unix.AUDIT_ARCH_X86_64

// x32Bit marks the x32 ABI's calls (__X32_SYSCALL_BIT): they get ENOSYS.
const x32Bit = 0x40000000

// archSyscalls are the listed calls only this architecture has.
var archSyscalls = []sysName{
	{"iopl", unix.SYS_IOPL},
	{"ioperm", unix.SYS_IOPERM},
	{"chmod", unix.SYS_CHMOD}, // set-user-ID / set-group-ID modes are refused (filterRules)
}

// absentSyscalls are rule names this architecture does not have.
var absentSyscalls []string
