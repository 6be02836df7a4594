package helm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"

	"github.com/toolgate/toolgate/sandbox"
)

// profileFilter turns the chart's OCI seccomp profile into a filter for
// this process, as a container runtime does: the names this architecture
// lacks are left out (runc ignores them too). Without the group the chart
// adds (its comment starts "toolgate:") and with clone allowed without
// namespace flags, it is the runtime's default.
func profileFilter(t *testing.T, withNamespaceCalls bool) seccomp.Filter {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("toolgate", "files", "seccomp", "toolgate-userns.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		DefaultAction string
		Syscalls      []struct {
			Names   []string
			Action  string
			Comment string
			Args    []struct {
				Index int
				Value uint64
				Op    string
			}
		}
	}
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	info, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" {
		t.Fatalf("defaultAction %s", p.DefaultAction)
	}
	policy := seccomp.Policy{DefaultAction: seccomp.ActionErrno}
	for _, g := range p.Syscalls {
		if g.Action != "SCMP_ACT_ALLOW" {
			t.Fatalf("a group with action %s: the test knows only SCMP_ACT_ALLOW", g.Action)
		}
		if strings.HasPrefix(g.Comment, "toolgate:") && !withNamespaceCalls {
			continue
		}
		group := seccomp.SyscallGroup{Action: seccomp.ActionAllow}
		for _, n := range g.Names {
			if _, ok := info.SyscallNames[n]; !ok {
				continue
			}
			if len(g.Args) == 0 {
				group.Names = append(group.Names, n)
				continue
			}
			nc := seccomp.NameWithConditions{Name: n}
			for _, a := range g.Args {
				op := map[string]seccomp.Operation{"SCMP_CMP_EQ": seccomp.Equal, "SCMP_CMP_NE": seccomp.NotEqual}[a.Op]
				if op == "" {
					t.Fatalf("%s: operator %s", n, a.Op)
				}
				nc.Conditions = append(nc.Conditions, seccomp.Condition{Argument: uint32(a.Index), Operation: op, Value: a.Value})
			}
			group.NamesWithCondtions = append(group.NamesWithCondtions, nc)
		}
		policy.Syscalls = append(policy.Syscalls, group)
	}
	if !withNamespaceCalls {
		// The runtime's default allows clone without namespace flags
		// (CLONE_NEWNS, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWCGROUP),
		// and answers clone3 ENOSYS, so that the C library falls back to
		// clone (a cgo program's threads: the race detector's).
		policy.Syscalls = append(policy.Syscalls, seccomp.SyscallGroup{Action: seccomp.ActionAllow,
			NamesWithCondtions: []seccomp.NameWithConditions{{Name: "clone",
				Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsNotSet, Value: 0x7e020000}}}}},
			seccomp.SyscallGroup{Action: seccomp.ActionErrno | seccomp.Action(syscall.ENOSYS), Names: []string{"clone3"}})
	}
	return seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: policy}
}

// TestUsernsSeccompProfile: under the chart's userns seccomp profile,
// loaded as a runtime loads it, toolgate's sandbox reaches the full level
// (every namespace, Landlock, seccomp); under the same profile without the
// namespace calls it adds (the runtime's default) it cannot start and the
// level is below full. (AppArmor and the pod's user namespace are the
// node's: not here.)
func TestUsernsSeccompProfile(t *testing.T) {
	if which := os.Getenv("TOOLGATE_TEST_PROFILE"); which != "" {
		if err := seccomp.LoadFilter(profileFilter(t, which == "profile")); err != nil {
			t.Fatal(err)
		}
		l := sandbox.Probe(context.Background(), sandbox.NewChain(&sandbox.Native{}, &sandbox.Bwrap{}))
		b, _ := json.Marshal(l)
		fmt.Printf("LEVEL %s\n", b)
		return
	}
	level := func(which string) sandbox.Level {
		cmd := exec.Command(os.Args[0], "-test.run=^TestUsernsSeccompProfile$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "TOOLGATE_TEST_PROFILE="+which)
		out, err := cmd.CombinedOutput()
		i := bytes.Index(out, []byte("LEVEL "))
		if err != nil || i < 0 {
			t.Fatalf("under the %s: %v\n%s", which, err, out)
		}
		var l sandbox.Level
		line, _, _ := bytes.Cut(out[i+len("LEVEL "):], []byte("\n"))
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		return l
	}
	if l := level("profile"); l.Level != sandbox.LevelFull || l.Backend != "native" {
		t.Errorf("under toolgate-userns.json: %+v, want full by native", l)
	}
	l := level("default")
	if why := strings.Join(append(l.Skipped, l.Missing...), "; "); l.Level == sandbox.LevelFull || !strings.Contains(why, "native: ") || !strings.Contains(why, "operation not permitted") {
		t.Errorf("under the runtime's default (the profile without its namespace calls): %+v, want below full, native refused", l)
	}
}
