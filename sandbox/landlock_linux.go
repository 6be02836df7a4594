package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock is applied by hand with the three system calls: the helper
// restricts only the thread that then execs the command, whereas
// go-landlock restricts every thread through libcap's psx package, which
// would turn on cgo's pthread wrapping in every binary importing sandbox.

// landlockABI returns the kernel's Landlock ABI version, or 0 and why not.
func landlockABI() (int, string) {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		switch e {
		case unix.ENOSYS:
			return 0, "the kernel has no Landlock"
		case unix.EOPNOTSUPP:
			return 0, "Landlock is disabled at boot"
		}
		return 0, e.Error()
	}
	return int(v), ""
}

// fsAccess returns the file access rights ABI v handles.
func fsAccess(v int) uint64 {
	a := uint64(unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM)
	if v >= 2 {
		a |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if v >= 3 {
		a |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if v >= 5 {
		a |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return a
}

const (
	llRead = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
)

// landlockRestrict restricts the calling thread (and what it execs): read
// and execute under readPaths, everything under writePaths, read and write
// (no ioctl) of the files devFiles; TCP connect only to proxyPort (0: none)
// and no TCP bind (proxyPort -1: TCP left alone, for a pod, whose loopback
// its commands share); with ABI ≥ 6 no abstract unix socket or signal outside
// the sandbox. It returns the ABI used.
func landlockRestrict(readPaths, writePaths, devFiles []string, proxyPort int) (int, error) {
	return landlockApply(llGrants{read: readPaths, write: writePaths, dev: devFiles}, proxyPort)
}

// llGrants are the paths of a Landlock ruleset.
type llGrants struct {
	read    []string // read and execute beneath each
	write   []string // everything beneath each
	entries []string // everything, opened without following a link in the last component
	dev     []string // read and write (no ioctl) of each file
	// exact are the paths among read and write that come from the spec
	// (not the system's): opened following no link at all (openNoFollow).
	exact map[string]bool
}

// spec records that p, among read or write, is one of the spec's paths.
func (g *llGrants) spec(p string) {
	if g.exact == nil {
		g.exact = map[string]bool{}
	}
	g.exact[p] = true
}

// landlockApply is landlockRestrict with g's grants.
func landlockApply(g llGrants, proxyPort int) (int, error) {
	v, why := landlockABI()
	if v == 0 {
		return 0, fmt.Errorf("%s", why)
	}
	handled := fsAccess(v)
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	size := unsafe.Sizeof(uint64(0))
	if v >= 4 && proxyPort >= 0 {
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		size = 2 * unsafe.Sizeof(uint64(0))
	}
	if v >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size = 3 * unsafe.Sizeof(uint64(0))
	}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return 0, fmt.Errorf("landlock_create_ruleset: %w", e)
	}
	defer unix.Close(int(fd))
	add := func(p string, access uint64, flags int) error {
		var pfd int
		var err error
		switch {
		case g.exact[p]:
			pfd, err = openNoFollow("/", p)
		case flags&unix.O_NOFOLLOW != 0 && g.exact[filepath.Dir(p)]:
			// An entry of a carved folder: the folder as checked, then
			// the entry itself, a link there included.
			var dfd int
			if dfd, err = openNoFollow("/", filepath.Dir(p)); err == nil {
				pfd, err = unix.Openat(dfd, filepath.Base(p), unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
				unix.Close(dfd)
			}
		default:
			pfd, err = unix.Open(p, unix.O_PATH|unix.O_CLOEXEC|flags, 0)
		}
		if err != nil {
			return fmt.Errorf("landlock rule for %s: %w", p, err)
		}
		defer unix.Close(pfd)
		var st unix.Stat_t
		if err := unix.Fstat(pfd, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			// Rights that only make sense on folders are refused on files.
			access &= unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
				unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
		}
		rule := unix.LandlockPathBeneathAttr{Allowed_access: access & handled, Parent_fd: int32(pfd)}
		if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH,
			uintptr(unsafe.Pointer(&rule)), 0, 0, 0); e != 0 {
			return fmt.Errorf("landlock rule for %s: %w", p, e)
		}
		return nil
	}
	for _, p := range g.read {
		if err := add(p, llRead, 0); err != nil {
			return 0, err
		}
	}
	for _, p := range g.write {
		if err := add(p, handled&^unix.LANDLOCK_ACCESS_FS_IOCTL_DEV, 0); err != nil {
			return 0, err
		}
	}
	for _, p := range g.entries {
		// A link put there since the walk gets a rule of its own (file
		// rights on the link), not its target's.
		if err := add(p, handled&^unix.LANDLOCK_ACCESS_FS_IOCTL_DEV, unix.O_NOFOLLOW); err != nil && !errors.Is(err, unix.ENOENT) {
			return 0, err
		}
	}
	for _, p := range g.dev {
		if err := add(p, unix.LANDLOCK_ACCESS_FS_READ_FILE|unix.LANDLOCK_ACCESS_FS_WRITE_FILE|unix.LANDLOCK_ACCESS_FS_TRUNCATE, 0); err != nil {
			return 0, err
		}
	}
	if v >= 4 && proxyPort > 0 {
		rule := struct {
			Allowed uint64
			Port    uint64
		}{unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, uint64(proxyPort)}
		// struct landlock_net_port_attr is packed: 16 bytes.
		if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, 2, /* LANDLOCK_RULE_NET_PORT */
			uintptr(unsafe.Pointer(&rule)), 0, 0, 0); e != 0 {
			return 0, fmt.Errorf("landlock port rule: %w", e)
		}
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return 0, fmt.Errorf("landlock_restrict_self: %w", e)
	}
	return v, nil
}
