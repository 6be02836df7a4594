//go:build linux

package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestLevelFull: the native sandbox here gives every layer, measured.
func TestLevelFull(t *testing.T) {
	n := &Native{}
	defer n.Close()
	l := Probe(context.Background(), NewChain(n, &Bwrap{}))
	if l.Level != LevelFull || l.Backend != "native" {
		t.Fatalf("level %+v, want full by native", l)
	}
}

// TestClassify: the level follows the layers that held.
func TestClassify(t *testing.T) {
	all := []string{"user", "mount", "pid", "net", "ipc", "uts", "cgroup"}
	full := Protections{Namespaces: all, Landlock: "v6", Seccomp: true, NoNewPrivs: true, Cgroup: "v2"}
	cases := []struct {
		name    string
		change  func(p *Protections)
		level   string
		missing string
	}{
		{"full", func(*Protections) {}, LevelFull, ""},
		{"no cgroup: rlimits hold", func(p *Protections) { p.Cgroup = "none: read-only" }, LevelFull, "cgroup"},
		{"no user namespace", func(p *Protections) { p.Namespaces = all[1:] }, LevelReduced, "user namespace"},
		{"no namespaces", func(p *Protections) { p.Namespaces = nil }, LevelReduced, "mount namespace"},
		{"gVisor: no Landlock", func(p *Protections) { p.Landlock = "unavailable: ENOSYS" }, LevelReduced, "landlock"},
		{"no seccomp", func(p *Protections) { p.Seccomp = false }, LevelNone, "seccomp"},
		{"no no_new_privs", func(p *Protections) { p.NoNewPrivs = false }, LevelNone, "no_new_privs"},
	}
	for _, c := range cases {
		p := full
		c.change(&p)
		l := Classify(p)
		if l.Level != c.level || c.missing == "" && len(l.Missing) > 0 || c.missing != "" && !slices.Contains(l.Missing, c.missing) {
			t.Errorf("%s: %+v, want %s missing %q", c.name, l, c.level, c.missing)
		}
		if !l.Meets(LevelNone) || l.Meets(LevelFull) != (c.level == LevelFull) || l.Meets(LevelReduced) != (c.level != LevelNone) {
			t.Errorf("%s: Meets wrong for %s", c.name, l.Level)
		}
	}
}

// inUserNamespace runs this test again as root of a new user namespace
// (unshare flags), after the shell commands setup, and fails with its
// output unless it passes.
func inUserNamespace(t *testing.T, flags, setup string) {
	t.Helper()
	cmd := exec.Command("unshare", flags, "sh", "-ec",
		setup+`; exec "$0" -test.run="^$1\$" -test.count=1 -test.v`, os.Args[0], t.Name())
	cmd.Env = append(os.Environ(), "TOOLGATE_TEST_INNER="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("inner run:\n%s", out)
}

// TestLevelWithoutUserNamespaces: where no user namespace may be made,
// the native sandbox cannot start and bubblewrap runs the command in the
// caller's own user namespace: the level is reduced, user is not among
// the namespaces reported (the bug of issue 29: it was), require full
// refuses the command naming what is missing, require reduced runs it.
func TestLevelWithoutUserNamespaces(t *testing.T) {
	if os.Getenv("TOOLGATE_TEST_INNER") != t.Name() {
		inUserNamespace(t, "-Ur", "echo 0 > /proc/sys/user/max_user_namespaces")
		return
	}
	ctx := context.Background()
	chain := NewChain(&Native{}, &Bwrap{})
	full := &Leveled{Backend: chain}
	l := full.Level(ctx)
	if l.Level != LevelReduced || l.Backend != "bwrap" || !slices.Contains(l.Missing, "user namespace") {
		t.Fatalf("level %+v, want reduced by bwrap, user namespace missing", l)
	}
	ws := t.TempDir()
	_, err := full.Run(ctx, Spec{Shell: "echo ran", Root: ws})
	if !errors.Is(err, ErrBelowRequired) || !strings.Contains(err.Error(), "user namespace") || !strings.Contains(err.Error(), "max_user_namespaces") {
		t.Fatalf("require full: %v, want ErrBelowRequired naming the user namespace and its setting", err)
	}
	reduced := &Leveled{Backend: chain, Require: LevelReduced}
	o, err := reduced.Run(ctx, Spec{Shell: "readlink /proc/self/ns/user", Root: ws})
	if err != nil {
		t.Fatal(err)
	}
	own, _ := os.Readlink("/proc/self/ns/user")
	if strings.TrimSpace(string(o.Stdout)) != own {
		t.Fatalf("the command's user namespace %q, this process's %q", o.Stdout, own)
	}
	if p := o.Protections; slices.Contains(p.Namespaces, "user") || !slices.Contains(p.Namespaces, "mount") || !slices.Contains(p.Namespaces, "net") {
		t.Fatalf("protections %+v: want mount and net, not user", p)
	}
}

// TestLevelMaskedProc: with /proc partly masked (as a container runtime
// binds /proc/sys read-only over itself), neither the native sandbox nor
// bubblewrap may mount a fresh /proc: no command can run confined (there
// is no sandbox without namespaces yet), the level is none and names the
// chart value that unmasks /proc, and even require reduced refuses.
// Before, bubblewrap's own failure ("bwrap: Can't mount proc…", exit 1)
// came back as the command's result, with protections that never held.
func TestLevelMaskedProc(t *testing.T) {
	if os.Getenv("TOOLGATE_TEST_INNER") != t.Name() {
		inUserNamespace(t, "-Urm", "mount --bind /proc/sys /proc/sys; mount -o remount,bind,ro /proc/sys")
		return
	}
	ctx := context.Background()
	g := &Leveled{Backend: NewChain(&Native{}, &Bwrap{}), Require: LevelReduced}
	l := g.Level(ctx)
	if l.Level != LevelNone || len(l.Missing) != 1 || !strings.Contains(l.Missing[0], "mounting /proc") ||
		!strings.Contains(l.Missing[0], "bwrap could not set up the sandbox") || len(l.Remedies) != 1 || !strings.Contains(l.Remedies[0], "procMount: Unmasked") {
		t.Fatalf("level %+v, want none: /proc, and the chart value", l)
	}
	if _, err := g.Run(ctx, Spec{Shell: "echo ran", Root: t.TempDir()}); !errors.Is(err, ErrBelowRequired) {
		t.Fatalf("require reduced: %v, want ErrBelowRequired", err)
	}
}

// TestGateBeforeExec: where Landlock answers ENOSYS (as under gVisor;
// here a seccomp filter on this test process says so), a command that
// requires full is refused by the native backend once its sandbox is set
// up and measured, before it execs: it never runs (its file is never
// made), and the error says the level and what is missing. At require
// reduced it runs. Start is gated the same way, and the started process
// says what held.
func TestGateBeforeExec(t *testing.T) {
	if os.Getenv("TOOLGATE_TEST_INNER") != t.Name() {
		cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "TOOLGATE_TEST_INNER="+t.Name())
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	withoutLandlock(t)
	ctx := context.Background()
	n := &Native{}
	defer n.Close()
	ws := t.TempDir()
	_, err := n.Run(ctx, Spec{Shell: "touch ran", Root: ws, Require: LevelFull})
	l, ok := LevelOf(err)
	if !errors.Is(err, ErrBelowRequired) || !ok || l.Level != LevelReduced || !slices.Contains(l.Missing, "landlock") || !strings.Contains(err.Error(), "landlock") {
		t.Fatalf("require full: %v (level %+v), want ErrBelowRequired at reduced, landlock missing", err, l)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("the command ran below the level it required")
	}
	o, err := n.Run(ctx, Spec{Shell: "touch ran", Root: ws, Require: LevelReduced})
	if err != nil || o.ExitCode != 0 || !strings.HasPrefix(o.Protections.Landlock, "unavailable") {
		t.Fatalf("require reduced: %v, %+v", err, o)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err != nil {
		t.Fatalf("require reduced: the command did not run: %v", err)
	}
	if _, err := n.Start(ctx, Spec{Shell: "touch started; exec sleep 60", Root: ws, Require: LevelFull}, nil); !errors.Is(err, ErrBelowRequired) {
		t.Fatalf("Start, require full: %v, want ErrBelowRequired", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "started")); err == nil {
		t.Fatal("Start ran the command below the level it required")
	}
	p, err := n.Start(ctx, Spec{Argv: []string{"sleep", "60"}, Root: ws, Require: LevelReduced}, nil)
	if err != nil {
		t.Fatalf("Start, require reduced: %v", err)
	}
	defer p.Wait()
	defer p.Kill()
	if lp := Classify(p.Protections); lp.Level != LevelReduced || !slices.Contains(lp.Missing, "landlock") {
		t.Fatalf("the started process's protections %+v, want reduced without landlock", p.Protections)
	}
}

// withoutLandlock makes every thread of this process, and all it starts,
// answer landlock_create_ruleset with ENOSYS, as gVisor does.
func withoutLandlock(t *testing.T) {
	t.Helper()
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_LANDLOCK_CREATE_RULESET},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		t.Fatalf("seccomp: %v", e)
	}
}
