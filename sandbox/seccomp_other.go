//go:build linux && !amd64 && !arm64

package sandbox

// auditArch is 0: the seccomp filter is not built for this architecture
// (assemble refuses, and the native backend with it).
const auditArch = 0

const x32Bit = 0

var commonSyscalls, archSyscalls []sysName

var absentSyscalls []string
