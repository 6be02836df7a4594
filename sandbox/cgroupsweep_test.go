//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testGroupParent is the folder where this process's sandboxes make their
// groups, in the pids hierarchy (v1) or the unified one (v2).
func testGroupParent(t *testing.T) (parent string, own, mounts map[string]string) {
	t.Helper()
	own, mounts, err := layoutNow()
	must(t, err)
	for _, c := range []string{"pids", ""} {
		if mp, ok := mounts[c]; ok {
			if p, ok := own[c]; ok {
				return filepath.Join(mp, p), own, mounts
			}
		}
	}
	t.Fatalf("no pids or unified cgroup hierarchy: own %v, mounts %v", own, mounts)
	return "", nil, nil
}

// noPid is a pid no process can have: above the kernel's pid_max.
func noPid(t *testing.T) int {
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	must(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	must(t, err)
	return n + 1
}

// occupy starts a process in the group dir and ends it when the test does.
func occupy(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	must(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0))
}

// makeGroup makes the group dir, removed when the test ends (once any
// process put in it is gone).
func makeGroup(t *testing.T, dir string) {
	t.Helper()
	must(t, os.Mkdir(dir, 0o755))
	t.Cleanup(func() {
		for range 50 {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// TestSweepDeadGroups: a group toolgate-PID-N whose process is gone, empty
// and over a minute old, is removed; any other name, a live pid, a young
// group, a group with a process in it, stays.
func TestSweepDeadGroups(t *testing.T) {
	parent, own, mounts := testGroupParent(t)
	dead := noPid(t)
	old := time.Now().Add(-2 * time.Hour)
	cases := []struct {
		name     string
		old      bool
		occupied bool
		removed  bool
	}{
		{fmt.Sprintf("toolgate-%d-1", dead), true, false, true},
		{fmt.Sprintf("toolgate-%d-987654321", dead), true, false, true},
		{fmt.Sprintf("toolgate-%d-2", dead), false, false, false}, // young
		{fmt.Sprintf("toolgate-%d-3", dead), true, true, false},   // a process in it
		{"toolgate-1-424242", true, false, false},                 // pid 1 lives
		{fmt.Sprintf("toolgate-%d-424242", os.Getpid()), true, false, false},
		{fmt.Sprintf("toolgate-%d", dead), true, false, false},
		{fmt.Sprintf("toolgate-0%d-1", dead), true, false, false},
		{fmt.Sprintf("toolgate-%d-01", dead), true, false, false},
		{fmt.Sprintf("toolgate-%d-1x", dead), true, false, false},
		{fmt.Sprintf("toolgate-%d--1", dead), true, false, false},
		{fmt.Sprintf("toolgate-+%d-1", dead), true, false, false},
		{fmt.Sprintf("toolgate-%d-1-1", dead), true, false, false},
		{fmt.Sprintf("xtoolgate-%d-1", dead), true, false, false},
		{fmt.Sprintf("Toolgate-%d-1", dead), true, false, false},
		{"toolgate--1", true, false, false},
	}
	for _, c := range cases {
		dir := filepath.Join(parent, c.name)
		makeGroup(t, dir)
		if c.occupied {
			occupy(t, dir)
		}
		if c.old {
			must(t, os.Chtimes(dir, old, old))
		}
	}
	sweepDeadGroups(own, mounts)
	for _, c := range cases {
		_, err := os.Stat(filepath.Join(parent, c.name))
		if removed := os.IsNotExist(err); removed != c.removed {
			t.Errorf("%s (old %v, occupied %v): removed %v, want %v", c.name, c.old, c.occupied, removed, c.removed)
		}
	}
}

// TestMkgroupReplacesLeftover: a folder of this process's name made before
// it started (left by an earlier process of the same pid) is replaced when
// empty; with a process in it, or made since this process started (another
// pid namespace's), making the group fails and the folder stays as it was.
func TestMkgroupReplacesLeftover(t *testing.T) {
	parent, _, _ := testGroupParent(t)
	old := time.Now().Add(-2 * time.Hour)
	for _, c := range []struct {
		name          string
		old, occupied bool
		replaced      bool
	}{
		{"leftover", true, false, true},
		{"leftover in use", true, true, false},
		{"made since this process started", false, false, false},
	} {
		dir := filepath.Join(parent, fmt.Sprintf("toolgate-%d-%d", os.Getpid(), 900000+cgroupSeq.Add(1)))
		makeGroup(t, dir)
		if c.occupied {
			occupy(t, dir)
		}
		if c.old {
			must(t, os.Chtimes(dir, old, old))
		}
		err := mkgroup(dir)
		if c.replaced != (err == nil) {
			t.Errorf("%s: mkgroup = %v", c.name, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
			t.Fatalf("%s: the group is not there after mkgroup: %v", c.name, err)
		}
		if info, err := os.Stat(dir); err != nil || c.old && c.replaced == info.ModTime().Equal(old) {
			t.Errorf("%s: the folder was replaced: %v, want %v", c.name, !c.replaced, c.replaced)
		}
	}
}
