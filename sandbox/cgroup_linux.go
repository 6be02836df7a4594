package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// cgroup is the control group (v2) or groups (v1, one per controller) of
// one command, made under the caller's own groups.
type cgroup struct {
	version string            // "v1" or "v2"
	dirs    map[string]string // controller ("memory", "pids", "cpu", "cpuacct"; "" for v2) → folder
	parents map[string]string // v1: controller → the group dirs[c] was made in (the caller's own)
	own     map[string]string // the caller's groups (as /proc/thread-self/cgroup names them) when made
	limits  []string          // the limits set: memory, pids, cpu
	set     Limits            // the values set (by limit)
	v2CPU   bool              // v2: the cpu controller is delegated
	why     string            // v1: the controllers that are missing, and why
}

var cgroupSeq atomic.Int64

// newCgroup makes the groups for one command, without limits yet (see
// limit), so that they can be made while its helper starts, where layout
// says this process's groups are. It returns nil and why when it cannot:
// the command then runs with rlimits only.
func newCgroup(layout *cgroupLayouts) (*cgroup, string) {
	own, mounts, err := layout.get()
	if err != nil {
		return nil, "none: " + err.Error()
	}
	if inOwnGroup(own) {
		// Never a box's group inside another's: the caller's thread is
		// still in one (it could not move back).
		return nil, "none: this thread is in a group of this process's commands"
	}
	name := fmt.Sprintf("toolgate-%d-%d", os.Getpid(), cgroupSeq.Add(1))
	cg, why2 := newCgroupV2(own, mounts, name)
	if cg != nil {
		return cg, "v2"
	}
	cg, why1 := newCgroupV1(own, mounts, name)
	if cg != nil {
		return cg, "v1"
	}
	layout.stale() // read it all again next time: a group may have gone
	return nil, "none: " + why1 + "; " + why2
}

// inOwnGroup reports whether a group of own is, or is below, a group this
// process made for a command (toolgate-PID-N of its own pid).
func inOwnGroup(own map[string]string) bool {
	for _, path := range own {
		for _, elem := range strings.Split(path, "/") {
			if pid, ok := groupPid(elem); ok && pid == os.Getpid() {
				return true
			}
		}
	}
	return false
}

// cgroupLayouts keeps what cgroupLayout read, for the next groups: the
// caller's own groups are read again each time (/proc/thread-self/cgroup,
// one small read: the process may have been moved), the mount table only when
// the kernel says it changed (poll on /proc/self/mountinfo reports any
// mount or unmount since the last poll) or a group could not be made.
// Its zero value is ready to use; close lets its file go.
type cgroupLayouts struct {
	mu          sync.Mutex
	watch       *os.File // /proc/self/mountinfo, opened before the read it watches
	cgroup      []byte   // /proc/thread-self/cgroup as read with own and mounts
	own, mounts map[string]string
}

// get returns own and mounts as cgroupLayout does; they are shared: read
// only.
func (c *cgroupLayouts) get() (own, mounts map[string]string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cg, err := ownGroups()
	if err != nil {
		return nil, nil, err
	}
	if c.watch != nil && bytes.Equal(cg, c.cgroup) && !mountsChanged(c.watch) {
		return c.own, c.mounts, nil
	}
	c.closeLocked()
	// Opened first: a change during the read below is reported next time.
	// Not through os.Open: the runtime's poller would take the event.
	fd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	watch := os.NewFile(uintptr(fd), "/proc/self/mountinfo")
	if own, mounts, err = cgroupLayout(cg); err != nil {
		watch.Close()
		return nil, nil, err
	}
	c.watch, c.cgroup, c.own, c.mounts = watch, cg, own, mounts
	sweepOnce.Do(func() { go sweepDeadGroups(own, mounts) })
	return own, mounts, nil
}

var sweepOnce sync.Once

// sweepDeadGroups removes the groups that toolgate processes no longer
// alive left beside this process's (a process killed, or ended without
// closing its sandbox, cannot remove the groups of its helpers started
// ahead): they are empty, yet a v1 cpu limit walks every group, so they
// slow every command down, and their names may come back with the pid.
// Only a folder named exactly toolgate-PID-N, whose PID is no process
// and which is over a minute old (a process of another pid namespace
// sharing this parent may have just made it), is removed; a group that
// still has processes refuses rmdir and stays. A name of this process's
// own pid left by an earlier process is mkgroup's to replace.
func sweepDeadGroups(own, mounts map[string]string) {
	for c, mp := range mounts {
		path, ok := own[c]
		if !ok {
			continue
		}
		parent := filepath.Join(mp, path)
		entries, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range entries {
			pid, ok := groupPid(e.Name())
			if !ok || !e.IsDir() || pid == os.Getpid() || unix.Kill(pid, 0) != unix.ESRCH {
				continue
			}
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Minute {
				unix.Rmdir(filepath.Join(parent, e.Name()))
			}
		}
	}
}

// groupPid returns PID of a name toolgate-PID-N (both decimal, no sign,
// no leading zero), as newCgroup makes them.
func groupPid(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "toolgate-")
	if !ok {
		return 0, false
	}
	p, n, ok := strings.Cut(rest, "-")
	if !ok || !decimal(p) || !decimal(n) {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

func decimal(s string) bool {
	if s == "" || len(s) > 18 || s[0] == '0' {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// stale makes the next get read the mount table again.
func (c *cgroupLayouts) stale() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked()
}

func (c *cgroupLayouts) close() { c.stale() }

func (c *cgroupLayouts) closeLocked() {
	if c.watch != nil {
		c.watch.Close()
		c.watch = nil
	}
}

// mountsChanged reports whether the mount table changed since f (an open
// /proc/self/mountinfo) was opened or last polled; when unsure, true.
func mountsChanged(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	changed := true
	rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
		n, err := unix.Poll(fds, 0)
		changed = err != nil || n != 0 && fds[0].Revents&(unix.POLLPRI|unix.POLLERR|unix.POLLNVAL) != 0
	})
	return changed
}

// ownGroups reads /proc/thread-self/cgroup: the groups of the calling
// thread. Not /proc/self/cgroup, which names the thread group leader's: a
// locked thread, the leader among them, may be inside a command's groups
// while it forks that command's helper (cgroup.enter), and no other
// goroutine runs on it meanwhile, so the caller's thread is in the
// process's own groups. The goroutine stays on its thread while it reads.
func ownGroups() ([]byte, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return readSmall("/proc/thread-self/cgroup")
}

// parseGroups returns the group per controller (v2 under "") of a
// /proc/PID/cgroup text.
func parseGroups(b []byte) map[string]string {
	own := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			own[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	return own
}

// cgroupLayout returns the group per controller (v2 under "") that groups
// (a /proc/PID/cgroup text) names, and the mount point per controller (v2
// under "").
func cgroupLayout(groups []byte) (own, mounts map[string]string, err error) {
	own, mounts = parseGroups(groups), map[string]string{}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, x := range fields {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || len(fields) < sep+4 || len(fields) < 5 {
			continue
		}
		mp, fstype, opts := unescapeMount(fields[4]), fields[sep+1], fields[sep+3]
		switch fstype {
		case "cgroup2":
			if _, ok := mounts[""]; !ok {
				mounts[""] = mp
			}
		case "cgroup":
			for _, o := range strings.Split(opts, ",") {
				switch o {
				case "memory", "pids", "cpu", "cpuacct":
					if _, ok := mounts[o]; !ok {
						mounts[o] = mp
					}
				}
			}
		}
	}
	return own, mounts, sc.Err()
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func newCgroupV2(own, mounts map[string]string, name string) (*cgroup, string) {
	mp, ok := mounts[""]
	path, ok2 := own[""]
	if !ok || !ok2 {
		return nil, "no cgroup v2 hierarchy"
	}
	parent := filepath.Join(mp, path)
	ctrl, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	if err != nil {
		return nil, "cgroup v2: " + err.Error()
	}
	have := " " + strings.TrimSpace(string(ctrl)) + " "
	if !strings.Contains(have, " memory ") || !strings.Contains(have, " pids ") {
		avail, _ := os.ReadFile(filepath.Join(parent, "cgroup.controllers"))
		if !strings.Contains(" "+strings.TrimSpace(string(avail))+" ", " memory ") {
			return nil, "cgroup v2 has no memory controller here (controllers: " + strings.TrimSpace(string(avail)) + ")"
		}
		return nil, "cgroup v2 controllers are not delegated to " + parent
	}
	dir := filepath.Join(parent, name)
	if err := mkgroup(dir); err != nil {
		return nil, "cgroup v2: " + err.Error()
	}
	return &cgroup{version: "v2", dirs: map[string]string{"": dir}, v2CPU: strings.Contains(have, " cpu ")}, ""
}

func newCgroupV1(own, mounts map[string]string, name string) (*cgroup, string) {
	cg := &cgroup{version: "v1", dirs: map[string]string{}, parents: map[string]string{}, own: own}
	var why []string
	for _, c := range []string{"memory", "pids", "cpu", "cpuacct"} {
		mp, ok := mounts[c]
		path, ok2 := own[c]
		if !ok || !ok2 {
			why = append(why, "no v1 "+c+" controller")
			continue
		}
		dir := filepath.Join(mp, path, name)
		if existing := findDir(cg, dir); existing {
			continue // cpu and cpuacct mounted together
		}
		if err := mkgroup(dir); err != nil {
			why = append(why, fmt.Sprintf("cannot make a v1 %s group (%v)", c, errors.Unwrap(err)))
			continue
		}
		cg.dirs[c], cg.parents[c] = dir, filepath.Join(mp, path)
	}
	cg.why = strings.Join(why, "; ")
	if len(cg.dirs) == 0 {
		return nil, cg.why
	}
	return cg, ""
}

// mkgroup makes the group dir. A folder of that name made before this
// process started was left by an earlier process of the same pid (the name
// has this process's pid and a number it has not used before): empty, it
// is replaced; with processes in it, rmdir refuses and so does mkgroup. A
// younger one is another pid namespace's process of the same pid, sharing
// this parent: left alone (the command runs with rlimits only).
func mkgroup(dir string) error {
	err := os.Mkdir(dir, 0o755)
	if !errors.Is(err, os.ErrExist) {
		return err
	}
	if info, serr := os.Stat(dir); serr != nil || !info.ModTime().Before(processStart) || unix.Rmdir(dir) != nil {
		return err
	}
	return os.Mkdir(dir, 0o755)
}

// processStart is about when this process started: a group made before it
// is no group of this process.
var processStart = time.Now()

// cpuBurst: the cpu quota (one core: one period's worth of CPU per period)
// comes with a burst of one period's quota (cpu.cfs_burst_us, Linux 5.14;
// cgroup v2's cpu.max.burst), written after the quota. CPU a group left
// unused in earlier periods, up to the burst, may be used on top of the
// quota: a start-up (a Node server needs about 1.1 cores for its first
// 200 ms) may use up to two cores for a moment, and a new group starts
// with it (each write refills the group's runtime, up to quota + burst).
// Over any span the group's CPU stays within one core plus one period's
// quota: what it bursts it saved before. Where the kernel has no burst
// the write fails and the quota alone holds, as before.

// limit sets the limits l in the groups; false and why when none could be
// set.
func (cg *cgroup) limit(l Limits) (bool, string) {
	raise := cg.set.Memory != 0 && l.Memory > cg.set.Memory
	cg.limits, cg.set = nil, l
	if cg.version == "v2" {
		dir := cg.dirs[""]
		if writeFile(dir, "memory.max", l.Memory) == nil {
			writeFile(dir, "memory.swap.max", 0)
			cg.limits = append(cg.limits, "memory")
		}
		if writeFile(dir, "pids.max", l.Processes) == nil {
			cg.limits = append(cg.limits, "pids")
		}
		if cg.v2CPU && writeFile(dir, "cpu.max", "100000 100000") == nil {
			cg.limits = append(cg.limits, "cpu")
			writeFile(dir, "cpu.max.burst", 100000) // see cpuBurst
		}
		return true, ""
	}
	if d, ok := cg.dirs["memory"]; ok {
		// memsw (absent without swap accounting) may not be below the
		// limit: written before it to raise a limit, after it to set or
		// lower one.
		if raise {
			writeFile(d, "memory.memsw.limit_in_bytes", l.Memory)
		}
		if writeFile(d, "memory.limit_in_bytes", l.Memory) == nil {
			writeFile(d, "memory.memsw.limit_in_bytes", l.Memory)
			cg.limits = append(cg.limits, "memory")
		}
	}
	if d, ok := cg.dirs["pids"]; ok {
		if writeFile(d, "pids.max", l.Processes) == nil {
			cg.limits = append(cg.limits, "pids")
		}
	}
	if d, ok := cg.dirOf("cpu"); ok {
		// One core: a quota of one period. A new group has the default
		// period (100 ms); reading it costs less than writing it (each
		// write of either walks the kernel's task groups).
		if period, err := readInt(d, "cpu.cfs_period_us"); err == nil && period > 0 && writeFile(d, "cpu.cfs_quota_us", period) == nil {
			cg.limits = append(cg.limits, "cpu")
			writeFile(d, "cpu.cfs_burst_us", period) // see cpuBurst
		}
	}
	if len(cg.limits) == 0 {
		return false, "none: no cgroup limit could be set: " + cg.why
	}
	return true, ""
}

// fits reports whether the groups hold the limits l already.
func (cg *cgroup) fits(l Limits) bool {
	return cg.set.Memory == l.Memory && cg.set.Processes == l.Processes
}

func findDir(cg *cgroup, dir string) bool {
	for _, d := range cg.dirs {
		if d == dir {
			return true
		}
	}
	return false
}

// dirOf returns the folder of controller c (cpu and cpuacct may share one).
func (cg *cgroup) dirOf(c string) (string, bool) {
	if d, ok := cg.dirs[c]; ok {
		return d, true
	}
	if cg.version == "v1" && (c == "cpu" || c == "cpuacct") {
		for _, other := range []string{"cpu", "cpuacct"} {
			if d, ok := cg.dirs[other]; ok {
				if _, err := os.Stat(filepath.Join(d, c+".stat")); err == nil || c == "cpu" && fileExists(d, "cpu.cfs_quota_us") || c == "cpuacct" && fileExists(d, "cpuacct.usage") {
					return d, true
				}
			}
		}
	}
	return "", false
}

func fileExists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// writeFile writes v to the control file dir/name. Control files are
// opened with plain system calls: os.OpenFile would also register each
// with the runtime's poller, two system calls more per file.
func writeFile(dir, name string, v any) error {
	path := dir + "/" + name
	fd, err := openRetry(path, unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if err := writeRetry(fd, []byte(fmt.Sprint(v))); err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// writeRetry writes b to the control file fd in one write.
func writeRetry(fd int, b []byte) error {
	for {
		_, err := unix.Write(fd, b)
		if err != unix.EINTR {
			return err
		}
	}
}

func openRetry(path string, flags int) (int, error) {
	for {
		fd, err := unix.Open(path, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// readSmall reads a small file (a control file, /proc/self/cgroup) with
// plain system calls, as writeFile writes.
func readSmall(path string) ([]byte, error) {
	fd, err := openRetry(path, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 1024)
	for {
		if len(b) == cap(b) {
			if len(b) >= 1<<20 {
				return nil, &os.PathError{Op: "read", Path: path, Err: errors.New("file too large")}
			}
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// enter moves the calling thread, locked to its goroutine, into the
// groups (v1 only), so that a process it forks is born in them: a thread
// that moves itself (tid 0 written to tasks) does not wait for the
// kernel's RCU grace period that moving a process costs (add: 6 to 25 ms
// measured here, against 0.1 ms). It returns the function that moves the
// thread back to the groups it was in, those the groups were made in (a
// thread elsewhere does not enter), or an error, with nothing moved, where
// a control file cannot be opened: every file is opened before the first
// move. Under v2 a thread cannot move alone (outside a threaded subtree):
// the process is added once started; nor does the thread group leader
// (see goLocked).
func (cg *cgroup) enter() (leave func() error, err error) {
	if cg.version != "v1" {
		return nil, errors.New("cgroup v2: a thread does not move alone")
	}
	if unix.Gettid() == os.Getpid() {
		return nil, errors.New("the thread group leader does not move alone")
	}
	b, err := readSmall("/proc/thread-self/cgroup")
	if err != nil {
		return nil, err
	}
	now := parseGroups(b)
	for c := range cg.dirs {
		if now[c] != cg.own[c] {
			return nil, fmt.Errorf("this thread's %s group is %s, not the one its groups were made in", c, now[c])
		}
	}
	var in, out []int
	closeAll := func() {
		for _, fd := range append(in, out...) {
			unix.Close(fd)
		}
	}
	for c, d := range cg.dirs {
		for i, path := range []string{d + "/tasks", cg.parents[c] + "/tasks"} {
			fd, err := openRetry(path, unix.O_WRONLY|unix.O_CLOEXEC)
			if err != nil {
				closeAll()
				return nil, &os.PathError{Op: "open", Path: path, Err: err}
			}
			if i == 0 {
				in = append(in, fd)
			} else {
				out = append(out, fd)
			}
		}
	}
	move := func(fds []int) error {
		var errs []error
		for _, fd := range fds {
			if err := writeRetry(fd, []byte("0")); err != nil {
				errs = append(errs, fmt.Errorf("moving a thread between groups: %w", err))
			}
		}
		return errors.Join(errs...)
	}
	leave = func() error {
		defer closeAll()
		return move(out)
	}
	if err := move(in); err != nil {
		return nil, errors.Join(err, leave())
	}
	return leave, nil
}

// add puts the process pid in the groups.
func (cg *cgroup) add(pid int) error {
	for _, d := range cg.dirs {
		if err := writeFile(d, "cgroup.procs", pid); err != nil {
			return fmt.Errorf("adding the sandbox to %s: %w", d, err)
		}
	}
	return nil
}

// cgroupStats is what the groups counted.
type cgroupStats struct {
	oomKills   int64
	pidsMax    int64
	memoryPeak int64
	cpu        time.Duration
	haveCPU    bool
	haveMemory bool
}

func (cg *cgroup) stats() cgroupStats {
	var s cgroupStats
	if cg.version == "v2" {
		d := cg.dirs[""]
		s.oomKills = keyed(d, "memory.events", "oom_kill")
		s.pidsMax = keyed(d, "pids.events", "max")
		if v, err := readInt(d, "memory.peak"); err == nil {
			s.memoryPeak, s.haveMemory = v, true
		}
		if us := keyed(d, "cpu.stat", "usage_usec"); us > 0 {
			s.cpu, s.haveCPU = time.Duration(us)*time.Microsecond, true
		}
		return s
	}
	if d, ok := cg.dirs["memory"]; ok {
		s.oomKills = keyed(d, "memory.oom_control", "oom_kill")
		if v, err := readInt(d, "memory.max_usage_in_bytes"); err == nil {
			s.memoryPeak, s.haveMemory = v, true
		}
	}
	if d, ok := cg.dirs["pids"]; ok {
		s.pidsMax = keyed(d, "pids.events", "max")
	}
	if d, ok := cg.dirOf("cpuacct"); ok {
		if v, err := readInt(d, "cpuacct.usage"); err == nil {
			s.cpu, s.haveCPU = time.Duration(v), true
		}
	}
	return s
}

func readInt(dir, name string) (int64, error) {
	b, err := readSmall(dir + "/" + name)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// keyed reads "key value" lines and returns the value of key (0 if absent).
func keyed(dir, name, key string) int64 {
	b, err := readSmall(dir + "/" + name)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// remove deletes the groups once their processes are gone. A group whose
// last process is still exiting refuses (EBUSY): on a loaded machine that
// can last past 100 ms, so it tries again, less and less often, for up to
// 5 s in all before it leaves the group behind.
func (cg *cgroup) remove() {
	deadline := time.Now().Add(5 * time.Second)
	for _, d := range cg.dirs {
		for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
			err := unix.Rmdir(d)
			if err == nil || err == unix.ENOENT || time.Now().After(deadline) {
				break
			}
			time.Sleep(wait)
		}
	}
}
