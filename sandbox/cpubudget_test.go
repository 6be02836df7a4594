//go:build linux

package sandbox

import (
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
