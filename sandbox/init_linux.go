package sandbox

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Init turns the process into a sandbox helper when it was started as one
// by the native backend; it then never returns (it becomes the command, or
// exits). Otherwise it returns false at once. Call it first thing in main,
// and in TestMain of tests that use the native backend:
//
//	func main() {
//		if sandbox.Init() {
//			return
//		}
//		...
//	}
func Init() bool {
	if len(os.Args) == 1 && (os.Args[0] == starterArg0 || os.Args[0] == podStarterArg0) {
		os.Exit(starterMain(os.Args[0] == podStarterArg0))
	}
	if len(os.Args) != 2 || os.Args[0] != initArg0 {
		return false
	}
	// Credentials, no_new_privs, Landlock and seccomp are set on this
	// thread, which then execs: keep the goroutine on it.
	runtime.LockOSThread()
	switch os.Args[1] {
	case "native":
		os.Exit(helperMain())
	case "reduced":
		os.Exit(reducedMain())
	}
	fmt.Fprintln(os.Stderr, "sandbox: unknown helper mode")
	os.Exit(126)
	return true
}

const ctlFD = 3

// helperMain sets up the sandbox and execs the command. It runs as pid 1
// of the new pid namespace, root of the new user namespace.
func helperMain() int {
	// The part of the sandbox that does not depend on the spec is built
	// while the parent makes the cgroup and sends the spec (or, for a
	// helper started ahead, before there is a command).
	return runHelper(buildBase, setup)
}

// runHelper is a helper's life: base (nil: none) builds what needs no
// spec, then it reads the spec, takes its standard files, confines itself
// by setup and execs the command (execCommand).
func runHelper(base func() error, setup func(*initConfig) (initReply, []int, error)) int {
	unix.CloseOnExec(ctlFD)
	ctl := os.NewFile(ctlFD, "sandbox-control")
	var baseErr error
	if base != nil {
		baseErr = base()
	}
	var cfg initConfig
	msgs := &msgReader{f: ctl}
	passed, err := msgs.read(&cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox: reading the spec:", err)
		return 126
	}
	if err := takeStdio(&cfg, passed); err != nil {
		sendMsg(ctl, initReply{Error: err.Error()}, nil)
		return 126
	}
	if baseErr != nil {
		// What needs no spec fails for every command: refused, it
		// will be again (a masked /proc, mounts forbidden).
		lasting := errors.Is(baseErr, unix.EPERM) || errors.Is(baseErr, unix.EACCES)
		sendMsg(ctl, initReply{Error: baseErr.Error(), Lasting: lasting}, nil)
		return 126
	}
	reply, fds, err := setup(&cfg)
	if err != nil {
		sendMsg(ctl, initReply{Error: err.Error()}, nil)
		return 126
	}
	return execCommand(ctl, msgs, &cfg, reply, fds)
}

// execCommand tells the parent what held (passing it fds), waits for its
// word with cfg.Gate, and execs the command, or says why it could not.
func execCommand(ctl *os.File, msgs *msgReader, cfg *initConfig, reply initReply, fds []int) int {
	path, err := lookPath(cfg.Argv[0], lookEnv(cfg.Env, "PATH"), cfg.Dir)
	if err != nil {
		reply.FDs = nil
		sendMsg(ctl, reply, nil)
		if cfg.Gate {
			msgs.read(&gateMsg{}) // the parent answers a gated reply first
		}
		sendMsg(ctl, initReply{ExecError: err.Error()}, nil)
		return 127
	}
	if err := sendMsg(ctl, reply, fds); err != nil {
		return 126
	}
	for _, fd := range fds {
		unix.Close(fd)
	}
	if cfg.Gate {
		var g gateMsg
		if _, err := msgs.read(&g); err != nil || !g.Go {
			return 126
		}
	}
	err = syscall.Exec(path, cfg.Argv, cfg.Env)
	sendMsg(ctl, initReply{ExecError: fmt.Sprintf("exec %s: %v", cfg.Argv[0], err)}, nil)
	if errors.Is(err, unix.ENOENT) {
		return 127
	}
	return 126
}

// takeStdio makes the files passed with a spec that streams (stdin, then
// the output; with a terminal, the terminal twice) the standard files, the
// terminal the controlling one; with OwnStderr, the output is stdout only.
func takeStdio(cfg *initConfig, passed []int) error {
	defer closeAll(passed)
	if !cfg.Stdio {
		return nil
	}
	if len(passed) != 2 {
		return fmt.Errorf("got %d standard files, not 2", len(passed))
	}
	std := []int{passed[0], passed[1], passed[1]}
	if cfg.OwnStderr {
		std = std[:2]
	}
	for i, fd := range std {
		if err := unix.Dup3(fd, i, 0); err != nil {
			return fmt.Errorf("standard file %d: %w", i, err)
		}
	}
	if cfg.TTY {
		if err := unix.IoctlSetInt(0, unix.TIOCSCTTY, 0); err != nil {
			return fmt.Errorf("controlling terminal: %w", err)
		}
	}
	return nil
}

// sendMsg writes v as one length-prefixed JSON message with fds attached.
func sendMsg(f *os.File, v any, fds []int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	msg := make([]byte, 4+len(b))
	binary.LittleEndian.PutUint32(msg, uint32(len(b)))
	copy(msg[4:], b)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	for len(msg) > 0 {
		n, err := unix.SendmsgN(int(f.Fd()), msg, oob, nil, 0)
		if err != nil {
			return err
		}
		msg, oob = msg[n:], nil
	}
	return nil
}

// setup builds the sandbox around this process: file system view,
// network, limits, then the irreversible part (capabilities,
// no_new_privs, Landlock, seccomp). It returns what held and the fds for
// the parent (seccomp notifications, the proxy listener).
func setup(cfg *initConfig) (initReply, []int, error) {
	var r initReply
	var fds []int
	if err := finishRoot(cfg); err != nil {
		return r, nil, err
	}
	if cfg.Proxy {
		fd, err := proxyListener(cfg.ProxyPort)
		if err != nil {
			return r, nil, err
		}
		fds = append(fds, fd)
		r.FDs = append(r.FDs, "listener")
	}
	if err := unix.Chdir(cfg.Dir); err != nil {
		return r, nil, fmt.Errorf("working folder %s: %w", cfg.Dir, err)
	}
	rl, err := setRlimits(cfg.Limits, cfg.MemoryRlimit, !cfg.CPUByCgroup)
	if err != nil {
		return r, nil, err
	}
	r.Rlimits = rl
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return r, nil, fmt.Errorf("no_new_privs: %w", err)
	}
	writable := []string{"/tmp", "/dev/shm"}
	if cfg.PrivateHome {
		writable = append(writable, Home)
	}
	for _, m := range cfg.Mounts {
		if m.Writable {
			writable = append(writable, m.Path)
		}
	}
	port := 0
	switch {
	case cfg.Pod:
		port = -1
	case cfg.Proxy:
		port = cfg.ProxyPort
	}
	if v, err := landlockRestrict([]string{"/"}, writable,
		[]string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}, port); err != nil {
		r.Landlock = "unavailable: " + err.Error()
	} else {
		r.Landlock = "v" + strconv.Itoa(v)
	}
	if fds, err = filterAndDrop(&r, fds, cfg.Proxy || cfg.Pod, false); err != nil {
		return r, nil, err
	}
	r.Caps = "none"
	return r, fds, nil
}

// filterAndDrop is the last step of both helpers before their command
// runs: it loads the seccomp filter (network: sockets for the proxy or the
// pod's loopback; reduced: the reduced sandbox's rules besides), records
// in r what holds now (the namespaces, seccomp, no_new_privs), passes the
// filter's notification fd on in fds, and drops every capability.
func filterAndDrop(r *initReply, fds []int, network, reduced bool) ([]int, error) {
	r.NS = namespaceIDs("/proc/self")
	notify, err := loadFilters(network, reduced)
	if err != nil {
		return fds, err
	}
	r.Seccomp = seccompFiltered()
	r.NNP = statusField("NoNewPrivs") == "1"
	if notify >= 0 {
		r.Report = true
		fds = append(fds, notify)
		r.FDs = append(r.FDs, "notify")
	}
	return fds, dropCapabilities()
}

// The new root is built on a tmpfs, read-only once built: system folders
// bound read-only from the host, a few /etc files copied, a writable tmpfs
// on /tmp, a fresh /proc with its dangerous files hidden, a /dev of five
// devices and a writable /dev/shm, and the spec's paths bound at their
// host paths. To reach the host's paths while building, the process first
// pivots into a scratch tmpfs with the host root under /.old.

// systemDirs are shown read-only when they exist (as links when they are).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// bindFunc returns a function that binds src at dst (recursively, making
// dst) and records dst in binds.
func bindFunc(binds map[string]bool) func(src, dst string, writable bool) error {
	return func(src, dst string, writable bool) error {
		fi, err := os.Stat(src)
		if err != nil {
			return err
		}
		if err := makePlace(dst, fi.IsDir()); err != nil {
			return err
		}
		if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s: %w", strings.TrimPrefix(src, oldRoot), err)
		}
		binds[dst] = writable
		return nil
	}
}

// makePlace makes dst, a folder (with its parents) or else an empty file,
// for a bind.
func makePlace(dst string, dir bool) error {
	if dir {
		return os.MkdirAll(dst, 0o755)
	}
	if _, err := os.Lstat(dst); err == nil { // one that exists may lie in a read-only bind
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		f.Close()
	} else if errors.Is(err, os.ErrExist) {
		err = nil
	}
	return err
}

// emptyDirs are made, empty, in the new root, so that a write to a place a
// program expects (/opt/x, /var/cache/x, ~/.config) meets a read-only file
// system (EROFS) rather than a missing folder.
var emptyDirs = []string{
	"/tmp", "/run", "/root", Home, "/media", "/mnt", "/opt", "/srv", "/boot",
	"/var/tmp", "/var/cache", "/var/lib", "/var/log", "/var/spool", "/var/opt", "/var/mail",
}

// etcFiles are copied into the sandbox's /etc (links are kept as links).
var etcFiles = []string{
	"passwd", "group", "hosts", "resolv.conf", "nsswitch.conf", "host.conf", "gai.conf",
	"ld.so.cache", "ld.so.conf", "localtime", "timezone", "os-release", "debian_version", "lsb-release",
	"protocols", "services", "networks", "mime.types", "inputrc", "bash.bashrc", "profile", "environment",
	"gitconfig", "npmrc", "pip.conf", "magic", "magic.mime", "shells", "login.defs", "mailcap", "papersize",
	"manpath.config", "adduser.conf", "locale.alias", "locale.conf", "default",
}

// etcDirs are bound read-only into /etc when they exist (each bind costs
// start-up time: keep the list short).
var etcDirs = []string{"alternatives", "ssl", "ca-certificates", "pki"}

const (
	scratch = "/tmp"
	oldRoot = "/.old"
	newRoot = "/new"
)

// mountErr wraps err (if any) with what was being done.
func mountErr(err error, what string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// hostPath is where the host's path p is while the root is built.
func hostPath(p string) string { return oldRoot + p }

// rootPath is where the new root's path p is while it is built.
func rootPath(p string) string { return newRoot + p }

// buildBase builds the part of the new root that is the same for every
// command (all but the spec's paths), under newRoot, with the host's root
// reachable under oldRoot, and empties the bounding set.
func buildBase() error {
	if err := unix.Sethostname([]byte("sandbox")); err != nil {
		return fmt.Errorf("sethostname: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return mountErr(err, "making mounts private")
	}
	if err := unix.Mount("tmpfs", scratch, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
		return mountErr(err, "scratch tmpfs")
	}
	if err := os.Mkdir(scratch+oldRoot, 0o700); err != nil {
		return err
	}
	if err := unix.PivotRoot(scratch, scratch+oldRoot); err != nil {
		return mountErr(err, "pivot_root into the scratch tmpfs")
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := os.Mkdir(newRoot, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return mountErr(err, "root tmpfs")
	}
	// binds lists the bound targets (inside the new root) and whether each
	// is writable, to fix their flags afterwards.
	binds := map[string]bool{}
	bind := bindFunc(binds)
	for _, d := range systemDirs {
		fi, err := os.Lstat(hostPath(d))
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(hostPath(d))
			if err != nil {
				return err
			}
			if err := os.Symlink(target, rootPath(d)); err != nil {
				return err
			}
			continue
		}
		if err := bind(hostPath(d), rootPath(d), false); err != nil {
			return err
		}
	}
	if err := buildEtc(hostPath("/etc"), rootPath("/etc"), bind); err != nil {
		return err
	}
	// /tmp is the one writable place besides the spec's paths (and
	// /dev/shm); the other folders a program may expect stay empty and,
	// with the whole root, read-only.
	for _, d := range emptyDirs {
		if err := os.MkdirAll(rootPath(d), 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount("tmpfs", rootPath("/tmp"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return mountErr(err, "tmpfs /tmp")
	}
	if err := os.Symlink("../run", rootPath("/var/run")); err != nil {
		return err
	}
	if err := os.Symlink("../run/lock", rootPath("/var/lock")); err != nil {
		return err
	}
	if err := buildDev(hostPath("/dev"), rootPath("/dev"), bind); err != nil {
		return err
	}
	if err := buildProc(hostPath("/dev/null"), rootPath("/proc"), bind); err != nil {
		return err
	}
	// The flags of these binds are fixed now, before there is a command
	// (the spec's paths are bound later, as mounts of their own, and
	// fixed then); so is the bounding set, which no mount needs.
	if err := fixBindFlags(binds); err != nil {
		return err
	}
	return dropBoundingSet(rootPath("/proc/sys/kernel/cap_last_cap"))
}

// bindSpec binds the spec's path m at its place in the new root by file,
// never by name. The source is the file opened following no link
// (openNoFollow, through the host's root: the new root has no /proc
// yet), so a link swapped in since the spec was resolved is refused, not
// followed. The place, once made, is opened the same way and must be
// that very file when it lies in a tree bound from the source's file
// system (a grant inside the workspace): a writer of the workspace that
// swaps a folder on the way for a link, or for another folder, gets the
// command refused, where a bind by name followed the link, covered its
// target and left the grant writable under its own name. The mount is a
// copy of the source's tree (open_tree), made read-only (unless
// writable), nosuid and nodev (but under /dev) before it is attached to
// the place's file (mount_setattr, move_mount): no later step looks it up
// by name either. Before Linux 5.12 (no mount_setattr) it binds through
// both files' /proc/self/fd names and leaves the flags to fixBindFlags
// (binds), which finds the mounts by name.
func bindSpec(m mountSpec, binds map[string]bool) error {
	src, err := openNoFollow(oldRoot, m.Path)
	if err != nil {
		return err
	}
	defer unix.Close(src)
	var from, to unix.Stat_t
	if err := unix.Fstat(src, &from); err != nil {
		return err
	}
	dst := rootPath(m.Path)
	if err := makePlace(dst, from.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
		return err
	}
	place, err := openNoFollow("/", dst)
	if err != nil {
		return err
	}
	defer unix.Close(place)
	if err := unix.Fstat(place, &to); err != nil {
		return err
	}
	if to.Dev == from.Dev && to.Ino != from.Ino {
		return fmt.Errorf("%s was swapped for another file as it was bound (refused: a grant is bound on its own place only)", m.Path)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID}
	if !strings.HasPrefix(m.Path, "/dev/") {
		attr.Attr_set |= unix.MOUNT_ATTR_NODEV
	}
	if !m.Writable {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	tree, err := unix.OpenTree(src, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err == nil {
		defer unix.Close(tree)
		err = unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr)
	}
	if errors.Is(err, unix.ENOSYS) {
		fd := func(f int) string { return hostPath("/proc/self/fd/" + strconv.Itoa(f)) }
		if err := unix.Mount(fd(src), fd(place), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
		binds[dst] = m.Writable
		return nil
	}
	if err != nil {
		return err
	}
	return unix.MoveMount(tree, "", place, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
}

// finishRoot binds the spec's paths into the root buildBase made, fixes
// their flags, and enters the new root, dropping the host's.
func finishRoot(cfg *initConfig) error {
	// Kernels without mount_setattr leave binds for fixBindFlags.
	binds := map[string]bool{}
	// The spec's paths, parents first.
	mounts := append([]mountSpec(nil), cfg.Mounts...)
	sort.SliceStable(mounts, func(i, j int) bool { return len(mounts[i].Path) < len(mounts[j].Path) })
	for _, m := range mounts {
		if err := bindSpec(m, binds); err != nil {
			return fmt.Errorf("binding %s: %w", m.Path, err)
		}
	}
	if err := fixBindFlags(binds); err != nil {
		return err
	}
	if cfg.PrivateHome {
		if err := unix.Mount("tmpfs", rootPath(Home), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
			return mountErr(err, "tmpfs "+Home)
		}
	}
	// Enter the new root and drop the host's.
	if err := unix.Chdir(newRoot); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return mountErr(err, "pivot_root into the sandbox root")
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return mountErr(err, "detaching the host root")
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	// Everything the spec did not make writable is read-only: a write
	// there fails with EROFS instead of landing in a throwaway layer.
	if err := unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return mountErr(err, "making the root read-only")
	}
	if err := unix.Mount("", "/dev", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, ""); err != nil {
		return mountErr(err, "making /dev read-only")
	}
	return nil
}

func buildEtc(src, dst string, bind func(src, dst string, w bool) error) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, name := range etcFiles {
		if err := copyEtcFile(src+"/"+name, dst+"/"+name); err != nil {
			return err
		}
	}
	os.WriteFile(filepath.Join(dst, "hostname"), []byte("sandbox\n"), 0o644)
	os.Symlink("/proc/self/mounts", filepath.Join(dst, "mtab"))
	for _, d := range etcDirs {
		s := filepath.Join(src, d)
		fi, err := os.Lstat(s)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			if t, err := os.Readlink(s); err == nil {
				os.MkdirAll(filepath.Dir(filepath.Join(dst, d)), 0o755)
				os.Symlink(t, filepath.Join(dst, d))
			}
			continue
		}
		if fi.IsDir() {
			if err := bind(s, filepath.Join(dst, d), false); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyEtcFile copies the host file src to dst: a link as a link, a
// regular file under 4 MiB by its content, nothing else; a file the
// sandbox's user cannot read is not shown. It copies in the kernel
// (sendfile) with plain system calls, a third of those os.ReadFile and
// os.WriteFile make, and no buffer.
func copyEtcFile(src, dst string) error {
	in, err := unix.Open(src, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == unix.ELOOP { // a link
		if t, err := os.Readlink(src); err == nil {
			os.Symlink(t, dst)
		}
		return nil
	}
	if err != nil {
		return nil // absent or not readable: not shown
	}
	defer unix.Close(in)
	var st unix.Stat_t
	if err := unix.Fstat(in, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size >= maxEtcFile {
		return nil
	}
	out, err := unix.Open(dst, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return &os.PathError{Op: "open", Path: dst, Err: err}
	}
	defer unix.Close(out)
	left := maxEtcFile
	for left > 0 {
		n, err := unix.Sendfile(out, in, nil, left)
		if err == unix.EINTR {
			continue
		}
		if err != nil { // a file system that cannot: copy by hand
			return copyRest(in, out, dst, left)
		}
		if n == 0 {
			break
		}
		left -= n
	}
	return nil
}

// maxEtcFile bounds the /etc files copied into the sandbox.
const maxEtcFile = 4 << 20

// copyRest copies what is left of in (at most left bytes) to out, dst's;
// when in cannot be read, dst is removed (not shown).
func copyRest(in, out int, dst string, left int) error {
	buf := make([]byte, 32<<10)
	for left > 0 {
		n, err := unix.Read(in, buf[:min(len(buf), left)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			unix.Unlink(dst)
			return nil
		}
		if n == 0 {
			return nil
		}
		if _, err := unix.Write(out, buf[:n]); err != nil {
			return &os.PathError{Op: "write", Path: dst, Err: err}
		}
		left -= n
	}
	return nil
}

var devices = []string{"null", "zero", "full", "random", "urandom"}

func buildDev(src, dst string, bind func(src, dst string, w bool) error) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dst, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755"); err != nil {
		return fmt.Errorf("tmpfs /dev: %w", err)
	}
	for _, d := range devices {
		if err := bind(filepath.Join(src, d), filepath.Join(dst, d), true); err != nil {
			return err
		}
	}
	for name, target := range map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(target, filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	shm := filepath.Join(dst, "shm")
	if err := os.Mkdir(shm, 0o1777); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777"); err != nil {
		return fmt.Errorf("tmpfs /dev/shm: %w", err)
	}
	return nil
}

// procReadOnly are made read-only, procHidden covered by /dev/null (or an
// empty tmpfs for folders), as container runtimes do.
var (
	procReadOnly = []string{"sys", "sysrq-trigger", "irq", "bus"}
	procHidden   = []string{"kcore", "keys", "timer_list", "sched_debug"}
)

func buildProc(devNull, dst string, bind func(src, dst string, w bool) error) error {
	if err := os.MkdirAll(dst, 0o555); err != nil {
		return err
	}
	if err := unix.Mount("proc", dst, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	for _, p := range procReadOnly {
		s := filepath.Join(dst, p)
		if _, err := os.Lstat(s); err != nil {
			continue
		}
		if err := unix.Mount(s, s, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding /proc/%s: %w", p, err)
		}
		if err := unix.Mount("", s, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("read-only /proc/%s: %w", p, err)
		}
	}
	for _, p := range procHidden {
		s := filepath.Join(dst, p)
		fi, err := os.Lstat(s)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			err = unix.Mount("tmpfs", s, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0555")
		} else {
			err = unix.Mount(devNull, s, "", unix.MS_BIND, "")
		}
		if err != nil {
			return fmt.Errorf("hiding /proc/%s: %w", p, err)
		}
	}
	return nil
}

// fixBindFlags makes every bound mount (and each mount below it)
// read-only unless it is writable, and nosuid and nodev (devices keep
// dev): with mount_setattr, one call per bind, else by remounting each
// mount listed in mountinfo.
func fixBindFlags(binds map[string]bool) error {
	targets := make([]string, 0, len(binds))
	for b := range binds {
		targets = append(targets, b)
	}
	sort.Strings(targets) // parents first: a writable child is fixed after its read-only parent
	for _, b := range targets {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID}
		if !strings.HasPrefix(b, newRoot+"/dev/") {
			attr.Attr_set |= unix.MOUNT_ATTR_NODEV
		}
		if binds[b] {
			attr.Attr_clr = unix.MOUNT_ATTR_RDONLY
		} else {
			attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
		}
		err := unix.MountSetattr(unix.AT_FDCWD, b, unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW, &attr)
		if errors.Is(err, unix.EPERM) && attr.Attr_clr != 0 { // read-only on the host: stays so
			attr.Attr_clr = 0
			err = unix.MountSetattr(unix.AT_FDCWD, b, unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW, &attr)
		}
		if errors.Is(err, unix.ENOSYS) {
			return remountBinds(binds)
		}
		if err != nil {
			return fmt.Errorf("mount flags of %s: %w", strings.TrimPrefix(b, newRoot), err)
		}
	}
	return nil
}

// remountBinds is fixBindFlags for kernels without mount_setattr (< 5.12).
func remountBinds(binds map[string]bool) error {
	f, err := os.Open(newRoot + "/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 {
			points = append(points, unescapeMount(fields[4]))
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for _, mp := range points {
		best, writable := "", false
		for b, w := range binds {
			if (mp == b || strings.HasPrefix(mp, b+"/")) && len(b) > len(best) {
				best, writable = b, w
			}
		}
		if best == "" {
			continue
		}
		var st unix.Statfs_t
		if err := unix.Statfs(mp, &st); err != nil {
			continue // hidden under a later mount
		}
		flags := uintptr(unix.MS_REMOUNT|unix.MS_BIND|unix.MS_NOSUID) | lockedFlags(st.Flags)
		if !strings.HasPrefix(best, newRoot+"/dev/") {
			flags |= unix.MS_NODEV
		}
		if !writable {
			flags |= unix.MS_RDONLY
		}
		if err := unix.Mount("", mp, "", flags, ""); err != nil {
			return fmt.Errorf("remounting %s: %w", strings.TrimPrefix(mp, newRoot), err)
		}
	}
	return nil
}

// lockedFlags turns statfs flags into the mount flags a remount must keep.
func lockedFlags(f int64) uintptr {
	var m uintptr
	for st, ms := range map[int64]uintptr{
		unix.ST_RDONLY: unix.MS_RDONLY, unix.ST_NOSUID: unix.MS_NOSUID, unix.ST_NODEV: unix.MS_NODEV,
		unix.ST_NOEXEC: unix.MS_NOEXEC, unix.ST_NOATIME: unix.MS_NOATIME, unix.ST_NODIRATIME: unix.MS_NODIRATIME,
		unix.ST_RELATIME: unix.MS_RELATIME,
	} {
		if f&st != 0 {
			m |= ms
		}
	}
	return m
}

// proxyListener brings the namespace's loopback up and listens on
// 127.0.0.1:port inside it.
func proxyListener(port int) (int, error) {
	if err := loopbackUp(); err != nil {
		return -1, err
	}
	l, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Bind(l, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(l)
		return -1, fmt.Errorf("proxy port: %w", err)
	}
	if err := unix.Listen(l, 128); err != nil {
		unix.Close(l)
		return -1, err
	}
	return l, nil
}

// loopbackUp brings the network namespace's loopback interface up.
func loopbackUp() error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	return nil
}

// setRlimits lowers the process's resource limits (inherited by the
// command) and lists them; RLIMIT_DATA with memory, RLIMIT_CPU with cpuTime.
func setRlimits(l Limits, memory, cpuTime bool) ([]string, error) {
	cpu := uint64((l.CPU + 999_999_999) / 1_000_000_000)
	type lim struct {
		name     string
		resource int
		cur, max uint64
		show     string
	}
	var list []lim
	if cpuTime {
		list = append(list, lim{"cpu", unix.RLIMIT_CPU, cpu, cpu + 1, fmt.Sprintf("cpu=%ds", cpu)})
	}
	list = append(list, []lim{
		{"fsize", unix.RLIMIT_FSIZE, uint64(l.FileSize), uint64(l.FileSize), fmt.Sprintf("fsize=%d", l.FileSize)},
		{"nofile", unix.RLIMIT_NOFILE, uint64(l.OpenFiles), uint64(l.OpenFiles), fmt.Sprintf("nofile=%d", l.OpenFiles)},
		{"nproc", unix.RLIMIT_NPROC, uint64(l.Processes), uint64(l.Processes), fmt.Sprintf("nproc=%d", l.Processes)},
		{"core", unix.RLIMIT_CORE, 0, 0, "core=0"},
	}...)
	if memory {
		list = append(list, lim{"data", unix.RLIMIT_DATA, uint64(l.Memory), uint64(l.Memory), fmt.Sprintf("data=%d", l.Memory)})
	}
	var shown []string
	for _, x := range list {
		var old syscall.Rlimit
		if err := syscall.Getrlimit(x.resource, &old); err == nil && old.Max < x.max {
			x.max = old.Max
			x.cur = min(x.cur, old.Max)
		}
		// syscall.Setrlimit (not unix.) so that the Go runtime does not
		// restore its own RLIMIT_NOFILE at exec.
		if err := syscall.Setrlimit(x.resource, &syscall.Rlimit{Cur: x.cur, Max: x.max}); err != nil {
			return nil, fmt.Errorf("rlimit %s: %w", x.name, err)
		}
		shown = append(shown, x.show)
	}
	return shown, nil
}

// dropBoundingSet makes sure the command can never hold a capability:
// uid 0 gains none at exec (securebits, locked), and the bounding and
// ambient sets are emptied. lastCap is the path of
// /proc/sys/kernel/cap_last_cap.
func dropBoundingSet(lastCap string) error {
	const bits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<7 // NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED, NO_CAP_AMBIENT_RAISE, all locked
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	last := 40
	if b, err := os.ReadFile(lastCap); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("dropping capability %d: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("ambient capabilities: %w", err)
	}
	return nil
}

// dropCapabilities empties this thread's capability sets.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("dropping capabilities: %w", err)
	}
	return nil
}

// lookPath finds file in path (as execvp does), relative names against
// dir.
func lookPath(file, path, dir string) (string, error) {
	isExec := func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && !fi.IsDir() && unix.Access(p, unix.X_OK) == nil
	}
	if strings.Contains(file, "/") {
		p := file
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if isExec(p) {
			return p, nil
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: no such file", file)
		}
		return "", fmt.Errorf("%s: not an executable file", file)
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		if p := filepath.Join(d, file); isExec(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found", file)
}
