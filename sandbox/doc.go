// Package sandbox runs commands confined: one Backend interface (Run a
// Spec, get an Outcome), and backends that give the same confinement in
// different ways.
//
// Native (Linux, the default) re-executes the current program as a helper
// (its main must call Init first), or Native.Executable, in new user,
// mount, pid, net, ipc, uts and cgroup namespaces. The helper's start-up
// is most of a cold Run (measured here: 4 ms to clone and exec, 6 to 10 ms
// of Go start-up for a small helper, 40 to 55 ms for a program that links
// much more, 3 to 5 ms to build the root): a large program points
// Executable at a small one whose main is Init alone (cmd/toolgate-sandbox),
// and a server sets Prestart (or calls Warm) to start helpers ahead: a
// bounded pool (Spares), each helper still used once, the next started
// once a Run is over, all stopped by Close; a long-lived command (Start)
// takes a helper started ahead only by WarmFor, for its very limits. With
// Prestart the helpers are started by a starter, the helper program
// started once, which clones each as the caller's child (CLONE_PARENT):
// Go cannot vfork into a new user namespace, and a fork of the small
// starter costs a fraction of a fork of a large server (its page tables,
// and its pages copied on write meanwhile); without it, or when it is
// gone, the caller forks. The
// helper, pid 1 of its namespace, builds a new root on a tmpfs: /usr,
// /bin, /lib… bound read-only, a few /etc files, empty /home/sandbox
// (HOME), /root, /run, /var/tmp, /opt… (no host socket is reachable), a
// tmpfs /tmp, a fresh /proc with /proc/sys read-only and its leaky files
// hidden, a /dev of null, zero, full, random and urandom and a tmpfs
// /dev/shm, and the workspace (Spec.Root) plus Spec.Writable and
// Spec.ReadOnly bound at their host paths (by file, never by name: a
// copy of each tree is made read-only or not, then attached to its place
// opened following no link); then it pivots into it, drops
// the host's root and makes the root and /dev read-only. So a command
// can write only to the workspace, Spec.Writable, /tmp and /dev/shm (and
// the devices): a write anywhere else (/etc/x, /var/tmp/x,
// ~/.gitconfig, /x) fails with EROFS, "Read-only file system", rather
// than landing in a throwaway layer that makes it look done. Caches go
// to /tmp (see DefaultEnv: XDG_CACHE_HOME, GOCACHE, npm_config_cache…),
// so go build, npm, pip and git work. It lowers the rlimits, drops
// every capability for good (securebits, bounding set), sets
// no_new_privs, applies Landlock (best effort: the ABI or why not is
// reported) and a seccomp filter, and execs the command. The command
// runs as uid 0 of its namespace, mapped to the caller's uid, with no
// capability. The parent puts it in cgroups (v2 where the controllers are
// delegated, else v1: memory, pids, cpu) when it can, and says why not
// otherwise (under v1 a helper it forks is born in them: the forking
// thread enters them for the fork, as moving a process waits for an RCU
// grace period; the command then sees its groups as its cgroup
// namespace's root); on timeout it kills the namespace's init, and the kernel
// kills everything else. Outcome.Protections tells what held.
//
// The seccomp filter refuses: the mount family, ptrace and process_vm_*,
// bpf, unshare/setns and clone with namespace flags, kexec and modules,
// reboot, swap, keyrings, io_uring, perf events, userfaultfd; every
// socket family but inet (and inet too without a network), with AF_UNIX
// socket() refused but socketpair allowed; TIOCSTI and TIOCLINUX; calls of
// another architecture (killed) and x32 calls. The refusals that ordinary
// programs make while probing (unix and netlink sockets, io_uring,
// keyrings) are quiet; the others are answered EPERM by the parent through
// a seccomp user notification and listed in Outcome.Blocked. The BPF
// program is assembled here with x/sys/unix's system call numbers
// (go-seccomp-bpf's condition code leaves an argument in the accumulator,
// letting later groups compare the wrong value; its tables of every
// architecture cost each helper milliseconds of start-up). Landlock is
// applied with the raw system calls, on the one thread that execs:
// go-landlock restricts every thread through libcap's psx, which would
// bring cgo's pthread wrapping into every binary using this package.
//
// Network: none by default (no interface up, no inet socket at all). With
// Network.Proxy (or Dial), the helper brings the namespace's loopback up
// and makes a listening socket on 127.0.0.1:ProxyPort inside it, which the
// parent accepts from outside and joins to the proxy; HTTP(S)_PROXY,
// ALL_PROXY and their lower-case forms point to it, NO_PROXY is empty
// (NODE_USE_ENV_PROXY=1 for Node.js), and Landlock (ABI ≥ 4) allows TCP
// connect to that port only.
// toolgate gives Dial as egress.Proxy.Dial: the proxy runs in the calling
// process, no port is opened on the host, and each command's connections
// carry that command's context (its refusals are its own). Bwrap has no
// proxy network: a Chain then refuses rather than run the command with no
// network or the host's.
//
// Bwrap runs the same view (read-only the same way) through bubblewrap
// when it is installed; Reduced, where no namespace may be made (a
// restricted Kubernetes pod), runs the helper in the caller's namespaces,
// in a session of its own that is killed when the command ends, with the
// same rlimits, no_new_privs, capabilities dropped, the same seccomp
// filter (and setsid refused; with a network, TCP sockets only) and
// Landlock (required) granting the system folders, /etc's usual files,
// /proc, the spec's paths and a private temporary folder; with a network,
// Landlock lets TCP connect only to a relay on the caller's loopback, a
// port of the command's own (docs/isolation.md says what that does not
// stop). DryRun returns what would run; Chain tries backends in order
// (Default: Native, Bwrap, Reduced) and reports which one ran, refusing
// (ErrRefused) rather than running a command unconfined. Level, Probe and
// Leveled say how strong the sandbox that ran is (full, reduced, none),
// measured.
package sandbox
