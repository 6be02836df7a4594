package exec

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/tool"
)

func TestToolsBenign(t *testing.T) {
	ws := t.TempDir()
	tools := toolMap(t, Options{Root: ws})
	ex, code := tools["execute_command"], tools["run_code"]
	if d := ex.Definition(); d.Level != tool.LevelMedium || !d.HasTag("exec") || len(d.OutputSchema) == 0 {
		t.Fatalf("definition: %+v", d)
	}
	must := func(r tool.Result, want string) Output {
		t.Helper()
		if r.Error != nil {
			t.Fatalf("error: %s", r.Error.Text())
		}
		out := r.Structured.(Output)
		if out.ExitCode != 0 || !strings.Contains(out.Stdout, want) {
			t.Fatalf("exit %d, stdout %q, want %q\n%s", out.ExitCode, out.Stdout, want, out.Stderr)
		}
		if out.Backend != "native" || !out.Protections.Seccomp || r.Meta["protections"] == nil {
			t.Fatalf("protections not reported: %+v %v", out.Protections, r.Meta)
		}
		return out
	}
	must(call(t, ex, context.Background(), map[string]any{"command": "go version"}), "go version go")
	must(call(t, ex, context.Background(), map[string]any{"command": "echo hi > f.txt && ls"}), "f.txt")
	must(call(t, ex, context.Background(), map[string]any{"command": "python3 -c 'print(1)'"}), "1")
	must(call(t, ex, context.Background(), map[string]any{"argv": []string{"ls", "-la"}}), "f.txt")
	must(call(t, code, context.Background(), map[string]any{"language": "python", "code": "print(sum(range(10)))"}), "45")
	must(call(t, code, context.Background(), map[string]any{"language": "node", "code": "console.log([1,2].length)"}), "2")
	must(call(t, code, context.Background(), map[string]any{"language": "bash", "code": "echo $((6*7))"}), "42")
	os.Mkdir(filepath.Join(ws, "sub"), 0o755)
	must(call(t, ex, context.Background(), map[string]any{"command": "pwd; echo $GREETING", "cwd": "sub", "env": map[string]string{"GREETING": "hello"}}), "sub\nhello")

	// A non-zero exit is a result, not an error.
	r := call(t, ex, context.Background(), map[string]any{"command": "echo oops >&2; exit 3"})
	if r.Error != nil || r.Structured.(Output).ExitCode != 3 || !strings.Contains(r.Text(), "exit code 3") || !strings.Contains(r.Text(), "oops") {
		t.Fatalf("non-zero exit: %+v\n%s", r.Error, r.Text())
	}
	// Unless asked otherwise.
	strict := toolMap(t, Options{Root: ws, ErrorOnExit: true})
	if r := call(t, strict["execute_command"], context.Background(), map[string]any{"command": "exit 2"}); r.Error == nil || r.Error.Details["exit_code"] != 2 {
		t.Fatalf("ErrorOnExit: %+v", r.Error)
	}
}

func TestToolsErrors(t *testing.T) {
	ws := t.TempDir()
	tools := toolMap(t, Options{Root: ws, Limits: sandbox.Limits{Output: 2048, Wall: 5 * time.Second}})
	ex := tools["execute_command"]
	cases := []struct {
		name string
		args map[string]any
		typ  tool.ErrorType
		key  string // a detail the error must carry
	}{
		{"nothing", map[string]any{}, tool.InvalidArguments, ""},
		{"both", map[string]any{"command": "ls", "argv": []string{"ls"}}, tool.InvalidArguments, ""},
		{"cwd escape", map[string]any{"command": "ls", "cwd": "../"}, tool.InvalidArguments, ""},
		{"absolute cwd outside", map[string]any{"command": "ls", "cwd": "/etc"}, tool.InvalidArguments, ""},
		{"bad env", map[string]any{"command": "ls", "env": map[string]string{"A-B": "x"}}, tool.InvalidArguments, ""},
		{"huge timeout", map[string]any{"command": "ls", "timeout": 1e6}, tool.InvalidArguments, ""},
		{"hard deny", map[string]any{"command": "rm -rf /"}, tool.PermissionDenied, "hard_deny"},
		{"ask", map[string]any{"command": "git reset --hard"}, tool.PermissionDenied, "needs_approval"},
		{"timeout", map[string]any{"command": "sleep 60", "timeout": 0.5}, tool.Timeout, ""},
		{"network", map[string]any{"command": "curl -s http://127.0.0.1:1/"}, tool.SandboxViolation, "blocked"},
		{"flood", map[string]any{"command": "yes"}, tool.SandboxViolation, "limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := call(t, ex, context.Background(), c.args)
			if r.Error == nil || r.Error.Type != c.typ {
				t.Fatalf("got %+v, want %s\n%s", r.Error, c.typ, r.Text())
			}
			if c.key != "" && r.Error.Details[c.key] == nil {
				t.Fatalf("no detail %s: %+v", c.key, r.Error.Details)
			}
			if r.Error.Suggestion == "" {
				t.Fatal("no suggestion")
			}
		})
	}
	// Asking: approved, the command runs; denied ones never do.
	r := call(t, ex, Approved(context.Background()), map[string]any{"command": "git reset --hard 2>&1; echo ran"})
	if r.Error != nil || !strings.Contains(r.Structured.(Output).Stdout, "ran") {
		t.Fatalf("approved: %+v %s", r.Error, r.Text())
	}
	if r := call(t, ex, Approved(context.Background()), map[string]any{"command": "rm -rf /"}); r.Error == nil || r.Error.Details["hard_deny"] != true {
		t.Fatalf("hard deny approved: %+v", r.Error)
	}
	// Output is truncated with a mark.
	r = call(t, ex, context.Background(), map[string]any{"command": "seq 1 100000"})
	out := r.Structured.(Output)
	if r.Error != nil || !out.StdoutTruncated || !strings.Contains(out.Stdout, "bytes cut") || !strings.HasSuffix(out.Stdout, "100000\n") || len(out.Stdout) > 2300 {
		t.Fatalf("truncation: %+v %d %q", r.Error, len(out.Stdout), out.Stdout[:80])
	}
}

// TestBackgroundChildrenKilled: a shell line that leaves processes in the
// background (a server started with &, a double fork) gets a line saying
// they were killed at its end and pointing to start_process, with their
// count; a line whose background job ended (wait) gets none; the line's
// exit code and stderr are its own.
func TestBackgroundChildrenKilled(t *testing.T) {
	ex := toolMap(t, Options{Root: t.TempDir()})["execute_command"]
	for _, c := range []struct {
		line   string
		left   int
		exit   int
		stderr string
	}{
		{"python3 -c 'import time; time.sleep(100)' >/dev/null 2>&1 & sleep 0.2; echo started", 1, 0, ""}, // a server would be refused its socket here (no network)
		{"(setsid sleep 100 &); sleep 100 & echo oops >&2; exit 3", 2, 3, "oops\n"},
		{"sleep 0.1 & wait; echo waited", 0, 0, ""},
		{"printf x >&2; sleep 50 &", 1, 0, "x"},
		{"ls /nonexistent", 0, 2, "ls: cannot access '/nonexistent': No such file or directory\n"},
	} {
		r := call(t, ex, context.Background(), map[string]any{"command": c.line})
		out, ok := r.Structured.(Output)
		if !ok || r.Error != nil {
			t.Fatalf("%s: %s", c.line, r.Text())
		}
		note := strings.Contains(r.Text(), "use start_process") || strings.Contains(r.Text(), "Use start_process")
		if out.BackgroundKilled != c.left || note != (c.left > 0) || out.ExitCode != c.exit || out.Stderr != c.stderr {
			t.Errorf("%s: background_killed %d (want %d), exit %d (want %d), stderr %q (want %q)\n%s",
				c.line, out.BackgroundKilled, c.left, out.ExitCode, c.exit, out.Stderr, c.stderr, r.Text())
		}
	}
}

// TestBackgroundTrapWithoutPidNamespace: the trap of execute_command's
// shell line, run by shells that are not the init of a pid namespace of
// their own (here on the host, as at level reduced, where /proc shows the
// pod's or the host's processes), counts only the processes of the session
// the shell leads (which the reduced sandbox kills): none when it leads
// none, though a child it left runs on; its child when it leads one
// (setsid). The same line in a pid namespace of its own (unshare, no
// sandbox) counts every process left there.
func TestBackgroundTrapWithoutPidNamespace(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	line := "sleep 100 >/dev/null 2>&1 & echo $! > " + pidFile + "; echo done"
	for _, c := range []struct {
		argv []string
		want int
	}{
		{[]string{"/bin/sh", "-c"}, 0},
		{[]string{"bash", "-c"}, 0},
		{[]string{"dash", "-c"}, 0},
		{[]string{"setsid", "-w", "/bin/sh", "-c"}, 1},
		{[]string{"setsid", "-w", "bash", "-c"}, 1},
	} {
		mark := newMark()
		var stderr strings.Builder
		cmd := osexec.Command(c.argv[0], append(c.argv[1:], backgroundTrap(mark)+line)...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || string(out) != "done\n" {
			t.Fatalf("%s: %q %v %s", c.argv, out, err, stderr.String())
		}
		b, _ := os.ReadFile(pidFile)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		alive := false
		if proc, err := os.FindProcess(pid); pid > 0 && err == nil {
			alive = proc.Signal(syscall.Signal(0)) == nil
			proc.Kill()
		}
		if !alive {
			t.Fatalf("%s: the background child (pid %d) is not running", c.argv, pid)
		}
		if _, n := cutMark([]byte(stderr.String()), mark); n != c.want {
			t.Fatalf("%s reported %d, want %d: %q", c.argv, n, c.want, stderr.String())
		}
	}
	mark := newMark()
	var stderr strings.Builder
	cmd := osexec.Command("unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "/bin/sh", "-c",
		backgroundTrap(mark)+"sleep 100 & (setsid sleep 100 &); echo done")
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil || string(out) != "done\n" {
		t.Fatalf("in a pid namespace: %q %v %s", out, err, stderr.String())
	}
	if _, n := cutMark([]byte(stderr.String()), mark); n != 2 {
		t.Fatalf("in a pid namespace the trap reported %d, want 2: %q", n, stderr.String())
	}
}
