//go:build linux

package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// runReduced runs spec with the reduced backend and fails the test when it
// could not.
func runReduced(t *testing.T, spec Spec) Outcome {
	t.Helper()
	r := &Reduced{}
	defer r.Close()
	o, err := r.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("reduced %q: %v", spec.Shell, err)
	}
	return o
}

// TestReducedProtections: the reduced backend runs a command in the
// server's namespaces with Landlock, seccomp, no_new_privs, no capability
// and its rlimits, all measured, and that classifies as reduced.
func TestReducedProtections(t *testing.T) {
	o := runReduced(t, Spec{Shell: "grep -E '^(Seccomp|NoNewPrivs|CapEff|CapPrm):' /proc/self/status; readlink /proc/self/ns/mnt", Root: t.TempDir()})
	own, _ := os.Readlink("/proc/self/ns/mnt")
	out := string(o.Stdout)
	for _, want := range []string{"Seccomp:\t2", "NoNewPrivs:\t1", "CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", own} {
		if !strings.Contains(out, want) {
			t.Errorf("the command sees %q, want %q in it", out, want)
		}
	}
	p := o.Protections
	if o.Backend != "reduced" || o.ExitCode != 0 || len(p.Namespaces) != 0 || !strings.HasPrefix(p.Landlock, "v") || !p.Seccomp ||
		!p.NoNewPrivs || p.Capabilities != "none" || !slices.Contains(p.Rlimits, "cpu=60s") || p.Network != "none" {
		t.Fatalf("outcome %+v", o)
	}
	if l := Classify(p); l.Level != LevelReduced || !slices.Contains(l.Missing, "user namespace") || slices.Contains(l.Missing, "landlock") {
		t.Fatalf("level %+v, want reduced missing the namespaces only", l)
	}
	// A command that requires full is refused once the sandbox is
	// measured, before it execs.
	ws := t.TempDir()
	_, err := (&Reduced{}).Run(context.Background(), Spec{Shell: "touch ran", Root: ws, Require: LevelFull})
	if l, ok := LevelOf(err); !errors.Is(err, ErrBelowRequired) || !ok || l.Level != LevelReduced || l.Backend != "reduced" {
		t.Fatalf("require full: %v (%+v), want ErrBelowRequired at reduced", err, l)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("require full: the command ran")
	}
}

// TestReducedFiles: Landlock holds a reduced command to its grants: it
// reads the system and its workspace, writes its workspace and private
// TMPDIR and HOME (gone after it), and can neither read nor write a file
// outside them, nor the server's environment or memory through /proc.
func TestReducedFiles(t *testing.T) {
	ws, other := t.TempDir(), t.TempDir()
	secret := filepath.Join(other, "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o644); err != nil {
		t.Fatal(err)
	}
	ro := t.TempDir()
	os.WriteFile(filepath.Join(ro, "given"), []byte("given"), 0o644)
	server := os.Getpid()
	o := runReduced(t, Spec{Root: ws, ReadOnly: []string{ro}, Shell: fmt.Sprintf(`
		try() { if "$@" >/dev/null 2>&1; then echo "ok: $*"; else echo "refused: $*"; fi; }
		try cat %[1]s
		try ls %[2]s
		try touch %[2]s/new
		try touch /tmp/toolgate-reduced-test
		try cat /proc/%[3]d/environ
		try cat /proc/%[3]d/mem
		try cat /etc/passwd
		try cat %[4]s/given
		try touch %[4]s/new
		try sh -c 'echo x > "$TMPDIR/t" && echo y > "$HOME/h"'
		try sh -c 'echo w > written'
		echo "private: $TMPDIR"`, secret, other, server, ro)})
	out := string(o.Stdout)
	for _, want := range []string{
		"refused: cat " + secret, "refused: ls " + other, "refused: touch " + other + "/new",
		"refused: touch /tmp/toolgate-reduced-test", fmt.Sprintf("refused: cat /proc/%d/environ", server),
		fmt.Sprintf("refused: cat /proc/%d/mem", server), "ok: cat /etc/passwd", "ok: cat " + ro + "/given",
		"refused: touch " + ro + "/new", "ok: sh -c echo x", "ok: sh -c echo w",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, "written")); err != nil || string(b) != "w\n" {
		t.Errorf("the workspace's file: %q, %v", b, err)
	}
	_, priv, _ := strings.Cut(out, "private: ")
	if priv = strings.TrimSpace(priv); !strings.HasPrefix(priv, "/") {
		t.Fatalf("no private TMPDIR in %q", out)
	} else if _, err := os.Stat(priv); !os.IsNotExist(err) {
		t.Errorf("the private folder %s outlived the command: %v", priv, err)
	}
	if _, err := os.Stat("/tmp/toolgate-reduced-test"); err == nil {
		os.Remove("/tmp/toolgate-reduced-test")
		t.Error("the command wrote /tmp")
	}
}

// TestReducedPtrace: a reduced command cannot attach to the server with
// ptrace (the filter refuses it, reported; Landlock would too), nor leave
// its session to outlive the command; a background process is killed when
// the command ends (were it not, Run would wait for it for ever: the
// seccomp supervisor waits for the filter's last process).
func TestReducedPtrace(t *testing.T) {
	o := runReduced(t, Spec{Root: t.TempDir(), Shell: fmt.Sprintf(`
		python3 -c 'import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, %d, 0, 0)
print("attach", r, ctypes.get_errno())'
		setsid sleep 1 && echo "setsid ran"
		sleep infinity >/dev/null 2>&1 & echo "background $!"`, os.Getpid())})
	out := string(o.Stdout)
	if !strings.Contains(out, "attach -1 1\n") || strings.Contains(out, "setsid ran") {
		t.Fatalf("want ptrace refused (EPERM) and setsid refused:\n%s%s", out, o.Stderr)
	}
	if !slices.Contains(o.Blocked, "ptrace") || !slices.Contains(o.Blocked, "setsid") {
		t.Errorf("blocked %v, want ptrace and setsid", o.Blocked)
	}
	_, bg, _ := strings.Cut(out, "background ")
	pid, err := strconv.Atoi(strings.TrimSpace(bg))
	if err != nil {
		t.Fatalf("no background pid in %q", out)
	}
	if st, ok := procStat(pid); ok && st.state != "Z" {
		t.Fatalf("the background process %d (%+v) outlived the command", pid, st)
	}
}

// TestReducedLimits: the rlimits kill a reduced command that spins past
// its CPU time or writes past its file size.
func TestReducedLimits(t *testing.T) {
	o := runReduced(t, Spec{Root: t.TempDir(), Shell: "while :; do :; done", Limits: Limits{CPU: time.Second}})
	if !slices.Contains(o.LimitsHit, "cpu") || o.ExitCode != -1 {
		t.Errorf("CPU: %+v, want killed by its cpu limit", o)
	}
	o = runReduced(t, Spec{Root: t.TempDir(), Shell: "exec head -c 200000 /dev/zero > big", Limits: Limits{FileSize: 100000}})
	if !slices.Contains(o.LimitsHit, "file_size") {
		t.Errorf("file size: %+v %s, want the file_size limit", o, o.Stderr)
	}
}

// TestReducedNetwork: without a network no inet socket can be made; with a
// proxy network the command reaches the proxy (through the relay at its
// HTTP_PROXY) and nothing else: a TCP connect elsewhere is refused by
// Landlock, a UDP socket by the filter (reported as socket(AF_INET): with
// a proxy network, a socket of that family that is not TCP).
func TestReducedNetwork(t *testing.T) {
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("reached other\n"))
			c.Close()
		}
	}()
	otherPort := other.Addr().(*net.TCPAddr).Port
	probe := fmt.Sprintf(`
		port=${HTTP_PROXY##*:}
		if exec 3<>/dev/tcp/127.0.0.1/$port; then read -r line <&3; echo "proxy: $line"; exec 3<&-; else echo "proxy refused"; fi
		if exec 4<>/dev/tcp/127.0.0.1/%d; then read -r line <&4; echo "other: $line"; else echo "other refused"; fi
		if echo x > /dev/udp/127.0.0.1/53; then echo "udp sent"; else echo "udp refused"; fi`, otherPort)

	o := runReduced(t, Spec{Root: t.TempDir(), Shell: "exec bash -c '" + strings.ReplaceAll(probe, "'", `'\''`) + "'"})
	out := string(o.Stdout)
	if !strings.Contains(out, "other refused") || !strings.Contains(out, "udp refused") || o.Protections.Network != "none" {
		t.Errorf("no network: %s%s", out, o.Stderr)
	}
	if !slices.Contains(o.Blocked, "socket(AF_INET)") {
		t.Errorf("no network: blocked %v, want socket(AF_INET)", o.Blocked)
	}

	dialed := make(chan struct{}, 4)
	network := Network{Dial: func(ctx context.Context) (net.Conn, error) {
		in, out := net.Pipe()
		go func() {
			out.Write([]byte("proxied\n"))
			bufio.NewReader(out).ReadString('\n')
			out.Close()
		}()
		dialed <- struct{}{}
		return in, nil
	}}
	o = runReduced(t, Spec{Root: t.TempDir(), Network: network, Shell: "exec bash -c '" + strings.ReplaceAll(probe, "'", `'\''`) + "'"})
	out = string(o.Stdout)
	for _, want := range []string{"proxy: proxied", "other refused", "udp refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("proxy network: want %q in:\n%s%s", want, out, o.Stderr)
		}
	}
	if len(dialed) != 1 || o.Protections.Network != "proxy" || !slices.Contains(o.Blocked, "socket(AF_INET)") {
		t.Errorf("proxy network: %d dials, %+v, blocked %v", len(dialed), o.Protections, o.Blocked)
	}
}

// TestReducedAsPodUser: the confinement tests again as a restricted pod's
// user (65532, no capability, no_new_privs): the server is then a process
// of the command's own user.
func TestReducedAsPodUser(t *testing.T) {
	asPodUser(t, "TestReducedProtections", "TestReducedFiles", "TestReducedPtrace", "TestReducedLimits", "TestReducedNetwork", "TestReducedStream", "TestReducedOthers", "TestReducedReadOnlyInside", "TestReducedNoServer", "TestReducedNoIPC")
}

// TestReducedStream: the process tools' way of running a command (its
// output streamed as written, its input given; with a terminal of its
// own, made its controlling one) works at reduced too.
func TestReducedStream(t *testing.T) {
	for _, tty := range []bool{false, true} {
		var out syncBuffer
		o := runReduced(t, Spec{Root: t.TempDir(), Shell: "read -r line; echo got $line; tty || true", Stream: &out, Input: strings.NewReader("hello\n"), TTY: tty})
		got := out.String()
		if o.ExitCode != 0 || !strings.Contains(got, "got hello") || strings.Contains(got, "not a tty") == tty {
			t.Errorf("tty %v: exit %d, streamed %q", tty, o.ExitCode, got)
		}
	}
}

// TestReducedReapsAsInit: where toolgate is the pid namespace's init (a
// pod's first process), the processes of a command's session it kills, and
// orphans adopted by it, are reaped, not left as zombies.
func TestReducedReapsAsInit(t *testing.T) {
	if os.Getenv("TOOLGATE_TEST_INNER") != t.Name() {
		inUserNamespace(t, "-Urmpf", "mount -t proc proc /proc")
		return
	}
	if os.Getpid() != 1 {
		t.Fatalf("pid %d, want 1", os.Getpid())
	}
	runReduced(t, Spec{Root: t.TempDir(), Shell: "(sleep infinity >/dev/null 2>&1 &); sleep infinity >/dev/null 2>&1 & sh -c 'sleep infinity & wait' >/dev/null 2>&1 & echo started"})
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := procStat(pid); ok && st.ppid == 1 {
			t.Errorf("process %d (%+v) left, a child of toolgate", pid, st)
		}
	}
}

// TestReducedOthers: a reduced command, a process of the server's own user
// with no pid namespace between them, cannot change another process's
// limits, priority or scheduling (the server's: pid 1 in a pod), only its
// own; each refusal is reported.
func TestReducedOthers(t *testing.T) {
	victim := exec.Command("sleep", "infinity")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { victim.Process.Kill(); victim.Wait() }()
	v := victim.Process.Pid
	before := procView(t, v)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`
		try() { if "$@" >/dev/null 2>&1; then echo "ok: $*"; else echo "refused: $*"; fi; }
		try prlimit --pid %[1]d --nofile=7:7
		try prlimit --pid %[2]d --nofile=%[3]d:
		try renice -n 5 -p %[1]d
		try taskset -p 1 %[1]d
		try chrt -i -p 0 %[1]d
		try ionice -c 3 -p %[1]d
		try sh -c 'ulimit -n 64 && nice -n 3 true && ionice -c 3 true && taskset 1 true && chrt -i 0 true'`,
		v, os.Getpid(), lim.Cur-1)
	if os.Getuid() != 0 {
		// Every process of the user at once (as root it would be every
		// root process of the machine, were it let through).
		script += `
		try python3 -c 'import ctypes, sys; sys.exit(ctypes.CDLL(None).setpriority(2, 0, 7) != 0)'`
	}
	o := runReduced(t, Spec{Root: t.TempDir(), Shell: script})
	out := string(o.Stdout)
	if strings.Contains(out, "ok: prlimit") || strings.Contains(out, "ok: renice") || strings.Contains(out, "ok: taskset -p") ||
		strings.Contains(out, "ok: chrt") || strings.Contains(out, "ok: ionice") || strings.Contains(out, "ok: python3") ||
		!strings.Contains(out, "ok: sh -c") {
		t.Errorf("want every change of another process refused, the command's own allowed:\n%s%s", out, o.Stderr)
	}
	var after syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &after); err != nil || after != lim {
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		t.Errorf("the server's RLIMIT_NOFILE went %+v → %+v", lim, after)
	}
	if got := procView(t, v); got != before {
		t.Errorf("the other process went\n%s\nto\n%s", before, got)
	}
	for _, want := range []string{"prlimit64(another process)", "setpriority(another process)", "sched_setaffinity(another process)",
		"sched_setscheduler(another process)", "ioprio_set(another process)"} {
		if !slices.Contains(o.Blocked, want) {
			t.Errorf("blocked %v, want %s", o.Blocked, want)
		}
	}
}

// procView is what the test can see of process pid's limits and
// scheduling: /proc/PID/limits, its nice value and policy, its CPUs and
// I/O priority.
func procView(t *testing.T, pid int) string {
	t.Helper()
	p := "/proc/" + strconv.Itoa(pid)
	limits, err1 := os.ReadFile(p + "/limits")
	st, err2 := os.ReadFile(p + "/stat")
	status, err3 := os.ReadFile(p + "/status")
	io, err4 := exec.Command("ionice", "-p", strconv.Itoa(pid)).Output()
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
	cpus := ""
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "Cpus_allowed_list:") {
			cpus = l
		}
	}
	// f[0] is field 3 (state): nice is field 19, policy field 41.
	return fmt.Sprintf("%s nice %s policy %s %s io %s", limits, f[16], f[38], cpus, io)
}

// TestReducedReadOnlyInside: a read-only path inside the writable
// workspace (the guard's .git, .github/workflows) stays read-only at
// reduced: it cannot be written, replaced, renamed, removed or hard-linked
// out, while the rest of the workspace is written; entries cannot be made
// directly in the folders that hold it (the outcome says so), and a
// workspace too large to grant entry by entry is refused, saying why.
func TestReducedReadOnlyInside(t *testing.T) {
	ws, other := t.TempDir(), t.TempDir()
	for _, d := range []string{".git/hooks", ".github/workflows", "src"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".git/config", ".github/workflows/ci.yml", ".github/dependabot.yml", "README", "src/main.go"} {
		os.WriteFile(filepath.Join(ws, f), []byte("orig\n"), 0o644)
	}
	os.Symlink(other, filepath.Join(ws, "out"))
	ro := []string{filepath.Join(ws, ".git"), filepath.Join(ws, ".github/workflows")}
	o := runReduced(t, Spec{Root: ws, ReadOnly: ro, Writable: []string{filepath.Join(ws, ".github")}, Shell: `
		try() { if "$@" >/dev/null 2>&1; then echo "ok: $*"; else echo "refused: $*"; fi; }
		try sh -c 'echo evil > .git/hooks/pre-commit'
		try sh -c 'echo evil >> .git/config'
		try sh -c 'echo evil > .github/workflows/ci.yml'
		try sh -c 'echo evil > .github/workflows/new.yml'
		try mv .git x
		try mv .github y
		try rm -rf .git
		try ln .git/config src/config
		try sh -c 'echo evil > out/f'
		try sh -c 'echo new > src/new && mkdir -p src/a/b && mv src/a src/c && rm -r src/c'
		try sh -c 'echo more >> README && echo more >> .github/dependabot.yml'
		try touch top
		cat .git/config`})
	out := string(o.Stdout)
	for _, want := range []string{
		"refused: sh -c echo evil > .git/hooks/pre-commit", "refused: sh -c echo evil >> .git/config",
		"refused: sh -c echo evil > .github/workflows/ci.yml", "refused: sh -c echo evil > .github/workflows/new.yml",
		"refused: mv .git x", "refused: mv .github y", "refused: rm -rf .git", "refused: ln .git/config",
		"refused: sh -c echo evil > out/f", "ok: sh -c echo new > src/new", "ok: sh -c echo more >> README",
		"refused: touch top", "orig\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s%s", want, out, o.Stderr)
		}
	}
	for f, want := range map[string]string{".git/config": "orig\n", ".github/workflows/ci.yml": "orig\n", "src/new": "new\n",
		"README": "orig\nmore\n", ".git/hooks/pre-commit": "", ".github/workflows/new.yml": ""} {
		if b, _ := os.ReadFile(filepath.Join(ws, f)); string(b) != want {
			t.Errorf("%s holds %q, want %q", f, b, want)
		}
	}
	if _, err := os.Stat(filepath.Join(other, "f")); err == nil {
		t.Error("a write through a link in the workspace reached the folder it names")
	}
	if fs := o.Protections.Filesystem; !strings.Contains(fs, "nothing can be made, removed or renamed directly in "+ws+", "+ws+"/.github ") ||
		!strings.Contains(fs, "sandbox.mode userns or gvisor") {
		t.Errorf("filesystem %q does not say where nothing can be made", fs)
	}

	// Too many entries to grant one by one: refused, saying why.
	big := t.TempDir()
	os.Mkdir(filepath.Join(big, ".git"), 0o755)
	for i := range maxCarved + 1 {
		os.WriteFile(filepath.Join(big, strconv.Itoa(i)), nil, 0o644)
	}
	_, err := (&Reduced{}).Run(context.Background(), Spec{Root: big, ReadOnly: []string{filepath.Join(big, ".git")}, Shell: "touch .git/x"})
	if err == nil || !strings.Contains(err.Error(), "sandbox.mode userns or gvisor") {
		t.Errorf("a workspace of %d entries: %v, want refused", maxCarved+1, err)
	}
	if _, err := os.Stat(filepath.Join(big, ".git/x")); err == nil {
		t.Error("the command ran")
	}
}

// TestReducedNoServer: with a proxy network a reduced command can make no
// listening socket (listen() binds an unbound one past Landlock's bind
// rule, in the server's network namespace) and no TCP Fast Open connect
// elsewhere; both refused and reported.
func TestReducedNoServer(t *testing.T) {
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	network := Network{Dial: func(ctx context.Context) (net.Conn, error) { return nil, errors.New("no proxy here") }}
	o := runReduced(t, Spec{Root: t.TempDir(), Network: network, Shell: fmt.Sprintf(`
		python3 -c 'import socket; s = socket.socket(); s.listen(1); print("listening on", s.getsockname())' || echo "listen refused"
		python3 -c 'import socket; socket.socket().sendto(b"x", socket.MSG_FASTOPEN, ("127.0.0.1", %d)); print("fast open sent")' || echo "fast open refused"`,
		other.Addr().(*net.TCPAddr).Port)})
	out := string(o.Stdout)
	if !strings.Contains(out, "listen refused") || !strings.Contains(out, "fast open refused") {
		t.Errorf("want listen and Fast Open refused:\n%s%s", out, o.Stderr)
	}
	if !slices.Contains(o.Blocked, "listen") || !slices.Contains(o.Blocked, "sendto(MSG_FASTOPEN)") {
		t.Errorf("blocked %v, want listen and sendto(MSG_FASTOPEN)", o.Blocked)
	}
}

// TestReducedNoIPC: a reduced command shares the server's IPC namespace, so
// System V IPC and POSIX message queues are refused (quietly): it can make
// none, nor attach to a segment of another process of its user whose id
// it read in /proc/sysvipc.
func TestReducedNoIPC(t *testing.T) {
	id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	o := runReduced(t, Spec{Root: t.TempDir(), Shell: fmt.Sprintf(`python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
for name, call in [("shmget", lambda: libc.shmget(0, 4096, 0o1600)), ("msgget", lambda: libc.msgget(0, 0o1600)),
                   ("semget", lambda: libc.semget(0, 1, 0o1600)), ("mq_open", lambda: libc.mq_open(b"/tg", 0o102, 0o600, None)),
                   ("shmat", lambda: -1 if libc.shmat(%d, None, 0) in (None, 2**64-1) else 0)]:
    r = call()
    print(name, "refused" if r == -1 else "made", ctypes.get_errno())
'`, id)})
	out := string(o.Stdout)
	for _, n := range []string{"shmget", "msgget", "semget", "mq_open", "shmat"} {
		if !strings.Contains(out, n+" refused 1\n") {
			t.Errorf("want %s refused with EPERM in:\n%s%s", n, out, o.Stderr)
		}
	}
	if len(o.Blocked) != 0 {
		t.Errorf("blocked %v, want the IPC calls refused quietly", o.Blocked)
	}
}
