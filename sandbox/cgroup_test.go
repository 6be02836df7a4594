//go:build linux

package sandbox

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCgroupLayoutsCached: the cached layout is the one read afresh; the
// mount table is read again after a mount, once; a stale cache reads again.
func TestCgroupLayoutsCached(t *testing.T) {
	var c cgroupLayouts
	defer c.close()
	wantOwn, wantMounts, err := layoutNow()
	must(t, err)
	for i := range 3 {
		own, mounts, err := c.get()
		must(t, err)
		if !maps.Equal(own, wantOwn) || !maps.Equal(mounts, wantMounts) {
			t.Fatalf("get %d: %v %v, read afresh: %v %v", i, own, mounts, wantOwn, wantMounts)
		}
	}
	watch := c.watch
	if mountsChanged(watch) {
		t.Fatal("the mount table changed with no mount")
	}
	if os.Getuid() != 0 {
		t.Fatalf("this test mounts a tmpfs: run it as root (uid %d)", os.Getuid())
	}
	dir := t.TempDir()
	must(t, unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"))
	unmounted := false
	unmount := func() {
		if !unmounted {
			must(t, unix.Unmount(dir, 0))
			unmounted = true
		}
	}
	defer unmount()
	_, _, err = c.get()
	must(t, err)
	if c.watch == watch {
		t.Fatal("a mount did not make get read the mount table again")
	}
	watch = c.watch
	_, _, err = c.get()
	must(t, err)
	if c.watch != watch {
		t.Fatal("the mount table was read again with no change since")
	}
	unmount()
	if !mountsChanged(c.watch) {
		t.Fatal("an unmount went unseen")
	}
	c.stale()
	own, mounts, err := c.get()
	must(t, err)
	if c.watch == nil || !maps.Equal(own, wantOwn) || !maps.Equal(mounts, wantMounts) {
		t.Fatalf("after stale: %v %v", own, mounts)
	}
}

// TestControlFiles: writeFile and readSmall as os.WriteFile and os.ReadFile
// would do, for small and larger files, and errors that name the path.
func TestControlFiles(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 1023, 1024, 1025, 5000, 70000} {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte('a' + i%26)
		}
		must(t, os.WriteFile(dir+"/f", b, 0o644))
		got, err := readSmall(dir + "/f")
		if err != nil || string(got) != string(b) {
			t.Fatalf("size %d: read %d bytes, %v", size, len(got), err)
		}
	}
	must(t, writeFile(dir, "f", 12345))
	if v, err := readInt(dir, "f"); err != nil || v != 12345 {
		t.Fatalf("readInt = %d, %.80v", v, err)
	}
	must(t, os.WriteFile(dir+"/k", []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"), 0o644))
	if v := keyed(dir, "k", "oom_kill"); v != 3 {
		t.Fatalf("keyed oom_kill = %d", v)
	}
	for _, err := range []error{writeFile(dir, "missing", 1), func() error { _, err := readSmall(dir + "/missing"); return err }()} {
		var pe *os.PathError
		if err == nil || !asPathError(err, &pe) || pe.Path != dir+"/missing" {
			t.Fatalf("missing file: %v", err)
		}
	}
}

func asPathError(err error, pe **os.PathError) bool {
	p, ok := err.(*os.PathError)
	*pe = p
	return ok
}

// TestBornInItsGroups: a helper forked here is born in its groups (the
// forking thread enters them, then leaves), so the command sees its own
// groups as the root of its cgroup namespace, not their names under this
// process's; on the host it is in them; and no thread of this process is
// left in them.
func TestBornInItsGroups(t *testing.T) {
	before := threadGroups(t)
	var host []byte
	var hostErr error
	n := &Native{}
	defer n.Close()
	ws := t.TempDir()
	// The command waits until its groups were read on the host.
	o, err := n.Run(t.Context(), Spec{Shell: "cat /proc/self/cgroup; while [ ! -e " + ws + "/read ]; do sleep 0.01; done", Root: ws,
		Started: func(p *os.Process) {
			host, hostErr = os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", p.Pid))
			os.WriteFile(filepath.Join(ws, "read"), nil, 0o600)
		}})
	must(t, err)
	must(t, hostErr)
	if o.ExitCode != 0 || !slices.Contains(o.Protections.CgroupLimits, "memory") {
		t.Fatalf("outcome %+v", o)
	}
	own, _, err := layoutNow()
	must(t, err)
	name := fmt.Sprintf("toolgate-%d-", os.Getpid())
	for _, c := range []string{"memory", "pids", "cpu"} {
		if _, ok := own[c]; !ok {
			t.Fatalf("no v1 %s group here: %v", c, own)
		}
		if !hasGroup(string(host), c, func(path string) bool { return strings.Contains(path, "/"+name) }) {
			t.Errorf("the helper is not in its %s group: %s", c, host)
		}
		if !hasGroup(string(o.Stdout), c, func(path string) bool { return path == "/" }) {
			t.Errorf("the command does not see its %s group as its namespace's root: %s", c, o.Stdout)
		}
	}
	if after := threadGroups(t); len(before) != 1 || !maps.Equal(after, before) {
		t.Errorf("this process's threads are in groups %v, were in %v", after, before)
	}
}

// hasGroup reports whether a /proc/PID/cgroup text puts controller c in a
// group whose path is ok.
func hasGroup(text, c string, ok func(string) bool) bool {
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), c) && ok(parts[2]) {
			return true
		}
	}
	return false
}

// threadGroups returns the distinct /proc/PID/cgroup texts of this
// process's threads.
func threadGroups(t *testing.T) map[string]bool {
	tasks, err := filepath.Glob("/proc/self/task/*/cgroup")
	must(t, err)
	out := map[string]bool{}
	for _, f := range tasks {
		if b, err := os.ReadFile(f); err == nil {
			out[string(b)] = true
		}
	}
	return out
}

// TestForksSideBySideStayOwn: helpers forked side by side (as a gateway
// starting its upstreams at once does), one from the thread group leader
// and one from another thread, each held in its fork while the others
// make their groups: no box's group is made inside another's, and no
// thread of this process is left in one.
func TestForksSideBySideStayOwn(t *testing.T) {
	before := threadGroups(t)
	leaderText, err := os.ReadFile("/proc/self/cgroup")
	must(t, err)
	own := parseGroups(leaderText)
	exe, err := os.Executable()
	must(t, err)
	var layout cgroupLayouts
	defer layout.close()
	limits := Limits{Memory: 256 << 20, Processes: 64}
	fork := func(files []*os.File) (*os.Process, func(), error) {
		p, err := os.StartProcess(exe, helperArgs, &os.ProcAttr{Env: helperEnv, Files: files, Sys: helperAttr(0)})
		return p, nil, err
	}
	type result struct {
		l   *launched
		err error
	}
	results := make(chan result, 8)
	done := make(chan struct{})
	// launch forks a helper on a locked thread (leader: the thread group
	// leader's), held in its fork until release is closed when given; the
	// thread stays locked until done (the helper dies with it).
	launch := func(leader bool, held, release chan struct{}) {
		go func() {
			var keep []chan struct{}
			defer func() {
				for _, k := range keep {
					close(k)
				}
			}()
			runtime.LockOSThread()
			for leader && unix.Gettid() != os.Getpid() {
				// Keep this thread busy and try another.
				k := make(chan struct{})
				keep = append(keep, k)
				go func() { runtime.LockOSThread(); <-k }()
				if len(keep) > 200 {
					// The scheduler (a loaded machine) kept the leader from
					// this goroutine: fork from another thread, which the
					// checks below hold to the same.
					t.Log("no goroutine got onto the thread group leader; forking from another thread")
					break
				}
				runtime.UnlockOSThread()
				runtime.Gosched()
				runtime.LockOSThread()
			}
			start := fork
			if held != nil {
				start = func(files []*os.File) (*os.Process, func(), error) {
					close(held)
					<-release
					return fork(files)
				}
			}
			l, err := launchBy(start, &layout, limits, false, true)
			results <- result{l, err}
			<-done
			if l != nil {
				l.abandon()
			}
			runtime.UnlockOSThread()
		}()
	}
	release := make(chan struct{})
	held1, held2 := make(chan struct{}), make(chan struct{})
	// waitHeld waits for a launch to reach its fork, or fails with what
	// ended it before.
	waitHeld := func(held chan struct{}) {
		select {
		case <-held:
		case r := <-results:
			t.Fatalf("a launch ended before its fork: %v", r.err)
		}
	}
	launch(true, held1, release)
	waitHeld(held1)
	launch(false, held2, release)
	waitHeld(held2)
	for range 3 {
		launch(false, nil, nil)
	}
	var ls []*launched
	for range 3 {
		r := <-results
		must(t, r.err)
		ls = append(ls, r.l)
	}
	close(release)
	for range 2 {
		r := <-results
		must(t, r.err)
		ls = append(ls, r.l)
	}
	mounts := map[string]string{}
	{
		_, m, err := layoutNow()
		must(t, err)
		mounts = m
	}
	after := threadGroups(t)
	for _, l := range ls {
		cg, _ := l.takeCgroup()
		if cg == nil {
			t.Fatal("a helper has no groups")
		}
		for c, d := range cg.dirs {
			if want := filepath.Join(mounts[c], own[c]); filepath.Dir(d) != want {
				t.Errorf("a %s group was made in %s, not in this process's own %s", c, filepath.Dir(d), want)
			}
		}
	}
	close(done)
	if len(before) != 1 || !maps.Equal(after, before) {
		t.Errorf("this process's threads are in groups %v, were in %v", after, before)
	}
}

// layoutNow is the layout the calling thread reads now.
func layoutNow() (own, mounts map[string]string, err error) {
	b, err := ownGroups()
	if err != nil {
		return nil, nil, err
	}
	return cgroupLayout(b)
}
