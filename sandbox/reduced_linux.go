package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Reduced runs commands without namespaces, where none may be made (a
// Kubernetes pod at Pod Security "restricted": the runtime's seccomp
// profile refuses them, /proc is masked, no capability): a helper in the
// server's own namespaces, as the server's user, lowers its rlimits, sets
// no_new_privs, drops every capability, restricts itself with Landlock
// and loads the seccomp filter, then execs the command. Its protections
// classify as LevelReduced; put it last in a chain, after the backends
// with namespaces.
//
// What holds, as measured: Landlock (ABI 6 or later required: below it
// the backend is unavailable) lets the command read and execute the
// system folders (/usr, /bin, /sbin, /lib*), the /etc files the native
// sandbox copies, /proc and the spec's read-only paths, and write only the
// workspace, the spec's writable paths and a private folder (TMPDIR, HOME,
// the caches) removed after it; read-only paths inside a writable one stay
// so (carve); it may not ptrace, nor read the memory or environment of,
// nor signal, a process outside its Landlock domain (the server), nor
// reach an abstract unix socket. The seccomp filter is the native one (no
// mount, ptrace, bpf, namespaces, unix or netlink sockets…) and refuses
// setsid: every process of the command stays in the session it leads,
// which is killed when the command ends (there is no pid namespace to do
// it). It also refuses changing another process's limits or scheduling,
// listen, TCP Fast Open and System V or POSIX IPC, all of which would
// reach the server or other commands. Without a network no inet socket
// can be made; with a proxy network only TCP sockets, and Landlock lets
// them connect to one port only: the server's relay to the proxy on
// 127.0.0.1, made for this command. The rlimits are the native ones;
// RLIMIT_NPROC counts every process of the server's user, so it is set to
// the processes of that user the helper sees plus Limits.Processes. A
// cgroup is made where the server's groups are writable.
//
// What does not hold (docs/isolation.md): the command sees the real file
// system's names under its grants (no private root), every process in
// /proc (their command lines: other commands' too), the pod's network
// interfaces; it may change the metadata (chmod, utimes) of any file of
// the server's user; with a proxy network it may connect to that one port
// on any address (a host listening there is reached without the proxy).
type Reduced struct {
	// Executable is the helper program, as Native's; empty means
	// os.Executable().
	Executable string
	// NoCgroup skips cgroups (rlimits only).
	NoCgroup bool

	layout cgroupLayouts
}

// Name returns "reduced".
func (r *Reduced) Name() string { return "reduced" }

// Close lets the groups' mount table watch go.
func (r *Reduced) Close() error {
	r.layout.close()
	return nil
}

// reducedView is Protections.Filesystem of the reduced backend.
const reducedView = "the host's file system under Landlock: read-only system folders, /etc's usual files and /proc; " +
	"writable only: the workspace, the spec's writable paths and a private temporary folder; nothing else readable"

// reducedArgs start the reduced helper.
var reducedArgs = []string{initArg0, "reduced"}

// Run runs spec under the reduced sandbox.
func (r *Reduced) Run(ctx context.Context, spec Spec) (Outcome, error) {
	if spec.Pod != nil {
		return Outcome{}, fmt.Errorf("%w: the reduced sandbox has no pods (they need namespaces)", ErrUnsupported)
	}
	if err := reducedABI(landlockABI()); err != nil {
		return Outcome{}, err
	}
	p, err := prepare(spec)
	if err != nil {
		return Outcome{}, err
	}
	exe := r.Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return Outcome{}, fmt.Errorf("%w: cannot find the helper executable: %v", ErrUnavailable, err)
		}
	}
	// The command's own temporary folder, home and caches: /tmp is the
	// server's, shared with every other command.
	private, err := os.MkdirTemp("", "toolgate-reduced-")
	if err != nil {
		return Outcome{}, fmt.Errorf("sandbox: %w", err)
	}
	defer os.RemoveAll(private)
	for _, d := range []string{"tmp", "home"} {
		if err := os.Mkdir(filepath.Join(private, d), 0o700); err != nil {
			return Outcome{}, fmt.Errorf("sandbox: %w", err)
		}
	}
	p.Writable = append(p.Writable[:len(p.Writable):len(p.Writable)], private)
	port := 0
	var ln net.Listener
	if p.Network.Enabled() {
		// The relay to the proxy listens on the server's loopback, on a
		// port of this command's: Landlock lets it connect there alone.
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return Outcome{}, fmt.Errorf("%w: the proxy relay: %v", ErrUnavailable, err)
		}
		defer ln.Close()
		port = ln.Addr().(*net.TCPAddr).Port
	}
	if p.env, err = reducedEnv(spec.Env, private, port); err != nil {
		return Outcome{}, err
	}
	cfg, err := helperConfig(p)
	if err != nil {
		return Outcome{}, err
	}
	cfg.Proxy, cfg.ProxyPort = port != 0, port

	var layout *cgroupLayouts
	if !r.NoCgroup {
		layout = &r.layout
	}
	// Forked from a goroutine of its own (goLocked), never the caller's,
	// which a thread left in the helper's groups would stay with.
	var out Outcome
	done := make(chan struct{})
	goLocked(func() {
		defer close(done)
		var l *launched
		l, err = launchBy(func(files []*os.File) (*os.Process, func(), error) {
			proc, err := os.StartProcess(exe, reducedArgs, &os.ProcAttr{Env: helperEnv, Files: files,
				Sys: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}})
			return proc, nil, err
		}, layout, p.limits, true, true)
		if err == nil {
			out, err = l.run(&job{ctx: ctx, p: p, cfg: cfg, listener: ln, backend: "reduced"})
			l.release()
		}
	})
	<-done
	if err != nil {
		return out, err
	}
	out.Protections.Filesystem = reducedView
	if way := wayFolders(cfg.Mounts); len(way) > 0 {
		out.Protections.Filesystem += "; read-only: " + strings.Join(readOnlyMounts(cfg.Mounts), ", ") +
			"; so that these stay so, nothing can be made, removed or renamed directly in " + strings.Join(way, ", ") +
			" (Permission denied: make it in a subfolder; the full sandbox, sandbox.mode userns or gvisor, has no such limit)"
	}
	out.Protections.User = fmt.Sprintf("%d (the server's own user)", os.Getuid())
	return out, nil
}

// reducedABI says why the reduced sandbox cannot run with Landlock ABI v
// (0: none, for why), or nil. Without a pid namespace, only Landlock's
// signal scoping (ABI 6) keeps a command from killing the server, a
// process of the same user.
func reducedABI(v int, why string) error {
	switch {
	case v == 0:
		return fmt.Errorf("%w: the reduced sandbox needs Landlock: %s", ErrUnavailable, why)
	case v < signalScopeABI:
		return fmt.Errorf("%w: the reduced sandbox needs Landlock ABI %d (Linux 6.12) to keep commands from signalling the server; this kernel has ABI %d",
			ErrUnavailable, signalScopeABI, v)
	}
	return nil
}

// reducedEnv is buildEnv with the defaults that name the sandbox's own
// folders (HOME, TMPDIR, the caches) moved to the command's private
// folder, and the proxy at port (0: none).
func reducedEnv(env []string, private string, port int) ([]string, error) {
	out, err := buildEnv(env, port)
	if err != nil {
		return nil, err
	}
	given := map[string]bool{}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		given[name] = true
	}
	tmp := filepath.Join(private, "tmp")
	for i, kv := range out {
		name, v, _ := strings.Cut(kv, "=")
		switch {
		case given[name]:
		case name == "HOME":
			out[i] = "HOME=" + filepath.Join(private, "home")
		case name == "TMPDIR":
			out[i] = "TMPDIR=" + tmp
		case v == CacheDir || strings.HasPrefix(v, CacheDir+"/"):
			out[i] = name + "=" + tmp + strings.TrimPrefix(v, "/tmp")
		}
	}
	return out, nil
}

// waitExited waits until the process pid has ended, without reaping it:
// its pid (the id of its session) is not reused meanwhile.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// killSession kills every process of the session sid (its leader has
// ended, not yet reaped, so sid is no other's), again until none is left:
// what a pid namespace's end does for the native sandbox. The reduced
// filter refuses setsid, so none can have left it. Each is signalled
// through a pidfd taken before its session is read, not by its pid: a
// process that ends between the look and the kill leaves its pid to
// another, which the pidfd does not name (only where no pidfd can be had,
// out of descriptors or pidfd_open refused, by its pid rather than not at
// all). The processes killed whose parent is now this one are reaped (see
// reapKilled), at most maxHeldPidfds at a time.
func killSession(sid int) {
	var killed []int // pidfds
	for range 64 {
		found := 0
		entries, err := os.ReadDir("/proc")
		if err != nil {
			break
		}
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == sid {
				continue
			}
			fd, err := unix.PidfdOpen(pid, 0)
			if err == unix.ESRCH { // gone
				continue
			}
			if err != nil {
				// No descriptor for it (out of them, or pidfd_open
				// refused): by its pid, as before pidfds, rather than
				// leave it running.
				if st, ok := procStat(pid); ok && st.session == sid && st.state != "Z" && unix.Kill(pid, unix.SIGKILL) == nil {
					found++
				}
				continue
			}
			st, ok := procStat(pid)
			if sessionChecked != nil {
				sessionChecked(pid)
			}
			if ok && st.session == sid && st.state != "Z" && unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
				found++
				if killed = append(killed, fd); len(killed) == maxHeldPidfds {
					reapKilled(killed) // descriptors stay bounded
					killed = killed[:0]
				}
				continue
			}
			unix.Close(fd)
		}
		if found == 0 {
			break
		}
	}
	reapKilled(killed)
}

// maxHeldPidfds bounds the pidfds of killed processes killSession holds
// before it reaps them: a session of thousands must not take the
// descriptors the rest of its kill, and the server, need.
const maxHeldPidfds = 32

// sessionChecked, when set (a test), is called between reading a
// process's session and signalling it.
var sessionChecked func(pid int)

// reapKilled reaps the processes of pidfds that end as this process's
// children: orphans go to the pid namespace's init, which in a pod is
// toolgate itself (no init runs before it), and Go reaps only the
// children it started. A process whose parent is another is left to it.
// It waits at most about 100 ms for the kills to land, and closes pidfds.
func reapKilled(pidfds []int) {
	for round := 0; len(pidfds) > 0 && round < 100; round++ {
		if round > 0 {
			time.Sleep(time.Millisecond)
		}
		left := pidfds[:0]
		for _, fd := range pidfds {
			var info unix.Siginfo
			err := unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG, nil)
			switch {
			case err == nil && info.Signo != 0: // this process's child: reaped
				unix.Close(fd)
			case err == nil: // this process's child, not dead yet
				left = append(left, fd)
			case unix.PidfdSendSignal(fd, 0, nil, 0) != nil: // another's child, gone: reaped by its parent
				unix.Close(fd)
			default: // another's child, dead or not yet: the parent reaps it, or it comes to us
				left = append(left, fd)
			}
		}
		pidfds = left
	}
	for _, fd := range pidfds {
		unix.Close(fd)
	}
}

// stat is what procStat reads of /proc/PID/stat.
type stat struct {
	state         string
	ppid, session int
}

// procStat reads the state, parent and session of pid.
func procStat(pid int) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	// pid (comm) state ppid pgrp session …; comm may hold anything.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return stat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 4 {
		return stat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	sid, err2 := strconv.Atoi(f[3])
	return stat{state: f[0], ppid: ppid, session: sid}, err1 == nil && err2 == nil
}

// reducedMain is the reduced backend's helper: in the server's
// namespaces, the leader of a session of its own, it confines itself and
// execs the command.
func reducedMain() int { return runHelper(nil, reducedSetup) }

// reducedSetup confines this thread (and what it execs): limits,
// no_new_privs, capabilities, Landlock, seccomp. It returns what held, as
// measured, and the fds for the parent (seccomp notifications).
func reducedSetup(cfg *initConfig) (initReply, []int, error) {
	var r initReply
	var fds []int
	if err := unix.Chdir(cfg.Dir); err != nil {
		return r, nil, fmt.Errorf("working folder %s: %w", cfg.Dir, err)
	}
	// RLIMIT_NPROC counts every process of this user: the server's too.
	lim := cfg.Limits
	lim.Processes += userTasks(os.Getuid())
	rl, err := setRlimits(lim, cfg.MemoryRlimit, !cfg.CPUByCgroup)
	if err != nil {
		return r, nil, err
	}
	r.Rlimits = rl
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return r, nil, fmt.Errorf("no_new_privs: %w", err)
	}
	// Emptying the bounding set needs CAP_SETPCAP, which a restricted pod
	// has not: there it is empty already (drop ALL), and a user other
	// than root gains nothing at exec under no_new_privs anyway.
	bndErr := dropBoundingSet("/proc/sys/kernel/cap_last_cap")
	g, err := reducedGrants(cfg)
	if err != nil {
		return r, nil, err
	}
	port := 0
	if cfg.Proxy {
		port = cfg.ProxyPort
	}
	v, err := landlockApply(g, port)
	if err != nil {
		return r, nil, fmt.Errorf("the reduced sandbox needs Landlock: %w", err)
	}
	// Measured again as applied (ABI 6 has the TCP rules of ABI 4 too).
	if err := reducedABI(v, ""); err != nil {
		return r, nil, err
	}
	r.Landlock = "v" + strconv.Itoa(v)
	if fds, err = filterAndDrop(&r, fds, cfg.Proxy, true); err != nil {
		return r, nil, err
	}
	for _, f := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
		if !zeroCaps(f) {
			return r, nil, fmt.Errorf("capabilities: %s is still %s", f, statusField(f))
		}
	}
	if os.Geteuid() == 0 && !zeroCaps("CapBnd") {
		return r, nil, fmt.Errorf("root with a bounding set (%v) would regain capabilities at exec", bndErr)
	}
	r.Caps = "none"
	return r, fds, nil
}

// zeroCaps reports whether the capability set field of /proc/self/status
// is empty.
func zeroCaps(field string) bool {
	n, err := strconv.ParseUint(statusField(field), 16, 64)
	return err == nil && n == 0
}

// reducedGrants are the Landlock grants of a reduced command: read and
// execute the system folders, /etc's usual files, /proc and the spec's
// read-only paths; everything in its writable paths but the read-only
// paths inside them (see carve); read and write the harmless devices.
// Paths missing here are left out.
func reducedGrants(cfg *initConfig) (llGrants, error) {
	var g llGrants
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	for _, d := range systemDirs {
		if exists(d) {
			g.read = append(g.read, d)
		}
	}
	for _, f := range etcFiles {
		if p := "/etc/" + f; exists(p) {
			g.read = append(g.read, p)
		}
	}
	for _, d := range etcDirs {
		if p := "/etc/" + d; exists(p) {
			g.read = append(g.read, p)
		}
	}
	g.read = append(g.read, "/proc")
	ro := readOnlyMounts(cfg.Mounts)
	g.read = append(g.read, ro...)
	for _, m := range cfg.Mounts {
		g.spec(m.Path)
	}
	left := maxCarved
	for _, m := range cfg.Mounts {
		if !m.Writable || slices.Contains(ro, m.Path) {
			continue // also read-only: read-only wins, as in native's mounts (deeper ones win there too)
		}
		inner := slices.DeleteFunc(slices.Clone(ro), func(r string) bool { return !below(r, m.Path) })
		if len(inner) == 0 {
			g.write = append(g.write, m.Path)
		} else if err := carve(m.Path, inner, &g, &left); err != nil {
			return g, err
		}
	}
	for _, d := range devices {
		if p := "/dev/" + d; exists(p) {
			g.dev = append(g.dev, p)
		}
	}
	return g, nil
}

// readOnlyMounts are the paths of the read-only mounts.
func readOnlyMounts(mounts []mountSpec) []string {
	var ro []string
	for _, m := range mounts {
		if !m.Writable {
			ro = append(ro, m.Path)
		}
	}
	return ro
}

// below reports whether p lies strictly under dir, component by component.
func below(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../")
}

// maxCarved bounds the entries carve grants one by one, in all.
const maxCarved = 1024

// carve grants the writable tree dir but the read-only paths ro under it.
// Landlock's rights add up along a path, so a read-only rule under a
// writable one takes nothing away: instead each entry of dir is granted
// everything on its own, but those on the way to a read-only path. These
// folders (dir too) get read rights only, so that nothing in them can be
// made, removed or renamed: a read-only entry cannot be replaced, nor a
// folder holding one moved (nor a file in them hard-linked out: that
// needs REFER). Links are not followed, nor granted (their folder keeps
// them). More than maxCarved entries in all is refused.
func carve(dir string, ro []string, g *llGrants, left *int) error {
	g.read = append(g.read, dir)
	g.spec(dir)
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("keeping read-only paths inside %s: %w", dir, err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("keeping read-only paths inside %s: %w", dir, err)
	}
	for _, name := range names {
		p := filepath.Join(dir, name)
		if slices.Contains(ro, p) {
			continue // read-only: its rule is among the reads
		}
		fi, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return fmt.Errorf("keeping read-only paths inside %s: %w", dir, err)
		}
		if inner := slices.DeleteFunc(slices.Clone(ro), func(r string) bool { return !below(r, p) }); len(inner) > 0 {
			if !fi.IsDir() {
				return fmt.Errorf("keeping read-only paths inside %s: %s is no longer a folder", dir, p)
			}
			if err := carve(p, inner, g, left); err != nil {
				return err
			}
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			continue
		}
		if *left--; *left < 0 {
			return errTooManyCarved
		}
		g.entries = append(g.entries, p)
	}
	return nil
}

// errTooManyCarved says why a command with read-only paths inside a
// writable tree of many entries is refused.
var errTooManyCarved = fmt.Errorf("read-only paths inside the workspace are kept so at reduced by granting every other entry "+
	"of the folders that hold them one by one, and those folders hold more than %d entries: move entries into subfolders, "+
	"or give commands the full sandbox (sandbox.mode userns or gvisor)", maxCarved)

// wayFolders are the folders carve gives read rights only: those from each
// writable path (not itself read-only) down to each read-only path under
// it. No entry can be made, removed or renamed directly in them.
func wayFolders(mounts []mountSpec) []string {
	ro := readOnlyMounts(mounts)
	var out []string
	for _, m := range mounts {
		if !m.Writable || slices.Contains(ro, m.Path) {
			continue
		}
		for _, r := range ro {
			for d := r; below(d, m.Path); {
				d = filepath.Dir(d)
				if !slices.Contains(out, d) {
					out = append(out, d)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// userTasks counts the tasks (threads) of uid that this process can see:
// what RLIMIT_NPROC counts, besides those of other pid namespaces.
func userTasks(uid int) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var real, threads int = -1, 0
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			f := strings.Fields(v)
			switch {
			case k == "Uid" && len(f) > 0:
				real, _ = strconv.Atoi(f[0])
			case k == "Threads" && len(f) > 0:
				threads, _ = strconv.Atoi(f[0])
			}
		}
		if real == uid {
			n += threads
		}
	}
	return n
}
