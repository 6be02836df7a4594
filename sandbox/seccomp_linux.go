package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter has three kinds of refusal:
//
//   - quiet: EPERM (ENOSYS for clone3, so that libc falls back to clone and
//     its flags can be checked), not reported. For calls ordinary programs
//     make to probe what is there: unix and netlink sockets (nscd, libc's
//     getaddrinfo), io_uring (libuv), keyrings, perf events.
//   - reported: EPERM, and the call is named in Outcome.Blocked (through a
//     seccomp user notification that the parent answers). For calls that
//     an ordinary command has no business making here: mount and its
//     family, ptrace, bpf, new namespaces, kernel modules and kexec,
//     reboot, packet/vsock/other sockets (inet too when the network is off),
//     terminal injection (TIOCSTI).
//   - killed: a system call of another architecture (the i386 ABI) ends
//     the process; x32 calls get ENOSYS.
//
// Without user notifications (e.g. the toolgate process already runs under
// a filter that has a listener) the reported calls are refused quietly.

// quietSyscalls are refused with EPERM without a report.
var quietSyscalls = []string{
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"keyctl", "add_key", "request_key",
	"perf_event_open", "userfaultfd", "fanotify_init", "lookup_dcookie",
	"name_to_handle_at", "open_by_handle_at",
}

// ipcSyscalls are the System V IPC and POSIX message queue calls, which
// the reduced filter refuses quietly (the ids are in /proc/sysvipc: an
// attach needs no get).
var ipcSyscalls = []string{
	"shmget", "shmat", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl",
	"semget", "semop", "semtimedop", "semctl", "mq_open", "mq_unlink",
}

// reportedSyscalls are refused with EPERM and reported.
var reportedSyscalls = []string{
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig",
	"fsmount", "fspick", "mount_setattr",
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
	"bpf", "unshare", "setns",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"reboot", "swapon", "swapoff", "acct", "syslog", "quotactl", "iopl", "ioperm",
}

// nsFlags are the clone flags that create namespaces.
const nsFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// The BPF program is assembled here, rather than by go-seccomp-bpf's
// Policy: its argument conditions leave an argument in the accumulator, so
// a later group compares that argument, not the call number (socket(AF_INET)
// passed a group listing mount). Each rule here reloads the call number.
// The call numbers come from x/sys/unix (commonSyscalls, and archSyscalls in one file per
// architecture): go-seccomp-bpf's tables of every architecture cost each
// helper process milliseconds of package initialisation.

// sysName is a system call's name and number on this architecture.
type sysName struct {
	name string
	nr   int
}

// syscallNumber returns the number of the system call name.
func syscallNumber(name string) (int, bool) {
	for _, table := range [][]sysName{commonSyscalls, archSyscalls} {
		for _, s := range table {
			if s.name == name {
				return s.nr, true
			}
		}
	}
	return 0, false
}

// syscallName returns the name of the system call nr, if it is listed.
func syscallName(nr int) (string, bool) {
	for _, table := range [][]sysName{commonSyscalls, archSyscalls} {
		for _, s := range table {
			if s.nr == nr {
				return s.name, true
			}
		}
	}
	return "", false
}

type condOp int

const (
	opEq      condOp = iota // arg == v
	opNe                    // arg != v
	opBitsAny               // arg & v != 0
	opTypeNe                // a socket type: arg & 0xf (SOCK_TYPE_MASK) != v, of the low 32 bits (an int: the kernel reads no more)
)

// cond is a test of one 64-bit argument.
type cond struct {
	arg int
	op  condOp
	v   uint64
}

// rule is: call name with all conds true → action.
type rule struct {
	name   string
	conds  []cond
	action uint32
}

// filterRules lists the rules in order (the first match decides).
// report is the action of the reported calls. reduced is the filter of
// the reduced backend, which has no namespaces: setsid is refused too (a
// command's processes stay in its session, which is killed when it
// ends), and with a network only TCP sockets may be made (Landlock then
// confines their connects to the proxy's port; it knows no UDP).
func filterRules(network, reduced bool, report uint32) []rule {
	quiet := unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	var rules []rule
	rules = append(rules, rule{name: "clone3", action: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)})
	for _, n := range quietSyscalls {
		rules = append(rules, rule{name: n, action: quiet})
	}
	rules = append(rules,
		rule{"socket", []cond{{0, opEq, unix.AF_UNIX}}, quiet},
		rule{"socket", []cond{{0, opEq, unix.AF_NETLINK}}, quiet},
	)
	if network {
		rules = append(rules, rule{"socket", []cond{{0, opNe, unix.AF_INET}, {0, opNe, unix.AF_INET6}}, report})
		if reduced {
			for _, f := range []uint64{unix.AF_INET, unix.AF_INET6} {
				rules = append(rules,
					rule{"socket", []cond{{0, opEq, f}, {1, opTypeNe, unix.SOCK_STREAM}}, report},
					rule{"socket", []cond{{0, opEq, f}, {2, opNe, 0}, {2, opNe, unix.IPPROTO_TCP}}, report})
			}
		}
	} else {
		rules = append(rules, rule{name: "socket", action: report})
	}
	for _, n := range reportedSyscalls {
		rules = append(rules, rule{name: n, action: report})
	}
	if reduced {
		rules = append(rules, rule{name: "setsid", action: report})
		rules = append(rules, othersRules(report)...)
		// System V IPC and POSIX message queues: without an IPC namespace
		// they are the server's and every other command's (same user:
		// permitted). Refused quietly, as probes are.
		for _, n := range ipcSyscalls {
			rules = append(rules, rule{name: n, action: quiet})
		}
		// A listening socket: listen() on an unbound one binds a port
		// without Landlock's bind check, in the server's network
		// namespace (reachable from the pod's network). TCP Fast Open
		// connects in sendto/sendmsg, which some kernels' Landlock did not
		// check against the one port.
		rules = append(rules, rule{name: "listen", action: report},
			rule{"sendto", []cond{{3, opBitsAny, unix.MSG_FASTOPEN}}, report},
			rule{"sendmsg", []cond{{2, opBitsAny, unix.MSG_FASTOPEN}}, report},
			rule{"sendmmsg", []cond{{3, opBitsAny, unix.MSG_FASTOPEN}}, report})
	}
	rules = append(rules,
		rule{"clone", []cond{{0, opBitsAny, nsFlags}}, report},
		rule{"ioctl", []cond{{1, opEq, unix.TIOCSTI}}, report},
		rule{"ioctl", []cond{{1, opEq, unix.TIOCLINUX}}, report},
	)
	// Setting the set-user-ID or set-group-ID bit: nosuid mounts make it
	// harmless inside, but the file stays in the workspace, on the host,
	// owned by the host uid the sandbox maps to (root when toolgate runs
	// as root): a ready privilege escalation for whoever runs it later.
	for _, c := range []struct {
		name string
		arg  int
	}{{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2}} {
		rules = append(rules, rule{c.name, []cond{{c.arg, opBitsAny, unix.S_ISUID | unix.S_ISGID}}, report})
	}
	return rules
}

// othersRules refuse a reduced command's calls that change another
// process's limits or scheduling: without a pid namespace the server is a
// process of the same user, which the kernel lets it change (no ptrace
// check, and Landlock hooks none of them). Each is allowed on the caller
// only: pid 0 (prlimit64, sched_*), who 0 and not a whole user
// (setpriority, ioprio_set).
func othersRules(report uint32) []rule {
	const ioprioWhoUser = 3 // IOPRIO_WHO_USER
	rules := []rule{
		{"setpriority", []cond{{0, opEq, unix.PRIO_USER}}, report},
		{"setpriority", []cond{{1, opNe, 0}}, report},
		{"ioprio_set", []cond{{0, opEq, ioprioWhoUser}}, report},
		{"ioprio_set", []cond{{1, opNe, 0}}, report},
	}
	for _, n := range []string{"prlimit64", "sched_setscheduler", "sched_setparam", "sched_setattr", "sched_setaffinity"} {
		rules = append(rules, rule{n, []cond{{0, opNe, 0}}, report})
	}
	return rules
}

const seccompDataArgs = 16 // offset of args[0] in struct seccomp_data

// assemble turns rules into a program for the running architecture: a
// call of another architecture kills the process, an x32 call gets
// ENOSYS, the first matching rule decides, anything else is allowed.
func assemble(rules []rule) ([]bpf.Instruction, error) {
	if auditArch == 0 {
		return nil, fmt.Errorf("seccomp: unsupported architecture %s", runtime.GOARCH)
	}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(auditArch), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
	}
	if x32Bit != 0 {
		prog = append(prog,
			bpf.LoadAbsolute{Off: 0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: uint32(x32Bit), SkipFalse: 1},
			bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		)
	}
	for _, r := range rules {
		nr, ok := syscallNumber(r.name)
		if !ok {
			if slices.Contains(absentSyscalls, r.name) {
				continue // not on this architecture
			}
			// Fail closed: a rule whose call is missing from the tables
			// would otherwise be dropped without a word.
			return nil, fmt.Errorf("seccomp: no number for system call %s on %s", r.name, runtime.GOARCH)
		}
		block, err := ruleBlock(uint32(nr), r)
		if err != nil {
			return nil, err
		}
		prog = append(prog, block...)
	}
	return append(prog, bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}), nil
}

// ruleBlock is one rule: load the call number, test it and the
// conditions, return the action; a failed test jumps past the block.
func ruleBlock(nr uint32, r rule) ([]bpf.Instruction, error) {
	// Jumps are first written with targets: -1 is "past the block", a
	// non-negative k is "the start of condition k" (len(conds) = the
	// return).
	type jmp struct {
		cond            bpf.JumpTest
		val             uint32
		onTrue, onFalse int
	}
	type step struct {
		inst bpf.Instruction // a load or the return
		j    *jmp
	}
	const fail = -1
	var steps []step
	starts := make([]int, len(r.conds)+1)
	steps = append(steps, step{inst: bpf.LoadAbsolute{Off: 0, Size: 4}})
	steps = append(steps, step{j: &jmp{bpf.JumpEqual, nr, 0, fail}})
	ld := func(off uint32) step { return step{inst: bpf.LoadAbsolute{Off: off, Size: 4}} }
	for i, c := range r.conds {
		starts[i] = len(steps)
		next := i + 1
		lo, hi := uint32(c.v), uint32(c.v>>32)
		loOff := seccompDataArgs + 8*uint32(c.arg)
		hiOff := loOff + 4
		switch c.op {
		case opEq:
			steps = append(steps, ld(hiOff), step{j: &jmp{bpf.JumpEqual, hi, -2, fail}},
				ld(loOff), step{j: &jmp{bpf.JumpEqual, lo, next, fail}})
		case opNe:
			steps = append(steps, ld(hiOff), step{j: &jmp{bpf.JumpEqual, hi, -2, next}},
				ld(loOff), step{j: &jmp{bpf.JumpEqual, lo, fail, next}})
		case opBitsAny:
			steps = append(steps, ld(hiOff), step{j: &jmp{bpf.JumpBitsSet, hi, next, -2}},
				ld(loOff), step{j: &jmp{bpf.JumpBitsSet, lo, next, fail}})
		case opTypeNe:
			steps = append(steps, ld(loOff), step{inst: bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0xf}},
				step{j: &jmp{bpf.JumpEqual, lo, fail, next}})
		}
	}
	starts[len(r.conds)] = len(steps)
	steps = append(steps, step{inst: bpf.RetConstant{Val: r.action}})
	// The first jump goes to condition 0 (or the return).
	steps[1].j.onTrue = 0
	end := len(steps)
	out := make([]bpf.Instruction, len(steps))
	for i, s := range steps {
		if s.j == nil {
			out[i] = s.inst
			continue
		}
		target := func(t int) (uint8, error) {
			var abs int
			switch {
			case t == fail:
				abs = end
			case t == -2:
				abs = i + 1 // fall through to the next instruction
			default:
				abs = starts[t]
			}
			d := abs - i - 1
			if d < 0 || d > 255 {
				return 0, fmt.Errorf("seccomp: jump out of range in rule %s", r.name)
			}
			return uint8(d), nil
		}
		st, err := target(s.j.onTrue)
		if err != nil {
			return nil, err
		}
		sf, err := target(s.j.onFalse)
		if err != nil {
			return nil, err
		}
		out[i] = bpf.JumpIf{Cond: s.j.cond, Val: s.j.val, SkipTrue: st, SkipFalse: sf}
	}
	return out, nil
}

// loadFilters installs the filter on the calling thread and returns the
// user-notification fd (-1 when notifications are not available, e.g.
// under another filter with a listener: the reported calls are then
// refused quietly).
func loadFilters(network, reduced bool) (notifyFD int, err error) {
	try := func(report uint32, flags uintptr) (int, error) {
		insts, err := assemble(filterRules(network, reduced, report))
		if err != nil {
			return -1, err
		}
		raw, err := bpf.Assemble(insts)
		if err != nil {
			return -1, err
		}
		return seccompLoad(raw, flags)
	}
	fd, err := try(unix.SECCOMP_RET_USER_NOTIF, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
	if err == nil {
		return fd, nil
	}
	if _, err := try(unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM), 0); err != nil {
		return -1, fmt.Errorf("loading the seccomp filter: %w", err)
	}
	return -1, nil
}

func seccompLoad(raw []bpf.RawInstruction, flags uintptr) (int, error) {
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&prog)))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// seccompNotif and seccompNotifResp are the kernel's struct seccomp_notif
// and struct seccomp_notif_resp.
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// blockedLog collects the calls a supervisor refused.
type blockedLog struct {
	mu     sync.Mutex
	calls  map[string]int
	notify func(string) // Spec.Refused
}

func (b *blockedLog) add(s string) {
	if b.notify != nil {
		b.notify(s)
	}
	b.mu.Lock()
	if b.calls == nil {
		b.calls = map[string]int{}
	}
	if len(b.calls) < 32 {
		b.calls[s]++
	}
	b.mu.Unlock()
}

func (b *blockedLog) list() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.calls))
	for s := range b.calls {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// supervise answers every notification on fd with EPERM and records the
// call, until every process under the filter is gone (POLLHUP).
//
// It waits in poll(2) with no timeout: its thread stays in the kernel
// until there is a call to answer or the last process is gone. A timeout
// would bring it back to Go for nothing, and each return into the system
// call wakes the runtime's monitor thread (sysmon) and sets it polling
// again, CPU taken from the gateway's calls.
func supervise(fd int, log *blockedLog) {
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		_, err := unix.Poll(pfd, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || pfd[0].Revents&(unix.POLLHUP|unix.POLLNVAL|unix.POLLERR) != 0 && pfd[0].Revents&unix.POLLIN == 0 {
			return
		}
		var req seccompNotif
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&req))); e != 0 {
			if e == unix.EINTR || e == unix.ENOENT {
				continue
			}
			return
		}
		log.add(describeCall(req))
		resp := seccompNotifResp{ID: req.ID, Error: -int32(unix.EPERM)}
		unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
	}
}

var familyNames = map[uint64]string{
	unix.AF_INET: "AF_INET", unix.AF_INET6: "AF_INET6", unix.AF_PACKET: "AF_PACKET", unix.AF_VSOCK: "AF_VSOCK",
	unix.AF_NETLINK: "AF_NETLINK", unix.AF_UNIX: "AF_UNIX", unix.AF_KEY: "AF_KEY", unix.AF_ALG: "AF_ALG",
	unix.AF_BLUETOOTH: "AF_BLUETOOTH", unix.AF_CAN: "AF_CAN", unix.AF_XDP: "AF_XDP", unix.AF_TIPC: "AF_TIPC",
	unix.AF_RDS: "AF_RDS",
}

func describeCall(req seccompNotif) string {
	name, ok := syscallName(int(req.Nr))
	if !ok {
		name = fmt.Sprintf("syscall %d", req.Nr)
	}
	switch name {
	case "socket":
		if f, ok := familyNames[req.Args[0]]; ok {
			return "socket(" + f + ")"
		}
		return fmt.Sprintf("socket(family %d)", req.Args[0])
	case "ioctl":
		if req.Args[1] == unix.TIOCSTI {
			return "ioctl(TIOCSTI)"
		}
		return "ioctl(TIOCLINUX)"
	case "clone":
		return "clone(new namespace)"
	case "chmod", "fchmod", "fchmodat", "fchmodat2":
		return name + "(set-user-ID or set-group-ID bit)"
	case "sendto", "sendmsg", "sendmmsg":
		return name + "(MSG_FASTOPEN)"
	case "prlimit64", "setpriority", "ioprio_set", "sched_setscheduler", "sched_setparam", "sched_setattr", "sched_setaffinity":
		return name + "(another process)"
	}
	return name
}
