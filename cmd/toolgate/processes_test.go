package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// processPolicy lets the command and process tools run without asking
// (run_code: the lines written to a REPL are judged as its calls).
const processPolicy = "allow:\n  - execute_command\n  - run_code\n  - start_process\n  - write_process\n  - stop_process\n"

// processServe is `toolgate serve` over stdio with processPolicy, and a
// client session of it.
func processServe(t *testing.T, ctx context.Context) (*mcp.ClientSession, *exec.Cmd, string) {
	t.Helper()
	ws := workspace(t)
	os.WriteFile(filepath.Join(ws, "index.html"), []byte("served by the dev server\n"), 0o644)
	os.WriteFile(filepath.Join(filepath.Dir(ws), "policy.yaml"), []byte(processPolicy), 0o644)
	return processServeIn(t, ctx, ws)
}

// procCall calls name and returns its structured answer and text.
func procCall(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var st map[string]any
	if b, err := json.Marshal(res.StructuredContent); err == nil {
		json.Unmarshal(b, &st)
	}
	return st, text(res), res.IsError
}

// descendants lists the host pids below pid whose command name is one of
// names.
func descendants(pid int, names ...string) []int {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		for _, task := range tasks {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", p, task.Name()))
			for _, f := range strings.Fields(string(b)) {
				c, _ := strconv.Atoi(f)
				queue = append(queue, c)
				comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c))
				if contains(names, strings.TrimSpace(string(comm))) {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// running reports whether a pid is a live process (not a zombie).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

func waitNone(t *testing.T, pids []int) {
	t.Helper()
	for range 500 {
		n := 0
		for _, p := range pids {
			if running(p) {
				n++
			}
		}
		if n == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("processes %v are still running", pids)
}

// TestServeProcessesStdio: through a real serve over stdio, a dev server
// started with start_process is reached by the same session's
// execute_command; a REPL, a pager and a password prompt behave; when the
// client's input ends, nothing the session started is left running, and
// the audit log holds the processes' starts and ends.
func TestServeProcessesStdio(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, cmd, ws := processServe(t, ctx)
	defer cs.Close()

	st, txt, isErr := procCall(t, ctx, cs, "start_process", map[string]any{"command": "python3 -m http.server 8931 --bind 127.0.0.1", "until": "Serving HTTP", "yield_ms": 20000})
	if isErr || st["state"] != "running" {
		t.Fatalf("start_process: %s", txt)
	}
	server := st["id"].(string)
	st, txt, _ = procCall(t, ctx, cs, "execute_command", map[string]any{"command": "curl -s http://127.0.0.1:8931/index.html"})
	if st["stdout"] != "served by the dev server\n" {
		t.Fatalf("curl from the same session: %s", txt)
	}
	st, txt, _ = procCall(t, ctx, cs, "start_process", map[string]any{"argv": []string{"python3", "-i", "-q"}, "tty": true, "until": ">>> $"})
	repl := st["id"].(string)
	st, txt, _ = procCall(t, ctx, cs, "write_process", map[string]any{"id": repl, "text": "print('%d' % (6*7))\n", "wait_ms": 5000})
	for i := 0; !strings.Contains(st["output"].(string), "\n42\n") && i < 50; i++ {
		st, txt, _ = procCall(t, ctx, cs, "read_process", map[string]any{"id": repl, "cursor": 0, "wait_ms": 500})
	}
	if !strings.Contains(st["output"].(string), "\n42\n") {
		t.Fatalf("the REPL: %s", txt)
	}
	_, _, _ = procCall(t, ctx, cs, "start_process", map[string]any{"command": "(setsid sleep 1001 &); sleep 1000", "yield_ms": 500})
	st, txt, _ = procCall(t, ctx, cs, "start_process", map[string]any{"command": `printf "Password: "; read p`, "stdin": "open", "until": "Password"})
	if st["password_prompt"] != true {
		t.Fatalf("password prompt: %s", txt)
	}
	if _, txt, isErr := procCall(t, ctx, cs, "write_process", map[string]any{"id": st["id"], "text": "hunter2\n"}); !isErr || !strings.Contains(txt, "password") {
		t.Fatalf("a password was written: %s", txt)
	}
	st, _, _ = procCall(t, ctx, cs, "list_processes", map[string]any{})
	if n := len(st["processes"].([]any)); n != 4 {
		t.Fatalf("list_processes: %d processes", n)
	}
	pids := descendants(cmd.Process.Pid, "python3", "sleep", "sh")
	if len(pids) < 5 {
		t.Fatalf("the processes on the host: %v", pids)
	}
	// A process that exits between two calls is told in the next result,
	// whatever the tool (read_file here).
	st, txt, _ = procCall(t, ctx, cs, "start_process", map[string]any{"command": "exec timeout 1 tail -f /dev/null", "yield_ms": 0})
	var tail []int
	for i := 0; len(tail) == 0 && i < 250; i++ { // until it has started tail
		time.Sleep(20 * time.Millisecond)
		tail = descendants(cmd.Process.Pid, "tail")
	}
	if st["state"] != "running" || len(tail) != 1 {
		t.Fatalf("start_process: %s (tail %v)", txt, tail)
	}
	waitNone(t, tail)
	for range 100 {
		if _, txt, _ = procCall(t, ctx, cs, "read_file", map[string]any{"path": "index.html"}); strings.Contains(txt, "exited") {
			break
		}
		time.Sleep(20 * time.Millisecond) // its end may be told a moment after the pid is gone
	}
	if want := fmt.Sprintf("process %s (exec timeout 1 tail -f /dev/null) exited: exited, exit code 124", st["id"]); !strings.Contains(txt, want) {
		t.Fatalf("read_file's result has no %q:\n%s", want, txt)
	}
	cs.Close() // end of input: the session and the server end (Close waits for the server)
	waitNone(t, pids)
	log, err := os.ReadFile(filepath.Join(filepath.Dir(ws), "audit.jsonl"))
	if err != nil || !strings.Contains(string(log), `"tool":"process:`+server+`"`) {
		t.Fatalf("the audit log has no record of the process: %v", err)
	}
	for _, reason := range []string{`"outcome":"start"`, `"outcome":"end"`} {
		if !strings.Contains(string(log), reason) {
			t.Fatalf("the audit log has no %s:\n%s", reason, log)
		}
	}
}

// TestServeProcessesHTTPTwoSessions: over streamable HTTP, two sessions
// of one server: one session's dev server is reached by its own commands,
// not by the other's, whose calls do not even see the process; deleting a
// session stops its processes while the other's run on.
func TestServeProcessesHTTPTwoSessions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ws := workspace(t)
	os.WriteFile(filepath.Join(ws, "index.html"), []byte("served by the dev server\n"), 0o644)
	pol := filepath.Join(filepath.Dir(ws), "policy.yaml")
	os.WriteFile(pol, []byte(processPolicy), 0o644)
	u := startHTTP(t, "serve", "--root", ws, "--policy", pol, "--audit", "off", "--http", "127.0.0.1:0")
	connect := func(name string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	a, b := connect("client"), connect("client")
	defer b.Close()
	st, txt, _ := procCall(t, ctx, a, "start_process", map[string]any{"command": "python3 -m http.server 8932 --bind 127.0.0.1", "until": "Serving HTTP", "yield_ms": 20000})
	if st["state"] != "running" {
		t.Fatalf("start_process: %s", txt)
	}
	id := st["id"].(string)
	curl := map[string]any{"command": "curl -s http://127.0.0.1:8932/index.html"}
	if st, txt, _ := procCall(t, ctx, a, "execute_command", curl); st["stdout"] != "served by the dev server\n" {
		t.Fatalf("same session: %s", txt)
	}
	if st, txt, _ := procCall(t, ctx, b, "execute_command", curl); st["stdout"] == "served by the dev server\n" {
		t.Fatalf("the other session reached the server: %s", txt)
	}
	if _, txt, isErr := procCall(t, ctx, b, "read_process", map[string]any{"id": id}); !isErr || !strings.Contains(txt, "no process") {
		t.Fatalf("the other session read the process: %s", txt)
	}
	st, _, _ = procCall(t, ctx, b, "start_process", map[string]any{"command": "sleep 1000", "yield_ms": 0})
	other := st["id"].(string)
	// The server's pid: the parent of its sandbox helpers.
	var serverPid int
	for _, p := range procPids() {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); strings.HasPrefix(string(b), bin+"\x00serve\x00--root\x00"+ws) {
			serverPid = p
		}
	}
	if serverPid == 0 {
		t.Fatal("the server's pid was not found")
	}
	pidsA := descendants(serverPid, "python3")
	if len(pidsA) == 0 {
		t.Fatal("the dev server is not under the server")
	}
	a.Close() // DELETE of the session
	waitNone(t, pidsA)
	if st, txt, _ := procCall(t, ctx, b, "read_process", map[string]any{"id": other}); st["state"] != "running" {
		t.Fatalf("the other session's process: %s", txt)
	}
}

// procPids lists every pid on the host.
func procPids() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// TestServeProcessesServerKilled: a server killed with SIGKILL leaves no
// process behind (each sandbox dies with it), and the next server clears
// the output files the dead one left.
func TestServeProcessesServerKilled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, cmd, ws := processServe(t, ctx)
	defer cs.Close()
	st, txt, _ := procCall(t, ctx, cs, "start_process", map[string]any{"command": "(setsid sleep 1001 &); yes | head -c 2000000; sleep 1000", "yield_ms": 1000})
	if st["state"] != "running" {
		t.Fatalf("start_process: %s", txt)
	}
	pids := descendants(cmd.Process.Pid, "sleep", "sh")
	if len(pids) < 2 {
		t.Fatalf("the processes on the host: %v", pids)
	}
	spill := filepath.Join(filepath.Dir(ws), "state", "processes", strconv.Itoa(cmd.Process.Pid))
	if _, err := os.Stat(spill); err != nil {
		t.Fatalf("no spilled output: %v", err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cs.Wait() // the transport waits for the command: a second Wait of ours would race with it
	waitNone(t, pids)
	// The next server sweeps the dead one's files.
	cs2, _, _ := processServeIn(t, ctx, ws)
	procCall(t, ctx, cs2, "list_processes", map[string]any{})
	if _, err := os.Stat(spill); err == nil {
		t.Fatal("the dead server's output files are still there")
	}
	cs2.Close() // waits for cmd2
}

// processServeIn is processServe in an existing workspace.
func processServeIn(t *testing.T, ctx context.Context, ws string) (*mcp.ClientSession, *exec.Cmd, string) {
	t.Helper()
	pol := filepath.Join(filepath.Dir(ws), "policy.yaml")
	cmd := exec.Command(bin, "serve", "--root", ws, "--policy", pol, "--audit", filepath.Join(filepath.Dir(ws), "audit.jsonl"))
	cmd.Env = append(os.Environ(), "TOOLGATE_STATE="+filepath.Join(filepath.Dir(ws), "state"))
	c := mcp.NewClient(&mcp.Implementation{Name: "processes-test", Version: "1"}, nil)
	// The server stops its processes (TERM, a 3 s grace, KILL) before it
	// ends: more than the transport's default 5 s under -race on a loaded
	// machine, after which it would be sent TERM itself.
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs, cmd, ws
}
