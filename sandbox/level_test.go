//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/net/bpf"
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
		if l.Meets("strict") || l.Meets("Full") {
			t.Errorf("%s: a level nobody knows is met", c.name)
		}
	}
}

// inUserNamespace runs this test again as root of a new user namespace
// (unshare flags), after the shell commands setup, and fails with its
// output unless it passes.
func inUserNamespace(t *testing.T, flags, setup string) {
	t.Helper()
	runInner(t, os.Args[0], "unshare", flags, "sh", "-ec", setup+`; exec "$0" -test.run="^$1\$" -test.count=1 -test.v`)
}

// asPodUser runs this test (or the tests named) again as a restricted pod
// runs its program: user and group 65532, no capability (the bounding set
// too), no_new_privs.
func asPodUser(t *testing.T, tests ...string) {
	t.Helper()
	// The test binary, where that user may run it.
	dir, err := os.MkdirTemp("", "toolgate-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	exe := dir + "/sandbox.test"
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if len(tests) == 0 {
		tests = []string{t.Name()}
	}
	run := "(" + strings.Join(tests, "|") + ")"
	runInner(t, exe, "setpriv", "--reuid=65532", "--regid=65532", "--clear-groups", "--inh-caps=-all",
		"--bounding-set=-all", "--no-new-privs", "sh", "-ec", `exec "$0" -test.run="^$1\$" -test.count=1 -test.v`, run)
}

// runInner runs argv, which runs exe with a -test.run pattern after it
// (run; the test's name when empty), and fails with its output unless
// every test passed there.
func runInner(t *testing.T, exe string, argv ...string) {
	t.Helper()
	run := t.Name()
	if strings.HasPrefix(argv[len(argv)-1], "(") {
		run, argv = argv[len(argv)-1], argv[:len(argv)-1]
	}
	cmd := exec.Command(argv[0], append(argv[1:], exe, run)...)
	cmd.Env = append(os.Environ(), "TOOLGATE_TEST_INNER="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\nPASS\n") || strings.Contains(string(out), "--- FAIL") ||
		!strings.Contains(string(out), "--- PASS: ") {
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
// bubblewrap may mount a fresh /proc (bubblewrap's own failure, "bwrap:
// Can't mount proc…", is not taken for the command's result): the reduced
// sandbox runs the command, the level is reduced, require full refuses
// naming the mount namespace and the chart value that unmasks /proc,
// require reduced runs it with the reduced protections.
func TestLevelMaskedProc(t *testing.T) {
	if os.Getenv("TOOLGATE_TEST_INNER") != t.Name() {
		inUserNamespace(t, "-Urm", "mount --bind /proc/sys /proc/sys; mount -o remount,bind,ro /proc/sys")
		return
	}
	l := checkReducedLevel(t)
	if !slices.ContainsFunc(l.Skipped, func(s string) bool { return strings.Contains(s, "mounting /proc") }) ||
		!slices.ContainsFunc(l.Skipped, func(s string) bool { return strings.Contains(s, "bwrap could not set up the sandbox") }) {
		t.Fatalf("skipped %q, want native and bwrap failing on /proc", l.Skipped)
	}
}

// TestLevelSeccompRefusesNamespaces: as a restricted pod's user (not
// root, no capability, no_new_privs), under a seccomp filter refusing new
// namespaces and mounts (as a container runtime's default profile does),
// the level is reduced, by the reduced sandbox: require full refuses,
// require reduced runs the command with the reduced protections.
func TestLevelSeccompRefusesNamespaces(t *testing.T) {
	if os.Getenv("TOOLGATE_TEST_INNER") != t.Name() {
		asPodUser(t)
		return
	}
	if os.Getuid() != 65532 || !zeroCaps("CapBnd") || !zeroCaps("CapEff") {
		t.Fatalf("uid %d, bounding set %s, effective %s: not run as a restricted pod's user", os.Getuid(), statusField("CapBnd"), statusField("CapEff"))
	}
	// The runtime default's refusals that matter here, on every thread.
	eperm := unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	rules := []rule{{name: "clone3", action: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{"clone", []cond{{0, opBitsAny, nsFlags}}, eperm}}
	for _, n := range []string{"unshare", "setns", "mount", "umount2", "pivot_root", "mount_setattr", "open_tree", "move_mount", "fsopen"} {
		rules = append(rules, rule{name: n, action: eperm})
	}
	insts, err := assemble(rules)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := seccompLoad(raw, unix.SECCOMP_FILTER_FLAG_TSYNC); err != nil {
		t.Fatal(err)
	}
	checkReducedLevel(t)
}

// checkReducedLevel checks, where namespaces cannot be made, that the
// default chain's level is reduced, by the reduced sandbox, that require
// full refuses a command naming what is missing and require reduced runs
// it with the reduced protections; it returns the level.
func checkReducedLevel(t *testing.T) Level {
	t.Helper()
	ctx := context.Background()
	chain := Default()
	full := &Leveled{Backend: chain}
	l := full.Level(ctx)
	if l.Level != LevelReduced || l.Backend != "reduced" || !slices.Contains(l.Missing, "mount namespace") || slices.Contains(l.Missing, "landlock") ||
		!slices.ContainsFunc(l.Remedies, func(s string) bool { return strings.Contains(s, "sandbox.mode=userns") }) {
		t.Fatalf("level %+v, want reduced by the reduced sandbox, the namespaces missing", l)
	}
	ws := t.TempDir()
	_, err := full.Run(ctx, Spec{Shell: "echo ran > ran", Root: ws})
	if !errors.Is(err, ErrBelowRequired) || !strings.Contains(err.Error(), "mount namespace") || !strings.Contains(err.Error(), "sandbox.mode=userns") {
		t.Fatalf("require full: %v, want ErrBelowRequired naming the mount namespace and the chart value", err)
	}
	if _, err := os.Stat(ws + "/ran"); err == nil {
		t.Fatal("require full: the command ran")
	}
	reduced := &Leveled{Backend: chain, Require: LevelReduced}
	o, err := reduced.Run(ctx, Spec{Shell: "echo ran; readlink /proc/self/ns/mnt", Root: ws})
	if err != nil {
		t.Fatal(err)
	}
	own, _ := os.Readlink("/proc/self/ns/mnt")
	p := o.Protections
	if o.Backend != "reduced" || string(o.Stdout) != "ran\n"+own+"\n" || len(p.Namespaces) != 0 || !strings.HasPrefix(p.Landlock, "v") ||
		!p.Seccomp || !p.NoNewPrivs || p.Capabilities != "none" || len(p.Rlimits) == 0 || len(o.Skipped) != 2 {
		t.Fatalf("require reduced: %+v %q, want it run by the reduced sandbox with its protections", o, o.Stdout)
	}
	// The stronger backends were refused for good: each remembers why and
	// is not tried again; the next command's outcome still names them.
	if chain.Backends[0].(*Native).refused.get() == nil || chain.Backends[1].(*Bwrap).refused.get() == nil {
		t.Fatalf("skipped %q, but native's or bwrap's refusal is not remembered", o.Skipped)
	}
	again, err := reduced.Run(ctx, Spec{Shell: "true", Root: ws})
	if err != nil || again.Backend != "reduced" || !slices.Equal(again.Skipped, o.Skipped) {
		t.Fatalf("the next command: %v, backend %q, skipped %q; want reduced, skipping %q", err, again.Backend, again.Skipped, o.Skipped)
	}
	return l
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

// TestGateMissingProgram: a gated command whose program does not exist
// ends as it does ungated (exit 127, the reason on stderr), and a gated
// one that runs gets its exit status: the gate waits for the parent in
// both cases and never hangs or loses the reason.
func TestGateMissingProgram(t *testing.T) {
	n := &Native{}
	defer n.Close()
	ws := t.TempDir()
	o, err := n.Run(context.Background(), Spec{Argv: []string{"no-such-program-here"}, Root: ws, Require: LevelFull})
	if err != nil || o.ExitCode != 127 || !strings.Contains(string(o.Stderr), "no-such-program-here") {
		t.Fatalf("missing program, gated: %v, exit %d, stderr %q", err, o.ExitCode, o.Stderr)
	}
	o, err = n.Run(context.Background(), Spec{Shell: "exit 3", Root: ws, Require: LevelFull})
	if err != nil || o.ExitCode != 3 {
		t.Fatalf("gated command: %v, exit %d", err, o.ExitCode)
	}
	if _, err := n.Start(context.Background(), Spec{Argv: []string{"no-such-program-here"}, Root: ws, Require: LevelFull}, nil); !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("missing program, gated Start: %v, want ErrInvalidSpec", err)
	}
}

// canned is a backend that answers with the protections it is given, or
// is unavailable while fail is set; ran counts the commands it ran.
type canned struct {
	name string
	held Protections
	fail bool
	ran  int
}

func (c *canned) Name() string { return c.name }

func (c *canned) Run(ctx context.Context, spec Spec) (Outcome, error) {
	if c.fail {
		return Outcome{}, fmt.Errorf("%w: %s is out of processes for now", ErrUnavailable, c.name)
	}
	c.ran++
	return Outcome{Backend: c.name, Protections: c.held}, nil
}

// TestLeveledKeepsItsBackend: once the level was measured with a
// backend of a chain, a command never runs with a weaker one after it,
// even where the policy would accept the weaker level: when the stronger
// fails for a moment, the command is refused (to retry), not run with
// less (review S8). Where the stronger never worked, the level was
// measured with the weaker, and commands run there.
func TestLeveledKeepsItsBackend(t *testing.T) {
	all := []string{"user", "mount", "pid", "net", "ipc", "uts", "cgroup"}
	full := Protections{Namespaces: all, Landlock: "v7", Seccomp: true, NoNewPrivs: true}
	reduced := Protections{Landlock: "v7", Seccomp: true, NoNewPrivs: true}
	ctx := context.Background()

	strong, weak := &canned{name: "strong", held: full}, &canned{name: "weak", held: reduced}
	g := &Leveled{Backend: NewChain(strong, weak), Require: LevelReduced}
	if l := g.Level(ctx); l.Level != LevelFull || l.Backend != "strong" {
		t.Fatalf("level %+v, want full by strong", l)
	}
	strong.fail = true
	if _, err := g.Run(ctx, Spec{Shell: "true", Root: t.TempDir()}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "out of processes") {
		t.Fatalf("the strong backend failing: %v, want ErrRefused naming why", err)
	}
	if weak.ran != 0 {
		t.Fatalf("the weaker backend ran %d command(s) after the level was measured with the stronger", weak.ran)
	}
	strong.fail = false
	if o, err := g.Run(ctx, Spec{Shell: "true", Root: t.TempDir()}); err != nil || o.Backend != "strong" {
		t.Fatalf("the strong backend back: %v, %+v", err, o)
	}

	strong, weak = &canned{name: "strong", held: full, fail: true}, &canned{name: "weak", held: reduced}
	g = &Leveled{Backend: NewChain(strong, weak), Require: LevelReduced}
	if o, err := g.Run(ctx, Spec{Shell: "true", Root: t.TempDir()}); err != nil || o.Backend != "weak" {
		t.Fatalf("measured with the weaker backend: %v, %+v, want it run there", err, o)
	}
}

// TestReducedNeedsSignalScoping: without a pid namespace only Landlock ABI
// 6 keeps a command from signalling the server, so the reduced sandbox is
// unavailable below it, saying so, and such protections classify as none
// (measured: this kernel has ABI 7, where it runs).
func TestReducedNeedsSignalScoping(t *testing.T) {
	for v, want := range map[int]string{0: "needs Landlock: no Landlock here", 1: "ABI 6 (Linux 6.12) to keep commands from signalling the server; this kernel has ABI 1",
		5: "ABI 6 (Linux 6.12) to keep commands from signalling the server; this kernel has ABI 5", 6: "", 7: ""} {
		err := reducedABI(v, "no Landlock here")
		if want == "" && err != nil || want != "" && (!errors.Is(err, ErrUnavailable) || !strings.Contains(fmt.Sprint(err), want)) {
			t.Errorf("ABI %d: %v, want %q", v, err, want)
		}
	}
	p := Protections{Landlock: "v5", Seccomp: true, NoNewPrivs: true}
	if l := Classify(p); l.Level != LevelNone || !slices.Contains(l.Missing, "signal scoping") || !strings.Contains(strings.Join(l.Remedies, " "), "6.12") {
		t.Errorf("no namespaces, Landlock v5: %+v, want none missing signal scoping", l)
	}
	for _, p := range []Protections{{Landlock: "v6", Seccomp: true, NoNewPrivs: true}, {Namespaces: []string{"pid"}, Landlock: "unavailable: ENOSYS", Seccomp: true, NoNewPrivs: true}} {
		if l := Classify(p); l.Level != LevelReduced || slices.Contains(l.Missing, "signal scoping") {
			t.Errorf("%+v: %+v, want reduced", p, l)
		}
	}
	o := runReduced(t, Spec{Root: t.TempDir(), Shell: "kill -0 " + strconv.Itoa(os.Getpid())})
	if o.ExitCode == 0 {
		t.Errorf("Landlock %s: the command could signal the server", o.Protections.Landlock)
	}
}
