//go:build linux

package sandbox

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCPUByCgroup: a command that needs 2.5 s of CPU, under a CPU limit of
// 1 s. With Limits.CPUByCgroup, where the cgroup's quota of one core holds
// it is the only bound: no RLIMIT_CPU is set and the command ends by
// itself. Where no cpu cgroup holds, RLIMIT_CPU still bounds it. Without
// CPUByCgroup, RLIMIT_CPU kills it at 1 s either way.
func TestCPUByCgroup(t *testing.T) {
	e := newEnv(t)
	burn := []string{"python3", "-c", "import time\nwhile time.process_time() < 2.5: pass\nprint('done')"}
	limits := Limits{CPU: time.Second, Wall: 2 * time.Minute}
	o := e.run(t, Spec{Argv: burn, Limits: limits})
	if o.ExitCode == 0 || !slices.Contains(o.LimitsHit, "cpu") || !slices.Contains(o.Protections.Rlimits, "cpu=1s") {
		t.Fatalf("without CPUByCgroup: exit %d, hit %v, rlimits %v, stdout %q", o.ExitCode, o.LimitsHit, o.Protections.Rlimits, o.Stdout)
	}
	limits.CPUByCgroup = true
	o = e.run(t, Spec{Argv: burn, Limits: limits})
	cpuRlimit := slices.ContainsFunc(o.Protections.Rlimits, func(r string) bool { return strings.HasPrefix(r, "cpu=") })
	if slices.Contains(o.Protections.CgroupLimits, "cpu") {
		if o.ExitCode != 0 || string(o.Stdout) != "done\n" || cpuRlimit || len(o.LimitsHit) != 0 {
			t.Fatalf("with the cgroup's cpu quota: exit %d, hit %v, rlimits %v, stdout %q", o.ExitCode, o.LimitsHit, o.Protections.Rlimits, o.Stdout)
		}
		// One core: the CPU it took is no more than its wall time (and a
		// couple of periods of the quota).
		if o.Usage.CPU > o.Usage.Wall+200*time.Millisecond {
			t.Fatalf("CPU %v in %v of wall time, above one core", o.Usage.CPU, o.Usage.Wall)
		}
	} else if o.ExitCode == 0 || !cpuRlimit {
		t.Fatalf("no cpu cgroup (%s, %v): RLIMIT_CPU must still hold: exit %d, rlimits %v", o.Protections.Cgroup, o.Protections.CgroupLimits, o.ExitCode, o.Protections.Rlimits)
	}
	t.Logf("cgroup %s %v, usage %+v", o.Protections.Cgroup, o.Protections.CgroupLimits, o.Usage)
}

// TestCPUQuotaBurst: a command's cpu group has the quota of one core (one
// period's CPU per period) and a burst of one period's quota (cpuBurst),
// read on the host while it runs; and three busy processes get no more
// than one core over the run, plus that burst and a period: the kernel's
// own count of the group's CPU (cpuacct) against the wall time, which
// load on the machine can only make smaller.
func TestCPUQuotaBurst(t *testing.T) {
	e := newEnv(t)
	var quota, period, burst int64
	var readErr error
	o, err := e.native.Run(t.Context(), Spec{Root: e.ws, Shell: "for i in 1 2 3; do (while :; do :; done) & done; wait",
		Limits: Limits{CPUByCgroup: true, Wall: 2 * time.Second},
		Started: func(p *os.Process) {
			quota, period, burst, readErr = cpuGroupOf(p.Pid)
		}})
	must(t, err)
	must(t, readErr)
	if !slices.Contains(o.Protections.CgroupLimits, "cpu") {
		t.Fatalf("no cpu limit held: %s %v", o.Protections.Cgroup, o.Protections.CgroupLimits)
	}
	if period <= 0 || quota != period || burst != quota {
		t.Fatalf("cpu group: quota %d, period %d, burst %d; want a quota of one period and a burst of the quota", quota, period, burst)
	}
	if o.Killed != "timeout" || o.Usage.CPU <= 0 {
		t.Fatalf("outcome %+v", o)
	}
	if max := o.Usage.Wall + time.Duration(quota+burst)*time.Microsecond; o.Usage.CPU > max {
		t.Fatalf("three busy processes took %v of CPU in %v (at most %v: one core, a period and the burst)", o.Usage.CPU, o.Usage.Wall, max)
	}
	t.Logf("usage %+v", o.Usage)
}

// cpuGroupOf reads the cpu quota, period and burst (µs) of the cpu group
// of process pid: cgroup v1's cpu.cfs_* files, or v2's cpu.max and
// cpu.max.burst.
func cpuGroupOf(pid int) (quota, period, burst int64, err error) {
	text, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	_, mounts, err := layoutNow()
	if err != nil {
		return 0, 0, 0, err
	}
	var v1, v2 string
	for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		switch {
		case len(parts) != 3:
		case slices.Contains(strings.Split(parts[1], ","), "cpu"):
			v1 = filepath.Join(mounts["cpu"], parts[2])
		case parts[0] == "0":
			v2 = filepath.Join(mounts[""], parts[2])
		}
	}
	read := func(dir, name string) int64 {
		v, rerr := readInt(dir, name)
		err = cmp.Or(err, rerr)
		return v
	}
	if v1 != "" {
		return read(v1, "cpu.cfs_quota_us"), read(v1, "cpu.cfs_period_us"), read(v1, "cpu.cfs_burst_us"), err
	}
	max, err := os.ReadFile(filepath.Join(v2, "cpu.max"))
	if err != nil {
		return 0, 0, 0, err
	}
	if _, err := fmt.Sscan(string(max), &quota, &period); err != nil {
		return 0, 0, 0, fmt.Errorf("cpu.max %q: %w", max, err)
	}
	return quota, period, read(v2, "cpu.max.burst"), err
}
