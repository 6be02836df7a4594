//go:build linux && (amd64 || arm64)

package sandbox

import "golang.org/x/sys/unix"

// commonSyscalls names the system calls the filter and its tests use that
// every supported architecture has, with their numbers on the one built
// for (static data: no start-up cost); archSyscalls adds the others.
var commonSyscalls = []sysName{
	{"read", unix.SYS_READ},
	{"socket", unix.SYS_SOCKET},
	{"setsid", unix.SYS_SETSID},
	{"socketpair", unix.SYS_SOCKETPAIR},
	{"ioctl", unix.SYS_IOCTL},
	{"clone", unix.SYS_CLONE},
	{"clone3", unix.SYS_CLONE3},
	{"io_uring_setup", unix.SYS_IO_URING_SETUP},
	{"io_uring_enter", unix.SYS_IO_URING_ENTER},
	{"io_uring_register", unix.SYS_IO_URING_REGISTER},
	{"keyctl", unix.SYS_KEYCTL},
	{"add_key", unix.SYS_ADD_KEY},
	{"request_key", unix.SYS_REQUEST_KEY},
	{"perf_event_open", unix.SYS_PERF_EVENT_OPEN},
	{"userfaultfd", unix.SYS_USERFAULTFD},
	{"fanotify_init", unix.SYS_FANOTIFY_INIT},
	{"lookup_dcookie", unix.SYS_LOOKUP_DCOOKIE},
	{"name_to_handle_at", unix.SYS_NAME_TO_HANDLE_AT},
	{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT},
	{"mount", unix.SYS_MOUNT},
	{"umount2", unix.SYS_UMOUNT2},
	{"pivot_root", unix.SYS_PIVOT_ROOT},
	{"chroot", unix.SYS_CHROOT},
	{"move_mount", unix.SYS_MOVE_MOUNT},
	{"open_tree", unix.SYS_OPEN_TREE},
	{"fsopen", unix.SYS_FSOPEN},
	{"fsconfig", unix.SYS_FSCONFIG},
	{"fsmount", unix.SYS_FSMOUNT},
	{"fspick", unix.SYS_FSPICK},
	{"mount_setattr", unix.SYS_MOUNT_SETATTR},
	{"ptrace", unix.SYS_PTRACE},
	{"process_vm_readv", unix.SYS_PROCESS_VM_READV},
	{"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV},
	{"pidfd_getfd", unix.SYS_PIDFD_GETFD},
	{"bpf", unix.SYS_BPF},
	{"unshare", unix.SYS_UNSHARE},
	{"setns", unix.SYS_SETNS},
	{"kexec_load", unix.SYS_KEXEC_LOAD},
	{"kexec_file_load", unix.SYS_KEXEC_FILE_LOAD},
	{"init_module", unix.SYS_INIT_MODULE},
	{"finit_module", unix.SYS_FINIT_MODULE},
	{"delete_module", unix.SYS_DELETE_MODULE},
	{"reboot", unix.SYS_REBOOT},
	{"swapon", unix.SYS_SWAPON},
	{"swapoff", unix.SYS_SWAPOFF},
	{"acct", unix.SYS_ACCT},
	{"syslog", unix.SYS_SYSLOG},
	{"quotactl", unix.SYS_QUOTACTL},
	// set-user-ID / set-group-ID modes are refused (filterRules)
	{"fchmod", unix.SYS_FCHMOD},
	{"fchmodat", unix.SYS_FCHMODAT},
	{"fchmodat2", unix.SYS_FCHMODAT2},
}
