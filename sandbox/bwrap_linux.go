package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Bwrap runs commands through bubblewrap (bwrap) when it is installed:
// the same view as Native (a read-only root of system folders and a few
// /etc files, writable only in the workspace, the spec's writable paths,
// a tmpfs /tmp and /dev/shm; a fresh /proc and a minimal /dev), all
// namespaces unshared, every capability dropped, a new session, and the
// same seccomp filter (with quiet refusals: bwrap has no way to report
// them). Its grants are bound from files opened following no link, as
// Native's are (bwrapArgs), and its read-only grants are checked in
// place, read-only, before the command runs (bwrapCheck), while the
// sandbox's first process is held through a pidfd (so it needs Linux 5.3
// and a pidfd_open no seccomp profile refuses); every kill (a refusal, the
// timeout, a cancel, the output limit) goes to that process as well as to
// bwrap, and Run returns only once it is gone. It sets no rlimits,
// no cgroups and no Landlock, and has no proxy network (ErrUnsupported).
type Bwrap struct {
	// Path is the bwrap program; empty means "bwrap" in PATH.
	Path string

	refused refusal // what this kernel or container refuses for good
}

// Name returns "bwrap".
func (b *Bwrap) Name() string { return "bwrap" }

// Run runs spec under bubblewrap.
func (b *Bwrap) Run(ctx context.Context, spec Spec) (Outcome, error) {
	p, err := prepare(spec)
	if err != nil {
		return Outcome{}, err
	}
	if spec.Network.Enabled() {
		return Outcome{}, fmt.Errorf("%w: the bwrap backend has no proxy network", ErrUnsupported)
	}
	if spec.Stream != nil || spec.Pod != nil {
		return Outcome{}, fmt.Errorf("%w: the bwrap backend neither streams nor shares a pod", ErrUnsupported)
	}
	if err := b.refused.get(); err != nil {
		return Outcome{}, err
	}
	// A refused sandbox is stopped through a pidfd of its first process
	// (below): without pidfds, no bwrap is started.
	self, err := pidfdOpen(os.Getpid(), 0)
	if err != nil {
		refused := fmt.Errorf("%w: the bwrap backend needs pidfd_open (Linux 5.3): %v", ErrUnavailable, err)
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
			return Outcome{}, b.refused.note(lastingError{refused})
		}
		return Outcome{}, refused
	}
	unix.Close(self)
	bin := b.Path
	if bin == "" {
		bin = "bwrap"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return Outcome{}, fmt.Errorf("%w: bubblewrap is not installed: %v", ErrUnavailable, err)
	}
	insts, err := assemble(filterRules(false, false, unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM)))
	if err != nil {
		return Outcome{}, err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return Outcome{}, err
	}
	var prog bytes.Buffer
	for _, r := range raw {
		binary.Write(&prog, binary.NativeEndian, struct {
			Code   uint16
			Jt, Jf uint8
			K      uint32
		}{r.Op, r.Jt, r.Jf, r.K})
	}
	sr, sw, err := os.Pipe()
	if err != nil {
		return Outcome{}, err
	}
	defer sr.Close()
	go func() { sw.Write(prog.Bytes()); sw.Close() }()

	// bwrap writes the sandbox's first pid to info (fd 4), and holds the
	// command until a byte arrives on block (fd 5): its namespaces are
	// measured meanwhile (bwrap falls back to the caller's user namespace
	// when it may not make one, and says nothing of it).
	ir, iw, err := os.Pipe()
	if err != nil {
		return Outcome{}, err
	}
	defer ir.Close()
	br, bw, err := os.Pipe()
	if err != nil {
		iw.Close()
		return Outcome{}, err
	}
	defer bw.Close()
	// The grants, opened following no link, go to bwrap from fd 6 on.
	args, root, grants, err := bwrapArgs(p, 6)
	if err != nil {
		iw.Close()
		br.Close()
		return Outcome{}, err
	}
	defer closeFiles(grants)
	args = append(args, "--seccomp", "3", "--info-fd", "4", "--block-fd", "5", "--")
	args = append(args, p.argv...)
	fl := &flood{killAt: floodLimit(p.limits.Output)}
	stdout, stderr := newCapture(p.limits.Output, fl), newCapture(p.limits.Output, fl)
	cmd := exec.Command(path, args...)
	cmd.Env = []string{}
	cmd.Stdin = bytes.NewReader(spec.Stdin)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = append([]*os.File{sr, iw, br}, grants...)
	cmd.WaitDelay = 2 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	var mu sync.Mutex
	killed := ""
	held := -1 // the pidfd of the sandbox's first process, once held
	kill := func(why string) {
		mu.Lock()
		defer mu.Unlock()
		if killed == "" && cmd.Process != nil {
			killed = why
			// The first process first: it binds itself to bwrap's life
			// (--die-with-parent) only after it read the block byte, so
			// killing bwrap alone could leave it to run the command
			// unwatched. It is pid 1 of the sandbox's pid namespace: its
			// end takes every process of the sandbox.
			if held >= 0 {
				unix.PidfdSendSignal(held, unix.SIGKILL, nil, 0)
			}
			cmd.Process.Kill()
		}
	}
	fl.onFlood = func() { kill("output") }
	start := time.Now()
	err = cmd.Start()
	iw.Close()
	br.Close()
	if err != nil {
		return Outcome{}, fmt.Errorf("%w: starting bwrap: %v", ErrUnavailable, err)
	}
	pid, namespaces := bwrapNamespaces(ir)
	// bwrap binds the sandbox's first process to its own life
	// (--die-with-parent) only once it goes on past --block-fd, so the
	// block pipe (bw, closed on return) is never closed before that
	// process is known dead: a refusal kills it through a pidfd (never by
	// a pid that may be another's by then) and waits for its end.
	done := make(chan struct{})
	first, err := holdFirst(pid, cmd.Process.Pid)
	if err != nil {
		// Not held: bwrap, not reaped yet, keeps its pid and the process
		// group it leads (Setsid) from any other process, and the first
		// process is in that group until past --block-fd (bwrap's setsid
		// comes after): one kill takes both, atomically with any fork.
		err = fmt.Errorf("the sandbox's first process cannot be held: %v", err)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		close(done)
	} else {
		mu.Lock()
		held = first
		mu.Unlock()
		defer func() {
			// Nothing of the sandbox outlives Run: the first process (and
			// with it its pid namespace) is gone before its pidfd closes,
			// and no kill signals through a closed one.
			killWait(first)
			mu.Lock()
			held = -1
			mu.Unlock()
			unix.Close(first)
		}()
		go func() { cmd.Wait(); close(done) }()
		check, cancel := context.WithTimeout(ctx, p.limits.Wall)
		err = bwrapCheck(check, pid, root, grants[0], grants[len(grants)-len(p.ReadOnly):], done)
		cancel()
		if err != nil {
			killWait(first)
			cmd.Process.Kill()
			<-done
		}
		if err == nil && hookBeforeRelease != nil {
			hookBeforeRelease(pid)
		}
	}
	if err != nil {
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signaled() {
			return Outcome{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		// bwrap ended on its own first: its own failure is read below.
	}
	bw.Write([]byte{1})
	bw.Close()
	timer := time.NewTimer(p.limits.Wall)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		kill("timeout")
		<-done
	case <-ctx.Done():
		kill("cancelled")
		<-done
	}
	out := Outcome{
		Backend: b.Name(), Command: p.argv, Launcher: append([]string{path}, args[:len(args)-len(p.argv)]...), ExitCode: -1,
		Protections: Protections{
			Namespaces: namespaces,
			Filesystem: filesystemView,
			Landlock:   "unavailable: not applied by the bwrap backend", Seccomp: true,
			Cgroup: "none: not applied by the bwrap backend", NoNewPrivs: true, Capabilities: "none", Network: "none",
		},
	}
	out.Usage.Wall = time.Since(start)
	mu.Lock()
	out.Killed = killed
	mu.Unlock()
	if st := cmd.ProcessState; st != nil {
		ws, _ := st.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			out.Signal = unix.SignalName(ws.Signal())
		} else {
			out.ExitCode = ws.ExitStatus()
		}
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			out.Usage.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			out.Usage.MaxRSS = ru.Maxrss * 1024
		}
	}
	out.Stdout, out.StdoutTruncated = stdout.bytes()
	out.Stderr, out.StderrTruncated = stderr.bytes()
	out.Usage.OutputSize = stdout.written() + stderr.written()
	out.LimitsHit = limitsHit(&out, p.limits, cgroupStats{})
	if why, failed := bwrapFailed(&out); failed {
		err := fmt.Errorf("%w: bwrap could not set up the sandbox: %s", ErrUnavailable, why)
		if bwrapRefusedHere(why) {
			err = b.refused.note(lastingError{err})
		}
		return Outcome{}, err
	}
	return out, nil
}

// pidfdOpen is unix.PidfdOpen; a test makes it fail.
var pidfdOpen = unix.PidfdOpen

// hookBeforeRelease, set by a test, is called with the sandbox's first
// process once it is checked, before the block byte releases it.
var hookBeforeRelease func(pid int)

// holdFirst returns a pidfd of bwrap's first process pid, checked to be
// bwrap's (parent) child while the pidfd is held: a first process that
// ended and was reaped could have left its pid to another.
func holdFirst(pid, parent int) (int, error) {
	if pid <= 0 {
		return -1, fmt.Errorf("bwrap did not say which process the sandbox is")
	}
	fd, err := pidfdOpen(pid, 0)
	if err != nil {
		return -1, fmt.Errorf("pidfd_open: %w", err)
	}
	st, ok := procStat(pid)
	// The process is still fd's (alive or not reaped) after the read: the
	// stat read was its own.
	switch {
	case !ok:
		err = fmt.Errorf("process %d: its stat could not be read", pid)
	case unix.PidfdSendSignal(fd, 0, nil, 0) != nil:
		err = fmt.Errorf("process %d ended", pid)
	case st.ppid != parent:
		err = fmt.Errorf("process %d is not bwrap's", pid)
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// killWait kills the process of pidfd fd and waits for its end.
func killWait(fd int) {
	unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	for {
		_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1)
		if err != unix.EINTR {
			return
		}
	}
}

// bwrapFailed tells bwrap's own failure to set the sandbox up (exit 1 and
// one line "bwrap: …" on stderr, e.g. a /proc it may not mount) from the
// command's: none of the protections reported held, and the command never
// ran.
func bwrapFailed(o *Outcome) (string, bool) {
	line, ok := bytes.CutPrefix(o.Stderr, []byte("bwrap: "))
	if o.ExitCode != 1 || o.Killed != "" || !ok || bytes.Count(line, []byte("\n")) != 1 || !bytes.HasSuffix(line, []byte("\n")) {
		return "", false
	}
	return string(bytes.TrimSpace(line)), true
}

// bwrapRefusedHere reports whether bwrap's failure why is one no spec
// causes and no retry mends: the kernel or the container refuses it new
// namespaces, its uid map or a /proc of its own (EPERM, EACCES, or no user
// namespaces at all). The same steps failing for a passing shortage (out
// of processes or memory, too many namespaces in use) are not.
func bwrapRefusedHere(why string) bool {
	// The refusal's wordings across bubblewrap's releases and Debian's.
	if strings.HasPrefix(why, "No permissions to create new namespace") ||
		strings.HasPrefix(why, "No permissions to create a new namespace") ||
		strings.HasPrefix(why, "No permissions to creating new namespace") ||
		strings.HasPrefix(why, "Creating new namespace failed, likely because the kernel does not support user namespaces") {
		return true
	}
	for _, step := range []string{"Creating new namespace failed: ", "setting up uid map: ", "Can't mount proc on "} {
		if strings.HasPrefix(why, step) {
			return strings.HasSuffix(why, ": Operation not permitted") || strings.HasSuffix(why, ": Permission denied")
		}
	}
	return false
}

// bwrapNamespaces reads bwrap's --info-fd and returns the sandbox's first
// process and its namespaces that differ from this process's, measured
// while bwrap holds it (--block-fd); none when bwrap wrote nothing.
func bwrapNamespaces(info io.Reader) (int, []string) {
	var v struct {
		Pid int `json:"child-pid"`
	}
	if err := json.NewDecoder(info).Decode(&v); err != nil || v.Pid <= 0 {
		return 0, []string{}
	}
	return v.Pid, newNamespaces(namespaceIDs("/proc/" + strconv.Itoa(v.Pid)))
}

// bwrapCheck holds the command until bwrap's sandbox process pid has
// entered its new root (bwrap makes every mount of the view before it
// pivots into it, and reads --block-fd only after), then checks there,
// through /proc/PID/root and following no link, that each read-only
// grant's place is the granted file (ro, whose name is its path), on a
// read-only mount. bwrap mounts a grant on its place by name and
// remounts it read-only by name, following a link met there, and checks
// only afterwards that the name holds the granted file: a writer of the
// workspace that swaps a folder on the way for a link and back had the
// read-only mount cover the link's target and the grant left writable in
// the workspace, under its own name. The grant's name is read before and
// after, and must be its path both times (a grant renamed meanwhile is
// refused: its place would not be its mount's). A sandbox process that
// ends first (done), a set-up longer than ctx allows, or a grant not so
// refuses the command.
func bwrapCheck(ctx context.Context, pid int, root string, rootFile *os.File, ro []*os.File, done <-chan struct{}) error {
	var host, want unix.Stat_t
	if err := unix.Stat("/", &host); err != nil {
		return err
	}
	if err := unix.Fstat(int(rootFile.Fd()), &want); err != nil {
		return err
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	same := func(dir int, path string, st *unix.Stat_t) (int, bool) {
		fd, err := unix.Openat2(dir, path, &how)
		if err != nil {
			return -1, false
		}
		var got unix.Stat_t
		if unix.Fstat(fd, &got) != nil || got.Dev != st.Dev || got.Ino != st.Ino {
			unix.Close(fd)
			return -1, false
		}
		return fd, true
	}
	tick := time.NewTicker(100 * time.Microsecond)
	defer tick.Stop()
	var box int
	for {
		var err error
		box, err = unix.Open("/proc/"+strconv.Itoa(pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == nil {
			var st unix.Stat_t
			if unix.Fstat(box, &st) == nil && (st.Dev != host.Dev || st.Ino != host.Ino) {
				if fd, ok := same(box, root, &want); ok {
					unix.Close(fd)
					break // in the new root: every mount is made
				}
			}
			unix.Close(box)
		}
		select {
		case <-done:
			return fmt.Errorf("bwrap ended before the sandbox was set up")
		case <-ctx.Done():
			return fmt.Errorf("the sandbox was not set up in time: %v", ctx.Err())
		case <-tick.C:
		}
	}
	defer unix.Close(box)
	for _, f := range ro {
		var want unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &want); err != nil {
			return err
		}
		name := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
		before, _ := os.Readlink(name)
		fd, ok := same(box, f.Name(), &want)
		if !ok {
			return fmt.Errorf("the read-only grant %s is not in its place in the sandbox (swapped as it was set up)", f.Name())
		}
		var fs unix.Statfs_t
		err := unix.Fstatfs(fd, &fs)
		unix.Close(fd)
		after, _ := os.Readlink(name)
		if err != nil || fs.Flags&unix.ST_RDONLY == 0 || before != f.Name() || after != f.Name() {
			return fmt.Errorf("the read-only grant %s is not read-only in the sandbox (swapped as it was set up)", f.Name())
		}
	}
	return nil
}

// bwrapArgs builds bubblewrap's options for the view of p. The spec's
// paths (the workspace, the writable and the read-only ones) are opened
// here, one component at a time following no link (openNoFollow), and
// bound from the open file (--bind-fd N, N from fd on): a grant is exactly
// the file that was checked, and a link swapped in since the spec was
// resolved is refused, not followed. Never --bind /proc/self/fd/N: bwrap
// resolves a --bind source to a name before it mounts it and binds that
// name, which a writer of the workspace can swap for a link meanwhile;
// for --bind-fd it checks after the mount that the destination is the
// fd's file, and fails (the command is refused) when it is not, the
// destination swapped as well. A bwrap without --bind-fd refuses every
// command. The files are returned for bwrap to inherit, in order, with
// the workspace's resolved path.
func bwrapArgs(p *prepared, fd int) ([]string, string, []*os.File, error) {
	a := []string{"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", "sandbox",
		"--clearenv"}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", t, d)
			}
		default:
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, f := range etcFiles {
		a = append(a, "--ro-bind-try", "/etc/"+f, "/etc/"+f)
	}
	for _, d := range etcDirs {
		a = append(a, "--ro-bind-try", "/etc/"+d, "/etc/"+d)
	}
	for _, d := range emptyDirs {
		a = append(a, "--dir", d)
	}
	a = append(a, "--tmpfs", "/tmp", "--symlink", "../run", "/var/run", "--proc", "/proc", "--dev", "/dev",
		"--tmpfs", "/dev/shm", "--ro-bind-try", "/proc/sys", "/proc/sys")
	root, err := filepath.EvalSymlinks(p.Root)
	if err != nil {
		root = p.Root
	}
	var files []*os.File
	grant := func(option, path string) error {
		f, err := openNoFollow("/", path)
		if err != nil {
			return fmt.Errorf("%w: granting %s: %v", ErrInvalidSpec, path, err)
		}
		files = append(files, os.NewFile(uintptr(f), path))
		a = append(a, option, strconv.Itoa(fd+len(files)-1), path)
		return nil
	}
	err = grant("--bind-fd", root)
	for _, w := range p.Writable {
		if err == nil {
			err = grant("--bind-fd", w)
		}
	}
	for _, r := range p.ReadOnly {
		if err == nil {
			err = grant("--ro-bind-fd", r)
		}
	}
	if err != nil {
		closeFiles(files)
		return nil, "", nil, err
	}
	// As in Native, all but /tmp, /dev/shm and the spec's writable paths
	// is read-only, the root tmpfs and /dev included.
	a = append(a, "--remount-ro", "/", "--remount-ro", "/dev")
	rel, _ := filepath.Rel(p.Root, p.dir)
	a = append(a, "--chdir", filepath.Join(root, rel))
	for _, kv := range p.env {
		k, v, _ := cutEnv(kv)
		a = append(a, "--setenv", k, v)
	}
	return a, root, files, nil
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

func cutEnv(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}
