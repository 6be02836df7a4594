//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// env is a workspace with surroundings: parent/ws is the root; parent
// holds files outside it.
type env struct {
	parent, ws string
	native     *Native
}

// newEnv makes a workspace and a native backend that starts helpers ahead
// (Prestart, as toolgate serve runs it): a test's first command starts its
// own helper, the next ones take helpers started ahead, so that every
// property is checked both ways.
func newEnv(t *testing.T) *env {
	t.Helper()
	parent := t.TempDir()
	e := &env{parent: parent, ws: filepath.Join(parent, "ws"), native: &Native{Prestart: true}}
	t.Cleanup(func() { e.native.Close() })
	if err := os.Mkdir(e.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) run(t *testing.T, spec Spec) Outcome {
	t.Helper()
	if spec.Root == "" {
		spec.Root = e.ws
	}
	o, err := e.native.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return o
}

func sh(cmd string) Spec { return Spec{Shell: cmd} }

func TestNativeBenign(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name, cmd, want string
	}{
		{"go version", "go version", "go version go"},
		{"ls", "echo hi > a.txt && ls", "a.txt"},
		{"python", "python3 -c 'print(1)'", "1\n"},
		{"node", "node -e 'console.log(6*7)'", "42\n"},
		{"pipes and files", "printf 'b\\na\\n' | sort > s.txt; cat s.txt; rm s.txt", "a\nb\n"},
		{"tmp", "echo x > /tmp/t && cat /tmp/t", "x\n"},
		{"home is read-only, caches in /tmp", "echo y > ~/f 2>/dev/null || echo $HOME $XDG_CACHE_HOME", Home + " " + CacheDir + "\n"},
		{"hostname", "hostname", "sandbox\n"},
		{"stdin", "cat", "from stdin"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := sh(c.cmd)
			if c.name == "stdin" {
				spec.Stdin = []byte("from stdin")
			}
			o := e.run(t, spec)
			if o.ExitCode != 0 || !strings.Contains(string(o.Stdout), c.want) {
				t.Fatalf("exit %d signal %q\nstdout: %s\nstderr: %s", o.ExitCode, o.Signal, o.Stdout, o.Stderr)
			}
		})
	}
	// The workspace is the host's: a file written inside shows outside.
	if b, err := os.ReadFile(filepath.Join(e.ws, "a.txt")); err != nil || string(b) != "hi\n" {
		t.Fatalf("workspace file: %q %v", b, err)
	}
}

func TestNativeProtectionsReported(t *testing.T) {
	e := newEnv(t)
	o := e.run(t, sh("grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status; cat /proc/1/cmdline | tr '\\0' ' '"))
	out := string(o.Stdout)
	for _, want := range []string{"CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "CapBnd:\t0000000000000000",
		"CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2", "/bin/sh -c"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	p := o.Protections
	if !p.Seccomp || !p.NoNewPrivs || p.Capabilities != "none" || p.Network != "none" {
		t.Errorf("protections: %+v", p)
	}
	if want := []string{"user", "mount", "pid", "net", "ipc", "uts", "cgroup"}; strings.Join(p.Namespaces, ",") != strings.Join(want, ",") {
		t.Errorf("namespaces %v", p.Namespaces)
	}
	if p.Landlock == "" || p.Cgroup == "" || len(p.Rlimits) == 0 {
		t.Errorf("protections not described: %+v", p)
	}
	abi, why := landlockABI()
	if abi > 0 && p.Landlock != fmt.Sprintf("v%d", abi) || abi == 0 && !strings.Contains(p.Landlock, why) {
		t.Errorf("landlock %q, kernel ABI %d (%s)", p.Landlock, abi, why)
	}
	if os.Getuid() == 0 && p.Cgroup == "v1" {
		for _, l := range []string{"memory", "pids", "cpu"} {
			if !contains(p.CgroupLimits, l) {
				t.Errorf("cgroup limit %s not set: %v", l, p.CgroupLimits)
			}
		}
	}
	t.Logf("protections: %+v", p)
}

// TestNativeConfinement: each command tries to get out; it must fail and
// leave the host as it was.
func TestNativeConfinement(t *testing.T) {
	e := newEnv(t)
	outside := filepath.Join(e.parent, "outside.txt")
	must(t, os.WriteFile(outside, []byte("OUTSIDE-SECRET"), 0o644))
	home := filepath.Join(e.parent, "home")
	must(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	must(t, os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("HOME-KEY"), 0o600))
	shadow, _ := os.ReadFile("/etc/shadow")
	hostSecret := "root:"
	if len(shadow) == 0 {
		hostSecret = "\x00never"
	}
	cases := []struct {
		name, cmd string
		blocked   string // a call that must be reported blocked
	}{
		{"read /etc/shadow", "cat /etc/shadow", ""},
		{"read ~/.ssh", "cat ~/.ssh/id_rsa; ls -a ~; cat " + home + "/.ssh/id_rsa", ""},
		{"read outside", "cat " + outside + " ../outside.txt", ""},
		{"write outside", "echo pwned > " + outside + "; echo pwned > ../new.txt", ""},
		{"write system", "echo pwned > /etc/passwd; touch /usr/bin/pwned /bin/pwned /pwned", ""},
		{"host root fs", "ls /old_root /work /mnt /.old 2>&1; test -e /sys/fs/cgroup && echo HAS-SYS", ""},
		{"proc sys", "echo 0 > /proc/sys/kernel/yama/ptrace_scope; echo 1 > /proc/sys/vm/drop_caches", ""},
		{"mount", "mount -t tmpfs none /tmp", "mount"},
		{"unshare", "unshare -r id", "unshare"},
		{"ptrace", "python3 -c 'import ctypes; print(ctypes.CDLL(None).ptrace(16, 1, 0, 0))'", "ptrace"},
		{"packet socket", "python3 -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)'", "socket(AF_PACKET)"},
		{"vsock", "python3 -c 'import socket; socket.socket(40, socket.SOCK_STREAM)'", "socket(AF_VSOCK)"},
		{"tiocsti", "python3 -c 'import fcntl, termios; fcntl.ioctl(0, termios.TIOCSTI, b\"x\")'", ""},
		{"kill host", "kill -9 1; kill -9 " + fmt.Sprint(os.Getpid()), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := e.run(t, sh(c.cmd))
			all := string(o.Stdout) + string(o.Stderr)
			for _, m := range []string{"OUTSIDE-SECRET", "HOME-KEY", hostSecret, "HAS-SYS"} {
				if strings.Contains(all, m) {
					t.Fatalf("the command saw %q:\n%s", m, all)
				}
			}
			if c.blocked != "" && !contains(o.Blocked, c.blocked) {
				t.Errorf("blocked calls %v, want %s among them\n%s", o.Blocked, c.blocked, all)
			}
			// The folders above the workspace are the sandbox's own
			// /tmp (the test's workspace is in the host's /tmp): a write
			// there may succeed; the host is checked below.
			if o.ExitCode == 0 && c.name != "write outside" && c.name != "host root fs" && c.name != "ptrace" && c.name != "kill host" {
				t.Errorf("the command succeeded:\n%s", all)
			}
			t.Logf("exit %d, blocked %v: %s", o.ExitCode, o.Blocked, strings.TrimSpace(all))
		})
	}
	if b, _ := os.ReadFile(outside); string(b) != "OUTSIDE-SECRET" {
		t.Errorf("outside file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(e.parent, "new.txt")); err == nil {
		t.Error("a file appeared outside the workspace")
	}
	for _, p := range []string{"/usr/bin/pwned", "/pwned"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s appeared on the host", p)
		}
	}
}

// TestNativeNoNetwork: with no network, neither a host loopback port nor
// a host unix socket (even one inside the workspace) can be reached.
func TestNativeNoNetwork(t *testing.T) {
	e := newEnv(t)
	var accepted atomic.Int32
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer tcp.Close()
	sockIn := filepath.Join(e.ws, "s.sock")
	unixIn, err := net.Listen("unix", sockIn)
	must(t, err)
	defer unixIn.Close()
	sockOut := filepath.Join(e.parent, "o.sock")
	unixOut, err := net.Listen("unix", sockOut)
	must(t, err)
	defer unixOut.Close()
	for _, l := range []net.Listener{tcp, unixIn, unixOut} {
		go func(l net.Listener) {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}(l)
	}
	port := tcp.Addr().(*net.TCPAddr).Port
	cases := []struct{ name, code, blocked string }{
		{"tcp loopback", fmt.Sprintf("import socket; s=socket.socket(); s.settimeout(1); s.connect(('127.0.0.1', %d))", port), "socket(AF_INET)"},
		{"tcp6", fmt.Sprintf("import socket; s=socket.socket(socket.AF_INET6); s.connect(('::1', %d))", port), "socket(AF_INET6)"},
		{"udp dns", "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('8.8.8.8', 53))", "socket(AF_INET)"},
		{"unix in workspace", "import socket; s=socket.socket(socket.AF_UNIX); s.connect('" + sockIn + "')", ""},
		{"unix outside", "import socket; s=socket.socket(socket.AF_UNIX); s.connect('" + sockOut + "')", ""},
		{"resolve", "import socket; print(socket.getaddrinfo('example.com', 80))", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := e.run(t, Spec{Argv: []string{"python3", "-c", c.code}})
			if o.ExitCode == 0 {
				t.Fatalf("connected:\n%s%s", o.Stdout, o.Stderr)
			}
			if c.blocked != "" && !contains(o.Blocked, c.blocked) {
				t.Errorf("blocked %v, want %s", o.Blocked, c.blocked)
			}
		})
	}
	o := e.run(t, sh("curl -s -m 2 http://127.0.0.1:"+fmt.Sprint(port)+"/ || echo FAILED"))
	if !strings.Contains(string(o.Stdout), "FAILED") {
		t.Errorf("curl: %s %s", o.Stdout, o.Stderr)
	}
	time.Sleep(50 * time.Millisecond)
	if n := accepted.Load(); n != 0 {
		t.Fatalf("a host listener accepted %d connections from the sandbox", n)
	}
}

// TestNativeProxyNetwork: with a proxy, 127.0.0.1:ProxyPort inside leads
// to the proxy, the proxy variables are set, and nothing else is
// reachable.
func TestNativeProxyNetwork(t *testing.T) {
	e := newEnv(t)
	proxy, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer proxy.Close()
	go func() {
		for {
			c, err := proxy.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				fmt.Fprintf(c, "HTTP/1.1 200 Connection established\r\nX-Seen: %s\r\n\r\n", strings.TrimSpace(line))
			}(c)
		}
	}()
	other, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer other.Close()
	var otherHits atomic.Int32
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			otherHits.Add(1)
			c.Close()
		}
	}()
	code := `import os, socket
print(os.environ["HTTPS_PROXY"])
s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
s.sendall(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
print(s.recv(200).decode())
for port in (%d, 80, 443):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1)
        print("REACHED", port)
    except OSError as e:
        print("refused", port, e)
try:
    socket.socket(socket.AF_UNIX)
    print("UNIX-OK")
except OSError as e:
    print("unix refused", e)
`
	o := e.run(t, Spec{Argv: []string{"python3", "-c", fmt.Sprintf(code, other.Addr().(*net.TCPAddr).Port)},
		Network: Network{Proxy: proxy.Addr().String()}})
	out := string(o.Stdout)
	for _, want := range []string{"http://127.0.0.1:3128", "200 Connection established", "X-Seen: CONNECT example.com:443 HTTP/1.1", "unix refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q:\n%s\n%s", want, out, o.Stderr)
		}
	}
	if strings.Contains(out, "REACHED") || strings.Contains(out, "UNIX-OK") || otherHits.Load() != 0 {
		t.Errorf("reached something besides the proxy:\n%s", out)
	}
	if o.Protections.Network != "proxy" {
		t.Errorf("network %q", o.Protections.Network)
	}
}

func TestNativeLimits(t *testing.T) {
	e := newEnv(t)
	t.Run("endless loop: timeout kills the tree", func(t *testing.T) {
		marker := "98765" + fmt.Sprint(os.Getpid()%1000)
		o := e.run(t, Spec{Shell: "sleep " + marker + " & sleep " + marker + " & while :; do :; done",
			Limits: Limits{Wall: 500 * time.Millisecond}})
		if o.Killed != "timeout" || !contains(o.LimitsHit, "wall") {
			t.Fatalf("killed %q, limits %v", o.Killed, o.LimitsHit)
		}
		if pids := findProcs(t, marker); len(pids) > 0 {
			t.Fatalf("processes left after the timeout: %v", pids)
		}
	})
	t.Run("fork bomb: pids limit", func(t *testing.T) {
		o := e.run(t, Spec{Shell: "bomb() { bomb | bomb & }; bomb; sleep 5", Limits: Limits{Processes: 32, Wall: 2 * time.Second}})
		if !contains(o.LimitsHit, "processes") && o.Protections.Cgroup != "" && strings.HasPrefix(o.Protections.Cgroup, "v") {
			t.Fatalf("limits hit %v (cgroup %s)", o.LimitsHit, o.Protections.Cgroup)
		}
		t.Logf("killed %q, limits %v, exit %d", o.Killed, o.LimitsHit, o.ExitCode)
	})
	t.Run("memory hog: killed", func(t *testing.T) {
		o := e.run(t, Spec{Argv: []string{"python3", "-c", "b = bytearray(1 << 30); print('ALLOCATED')"},
			Limits: Limits{Memory: 128 << 20}})
		if strings.Contains(string(o.Stdout), "ALLOCATED") {
			t.Fatalf("1 GiB allocated under a 128 MiB limit")
		}
		if contains(o.Protections.CgroupLimits, "memory") && (o.Killed != "memory" || !contains(o.LimitsHit, "memory")) {
			t.Fatalf("killed %q limits %v signal %s\n%s", o.Killed, o.LimitsHit, o.Signal, o.Stderr)
		}
		t.Logf("killed %q, limits %v, signal %s, exit %d", o.Killed, o.LimitsHit, o.Signal, o.ExitCode)
	})
	t.Run("flood of output: truncated", func(t *testing.T) {
		o := e.run(t, Spec{Shell: "yes flood", Limits: Limits{Output: 4096, Wall: 20 * time.Second}})
		if !o.StdoutTruncated || len(o.Stdout) > 4096+200 || !strings.Contains(string(o.Stdout), "bytes cut") {
			t.Fatalf("truncated %v, %d bytes kept", o.StdoutTruncated, len(o.Stdout))
		}
		if o.Killed != "output" || !contains(o.LimitsHit, "output") {
			t.Fatalf("killed %q limits %v", o.Killed, o.LimitsHit)
		}
	})
	t.Run("file size", func(t *testing.T) {
		o := e.run(t, Spec{Shell: "head -c 2000000 /dev/zero > big", Limits: Limits{FileSize: 1 << 20}})
		if fi, err := os.Stat(filepath.Join(e.ws, "big")); err != nil || fi.Size() > 1<<20 {
			t.Fatalf("file %v %v", fi, err)
		}
		if o.ExitCode == 0 && o.Signal == "" {
			t.Fatalf("succeeded")
		}
	})
}

func TestNativeSpec(t *testing.T) {
	e := newEnv(t)
	t.Setenv("TOOLGATE_TEST_SECRET", "ENV-SECRET")
	o := e.run(t, Spec{Shell: "env; pwd", Env: []string{"FOO=bar"}, Dir: "sub/.."})
	if strings.Contains(string(o.Stdout), "ENV-SECRET") || !strings.Contains(string(o.Stdout), "FOO=bar") {
		t.Fatalf("environment:\n%s", o.Stdout)
	}
	must(t, os.MkdirAll(filepath.Join(e.ws, "sub"), 0o755))
	if o := e.run(t, Spec{Shell: "pwd", Dir: "sub"}); strings.TrimSpace(string(o.Stdout)) != filepath.Join(e.ws, "sub") {
		t.Fatalf("pwd %q", o.Stdout)
	}
	if o := e.run(t, Spec{Argv: []string{"no-such-program"}}); o.ExitCode != 127 || !strings.Contains(string(o.Stderr), "not found") {
		t.Fatalf("missing program: exit %d %s", o.ExitCode, o.Stderr)
	}
	ro := filepath.Join(e.parent, "ro")
	must(t, os.MkdirAll(ro, 0o755))
	must(t, os.WriteFile(filepath.Join(ro, "f"), []byte("READ-ONLY"), 0o644))
	o = e.run(t, Spec{Shell: "cat " + ro + "/f; echo x > " + ro + "/f", ReadOnly: []string{ro}})
	if !strings.Contains(string(o.Stdout), "READ-ONLY") || o.ExitCode == 0 {
		t.Fatalf("read-only path: exit %d %s %s", o.ExitCode, o.Stdout, o.Stderr)
	}
	for _, bad := range []Spec{
		{Shell: "ls", Root: e.ws, Dir: "../"},
		{Shell: "ls", Root: e.ws, Dir: "/etc"},
		{Shell: "ls", Root: "relative"},
		{Shell: "ls", Root: "/"},
		{Root: e.ws},
		{Shell: "ls", Argv: []string{"ls"}, Root: e.ws},
		{Shell: "ls", Root: e.ws, Env: []string{"NOEQUALS"}},
		{Shell: "ls", Root: e.ws, Writable: []string{"/nonexistent-toolgate"}},
	} {
		if _, err := (&Native{}).Run(context.Background(), bad); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("%+v: err %v, want ErrInvalidSpec", bad, err)
		}
	}
}

// TestNativeAsOrdinaryUser runs the sandbox from a process of an ordinary
// user (nobody), where cgroups cannot be made: the command must still be
// confined, and the outcome must say there is no cgroup and why.
func TestNativeAsOrdinaryUser(t *testing.T) {
	if os.Getenv("TOOLGATE_SANDBOX_AS_USER") != "" {
		ws := os.Getenv("TOOLGATE_SANDBOX_AS_USER")
		o, err := (&Native{}).Run(context.Background(), Spec{Shell: "id -u; echo ok > f; cat /etc/shadow", Root: ws})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("OUTCOME cgroup=%q exit=%d stdout=%q landlock=%q seccomp=%v\n", o.Protections.Cgroup, o.ExitCode, o.Stdout, o.Protections.Landlock, o.Protections.Seccomp)
		return
	}
	if os.Getuid() != 0 {
		// Already an ordinary user: every other test covers this case.
		o := newEnv(t).run(t, sh("true"))
		t.Logf("cgroup as uid %d: %s", os.Getuid(), o.Protections.Cgroup)
		return
	}
	dir, err := os.MkdirTemp("", "sandbox-as-user-")
	must(t, err)
	defer os.RemoveAll(dir)
	must(t, os.Chmod(dir, 0o755))
	self, err := os.Executable()
	must(t, err)
	bin := filepath.Join(dir, "sandbox.test")
	copyFile(t, self, bin)
	ws := filepath.Join(dir, "ws")
	must(t, os.Mkdir(ws, 0o755))
	must(t, os.Chown(ws, 65534, 65534))
	cmd := exec.Command(bin, "-test.run", "^TestNativeAsOrdinaryUser$", "-test.v")
	cmd.Env = append(os.Environ(), "TOOLGATE_SANDBOX_AS_USER="+ws)
	cmd.SysProcAttr = userAttr(65534, 65534)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, `cgroup="none: `) || !strings.Contains(s, `stdout="0\n"`) || !strings.Contains(s, "exit=1") || !strings.Contains(s, "seccomp=true") {
		t.Fatalf("as nobody:\n%s", s)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "f")); err != nil || string(b) != "ok\n" {
		t.Fatalf("workspace write as nobody: %q %v", b, err)
	}
	t.Log(strings.TrimSpace(s[strings.Index(s, "OUTCOME"):]))
}

func copyFile(t *testing.T, src, dst string) {
	in, err := os.Open(src)
	must(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	must(t, err)
	_, err = io.Copy(out, in)
	must(t, err)
	must(t, out.Close())
}

// findProcs lists host processes whose command line contains s.
func findProcs(t *testing.T, s string) []string {
	ents, err := os.ReadDir("/proc")
	must(t, err)
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) && !strings.Contains(string(b), "-test.") {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSetuidBitRefused: chmod cannot set the set-user-ID or set-group-ID
// bit on a workspace file (it would stay on the host, owned by the uid the
// sandbox maps to); other modes still change.
func TestSetuidBitRefused(t *testing.T) {
	e := newEnv(t)
	o := e.run(t, Spec{Shell: "cp /bin/true t && chmod 755 t && chmod u+s t; chmod 2755 t; ls -l t"})
	if !contains(o.Blocked, "fchmodat(set-user-ID or set-group-ID bit)") {
		t.Fatalf("blocked %v, stdout %q stderr %q", o.Blocked, o.Stdout, o.Stderr)
	}
	if fi, err := os.Stat(filepath.Join(e.ws, "t")); err != nil || fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 || fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode: %v %v", fi.Mode(), err)
	}
}

// TestNativePrestart: with helpers started ahead, each command still gets
// its own namespaces, file system and cgroup (a file left in /tmp by one is
// not seen by the next), the pool holds Spares helpers (bounded) while
// commands run, and Close ends them all, with every group made.
func TestNativePrestart(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		spares, want int
	}{{0, 2}, {1, 1}, {3, 3}, {maxSpares + 5, maxSpares}} {
		t.Run(fmt.Sprint(tc.spares), func(t *testing.T) {
			n := &Native{Prestart: true, Spares: tc.spares}
			defer n.Close()
			run := func(shell string) Outcome {
				t.Helper()
				o, err := n.Run(context.Background(), Spec{Shell: shell, Root: e.ws})
				if err != nil {
					t.Fatal(err)
				}
				if o.ExitCode != 0 {
					t.Fatalf("%q: exit %d, stderr %q", shell, o.ExitCode, o.Stderr)
				}
				return o
			}
			for i := range tc.want + 2 { // more commands than spares: every helper is used once
				o := run(fmt.Sprintf("test ! -e /tmp/mark && test ! -e /dev/shm/mark && echo $$ && echo %d > /tmp/mark && echo %d > /dev/shm/mark", i, i))
				if lines := strings.SplitN(string(o.Stdout), "\n", 2); lines[0] != "1" {
					t.Fatalf("command %d is not pid 1's child of a fresh pid namespace: %q", i, o.Stdout)
				}
				if !o.Protections.Seccomp || !o.Protections.NoNewPrivs || o.Protections.Capabilities != "none" {
					t.Fatalf("protections of a started-ahead helper: %+v", o.Protections)
				}
				if (o.Protections.Cgroup == "v1" || o.Protections.Cgroup == "v2") && len(o.Protections.CgroupLimits) == 0 {
					t.Fatalf("no cgroup limits: %+v", o.Protections)
				}
				waitHelpers(t, tc.want)
			}
			waitChildren(t, starterArg0, 1) // one starter starts them all
			n.Close()
			waitHelpers(t, 0)
			waitChildren(t, starterArg0, 0)
			if left := leftGroups(t); len(left) > 0 {
				t.Fatalf("groups left after Close: %v", left)
			}
			// A Run after Close still runs, and starts no helper ahead.
			run("true")
			waitHelpers(t, 0)
			if left := leftGroups(t); len(left) > 0 {
				t.Fatalf("groups left after a Run after Close: %v", left)
			}
		})
	}
}

// TestNativePrestartLimits: a helper started ahead has its group limited
// as the previous command's were; a command with other limits gets its own
// (a lower memory or process limit holds, a higher one lets it through).
func TestNativePrestartLimits(t *testing.T) {
	e := newEnv(t)
	hog := func(mib int) Spec {
		return Spec{Argv: []string{"python3", "-c", fmt.Sprintf("b = bytearray(%d << 20); print('ALLOCATED')", mib)}}
	}
	forks := func(n int) Spec {
		return Spec{Shell: fmt.Sprintf("for i in $(seq %d); do sleep 1 & done; wait; echo FORKED", n)}
	}
	small := Limits{Memory: 128 << 20, Processes: 24}
	cases := []struct {
		name   string
		spec   Spec
		limits Limits
		ran    bool
	}{
		{"memory over a small limit", hog(300), small, false},
		{"the same under the default after a small limit", hog(300), Limits{}, true},
		{"memory over a small limit after the default", hog(300), small, false},
		{"memory over a small limit again", hog(300), small, false},
		{"processes over a small limit", forks(40), small, false},
		{"processes under the default after a small limit", forks(40), Limits{}, true},
		{"processes over a small limit after the default", forks(40), small, false},
	}
	for _, c := range cases {
		c.spec.Limits = c.limits
		c.spec.Limits.Wall = 20 * time.Second
		o := e.run(t, c.spec)
		if o.Protections.Cgroup != "v1" && o.Protections.Cgroup != "v2" {
			t.Fatalf("%s: no cgroup here (%s): this test needs one", c.name, o.Protections.Cgroup)
		}
		ran := strings.Contains(string(o.Stdout), "ALLOCATED") || strings.Contains(string(o.Stdout), "FORKED")
		if ran != c.ran {
			t.Fatalf("%s: ran %v, want %v (limits hit %v, killed %q, exit %d)\n%s", c.name, ran, c.ran, o.LimitsHit, o.Killed, o.ExitCode, o.Stderr)
		}
	}
}

// TestNativeSpareLeaves: a helper started ahead that waits past its idle time
// leaves, and the next Run starts another instead of waiting for it.
func TestNativeSpareLeaves(t *testing.T) {
	e := newEnv(t)
	n := &Native{idle: 200 * time.Millisecond}
	defer n.Close()
	n.Warm()
	waitHelpers(t, 1)
	waitHelpers(t, 0) // it gave up waiting
	done := make(chan error, 1)
	go func() {
		o, err := n.Run(context.Background(), Spec{Shell: "echo ran", Root: e.ws})
		if err == nil && strings.TrimSpace(string(o.Stdout)) != "ran" {
			err = fmt.Errorf("stdout %q, stderr %q", o.Stdout, o.Stderr)
		}
		done <- err
	}()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Run waited for a helper that had left")
	}
}

// waitHelpers waits (at most 10 s) until this process has want sandbox
// helpers as children.
func waitHelpers(t *testing.T, want int) { t.Helper(); waitChildren(t, initArg0, want) }

// waitChildren waits (at most 10 s) until this process has want children
// whose argv[0] is arg0, and returns their pids.
func waitChildren(t *testing.T, arg0 string, want int) []int {
	t.Helper()
	var got []string
	for i := 0; i < 200; i++ {
		got = got[:0]
		ents, err := os.ReadDir("/proc")
		must(t, err)
		for _, e := range ents {
			stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...: comm may hold spaces, the last ")" ends it.
			f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
			cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) && bytes.HasPrefix(cmd, []byte(arg0+"\x00")) {
				got = append(got, e.Name())
			}
		}
		if len(got) == want {
			var pids []int
			for _, p := range got {
				pid, _ := strconv.Atoi(p)
				pids = append(pids, pid)
			}
			return pids
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s children of this process: %v, want %d", arg0, got, want)
	return nil
}

// leftGroups lists the groups of this process's sandboxes that exist
// (toolgate-PID-N below its own group, in every hierarchy).
func leftGroups(t *testing.T) []string {
	t.Helper()
	own, mounts, err := layoutNow()
	must(t, err)
	var left []string
	for c, mp := range mounts {
		dirs, _ := filepath.Glob(filepath.Join(mp, own[c], fmt.Sprintf("toolgate-%d-*", os.Getpid())))
		left = append(left, dirs...)
	}
	return left
}

// TestNativeOneMountPerPlace: a place the spec names twice (a folder and a
// link to it, as a program's folder is given through a linked cache) is
// bound once, and where it is named both writable and read-only it is
// read-only, as the two stacked binds made it.
func TestNativeOneMountPerPlace(t *testing.T) {
	e := newEnv(t)
	ro := filepath.Join(e.parent, "ro")
	both := filepath.Join(e.parent, "both")
	for _, d := range []string{ro, both} {
		must(t, os.MkdirAll(d, 0o755))
		must(t, os.WriteFile(filepath.Join(d, "f"), []byte("KEPT"), 0o644))
	}
	link := filepath.Join(e.parent, "link")
	must(t, os.Symlink(ro, link))
	count := `for p in %[1]s %[2]s; do printf '%%s ' "$(cut -d' ' -f5 /proc/self/mountinfo | grep -cx "$p")"; done; echo x > %[2]s/f; echo "write $?"`
	for _, backend := range []string{"native", "reduced"} {
		t.Run(backend, func(t *testing.T) {
			spec := Spec{Shell: fmt.Sprintf(count, ro, both), Root: e.ws, ReadOnly: []string{ro, link, both}, Writable: []string{both}}
			var o Outcome
			if backend == "reduced" {
				o = runReduced(t, spec)
			} else {
				o = e.run(t, spec)
			}
			out := string(o.Stdout)
			if backend == "native" && !strings.HasPrefix(out, "1 1 ") {
				t.Errorf("mounts of %s and %s: %q, want one each (stderr %s)", ro, both, out, o.Stderr)
			}
			if strings.Contains(out, "write 0") {
				t.Errorf("%s, named writable and read-only, was written: %q", both, out)
			}
			if b, _ := os.ReadFile(filepath.Join(both, "f")); string(b) != "KEPT" {
				t.Errorf("%s/f is %q", both, b)
			}
		})
	}
}
