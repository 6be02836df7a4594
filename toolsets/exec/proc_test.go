package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// procEnv is a workspace, its tools and their registry of processes.
type procEnv struct {
	ws    string
	tools map[string]tool.Tool
	procs *Processes
}

func newProcEnv(t *testing.T, l ProcessLimits) *procEnv {
	t.Helper()
	if l.Dir == "" {
		l.Dir = t.TempDir()
	}
	e := &procEnv{ws: t.TempDir(), procs: NewProcesses(l)}
	t.Cleanup(func() { e.procs.Close() })
	e.tools = toolMap(t, Options{Root: e.ws, Processes: e.procs})
	return e
}

// as calls a tool as the owner named session (principal "p").
func (e *procEnv) as(t *testing.T, session, name string, args any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.tools[name].Run(context.Background(), tool.Call{Name: name, Args: raw, Principal: "p", Session: session})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// ok calls as session and fails on a tool error.
func (e *procEnv) ok(t *testing.T, session, name string, args any) tool.Result {
	t.Helper()
	r := e.as(t, session, name, args)
	if r.Error != nil {
		t.Fatalf("%s %v: %s", name, args, r.Error.Text())
	}
	return r
}

func answerOf(t *testing.T, r tool.Result) ProcessAnswer {
	t.Helper()
	a, ok := r.Structured.(ProcessAnswer)
	if !ok {
		t.Fatalf("answer %T: %s", r.Structured, r.Text())
	}
	return a
}

// readUntil reads the process from cursor until its output holds want
// (or the process exits), and returns all it read.
func (e *procEnv) readUntil(t *testing.T, session, id string, cursor int64, want string) (string, ProcessAnswer) {
	t.Helper()
	var out strings.Builder
	for range 200 {
		a := answerOf(t, e.ok(t, session, ReadProcess, map[string]any{"id": id, "cursor": cursor, "wait_ms": 500}))
		out.WriteString(a.Output)
		cursor = a.Cursor
		if strings.Contains(out.String(), want) || a.State == "exited" && !a.More {
			return out.String(), a
		}
	}
	t.Fatalf("never read %q; got %q", want, out.String())
	return "", ProcessAnswer{}
}

// alive reports whether a host pid is a process (not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// treePids lists the host pids of a process and all below it.
func treePids(e *procEnv, id string) []int {
	e.procs.mu.Lock()
	pr := e.procs.byID[id]
	e.procs.mu.Unlock()
	pr.mu.Lock()
	root := pr.proc.Pid
	pr.mu.Unlock()
	pids := []int{root}
	for i := 0; i < len(pids); i++ {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pids[i]))
		for _, task := range tasks {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pids[i], task.Name()))
			for _, f := range strings.Fields(string(b)) {
				n, _ := strconv.Atoi(f)
				pids = append(pids, n)
			}
		}
	}
	return pids
}

func waitGone(t *testing.T, pids []int) {
	t.Helper()
	for range 500 {
		left := 0
		for _, p := range pids {
			if alive(p) {
				left++
			}
		}
		if left == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("processes %v outlived their end", pids)
}

func TestProcessQuickExitIsOneCall(t *testing.T) {
	e := newProcEnv(t, ProcessLimits{})
	a := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"command": "echo hi; echo err >&2; exit 3"}))
	if a.State != "exited" || a.Reason != "exited" || a.ExitCode == nil || *a.ExitCode != 3 || a.Output != "hi\nerr\n" || a.Cursor != 7 || !strings.HasPrefix(a.ID, "p-") {
		t.Fatalf("answer %+v", a)
	}
	if len(a.ID) < 2+20 { // 100 random bits in base32
		t.Fatalf("id %q is short", a.ID)
	}
	// The output is a text block of its own, the very string of the
	// structured output (what checks a result reads it once), between the
	// state line and what follows.
	res := e.ok(t, "s1", ReadProcess, map[string]any{"id": a.ID})
	if len(res.Content) != 2 || res.Content[1].Text != answerOf(t, res).Output || !strings.HasPrefix(res.Content[0].Text, "exited (exited, exit code 3); cursor 7") {
		t.Fatalf("read's blocks %+v", res.Content)
	}
}

func TestProcessDevServerSharedWithOwnerOnly(t *testing.T) {
	e := newProcEnv(t, ProcessLimits{})
	os.WriteFile(filepath.Join(e.ws, "index.html"), []byte("hello from the dev server\n"), 0o644)
	a := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"command": "python3 -m http.server 8765 --bind 127.0.0.1",
		"until": "Serving HTTP", "yield_ms": 20000}))
	if a.State != "running" || !strings.Contains(a.Output, "Serving HTTP") {
		t.Fatalf("start: %+v", a)
	}
	curl := map[string]any{"command": "curl -s http://127.0.0.1:8765/index.html"}
	r := e.ok(t, "s1", ExecuteCommand, curl)
	if out := r.Structured.(Output); out.ExitCode != 0 || out.Stdout != "hello from the dev server\n" {
		t.Fatalf("same owner's curl: %s", r.Text())
	}
	// Another owner's command has no network at all (its socket is
	// refused), nor has a command of the owner in another session.
	for _, other := range []string{"s2", "s1-other"} {
		r = e.as(t, other, ExecuteCommand, curl)
		if out, _ := r.Structured.(Output); r.Error == nil && out.ExitCode == 0 || strings.Contains(r.Text(), "dev server") {
			t.Fatalf("another owner reached the server: %s", r.Text())
		}
	}
	// Another owner does not see the process either.
	if r := e.as(t, "s2", ReadProcess, map[string]any{"id": a.ID}); r.Error == nil || r.Error.Type != tool.NotFound {
		t.Fatalf("another owner read it: %s", r.Text())
	}
	if r := e.ok(t, "s2", ListProcesses, map[string]any{}); strings.Contains(r.Text(), a.ID) {
		t.Fatalf("another owner lists it: %s", r.Text())
	}
	pids := treePids(e, a.ID)
	st := e.ok(t, "s1", StopProcess, map[string]any{"id": a.ID, "grace_ms": 500})
	if s := st.Structured.(StopAnswer); s.State != "exited" || s.Reason != "stopped" {
		t.Fatalf("stop: %+v", s)
	}
	waitGone(t, pids)
	// The log of the server went to the output: the request is there.
	if out, _ := e.readUntil(t, "s1", a.ID, 0, "GET /index.html"); !strings.Contains(out, "GET /index.html") {
		t.Fatal(out)
	}
}

func TestProcessREPLWithTTY(t *testing.T) {
	e := newProcEnv(t, ProcessLimits{})
	a := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"argv": []string{"python3", "-i", "-q"}, "tty": true, "until": ">>> $"}))
	if a.State != "running" || !strings.HasSuffix(a.Output, ">>> ") {
		t.Fatalf("start: %+v", a)
	}
	w := answerOf(t, e.ok(t, "s1", WriteProcess, map[string]any{"id": a.ID, "text": "print(6*7)\n", "wait_ms": 5000}))
	out := w.Output
	if !strings.Contains(out, "42") {
		out, _ = e.readUntil(t, "s1", a.ID, a.Cursor, "42")
	}
	if !strings.Contains(out, "print(6*7)\n42\n") || strings.Contains(out, "\r") || strings.Contains(out, "\x1b") {
		t.Fatalf("REPL output %q", out)
	}
	e.ok(t, "s1", WriteProcess, map[string]any{"id": a.ID, "keys": []string{"ctrl-d"}})
	if _, end := e.readUntil(t, "s1", a.ID, w.Cursor, "\x00never"); end.State != "exited" || *end.ExitCode != 0 {
		t.Fatalf("after ctrl-d: %+v", end)
	}
}

func TestProcessPromptAnswered(t *testing.T) {
	e := newProcEnv(t, ProcessLimits{})
	a := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"command": `printf "name? "; read n; echo "hello $n"`, "stdin": "open", "until": "name\\? $"}))
	if a.Output != "name? " || a.State != "running" {
		t.Fatalf("start: %+v", a)
	}
	w := answerOf(t, e.ok(t, "s1", WriteProcess, map[string]any{"id": a.ID, "text": "bob\n", "wait_ms": 5000}))
	if out, _ := e.readUntil(t, "s1", a.ID, a.Cursor, "hello bob"); !strings.Contains(w.Output+out, "hello bob") {
		t.Fatalf("answered prompt: %q", out)
	}
	// Without stdin: open, there is nothing to write to.
	b := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"command": "sleep 100", "yield_ms": 0}))
	if r := e.as(t, "s1", WriteProcess, map[string]any{"id": b.ID, "text": "x\n"}); r.Error == nil || r.Error.Type != tool.InvalidArguments {
		t.Fatalf("write to closed stdin: %s", r.Text())
	}
}

func TestProcessGitLogNeverWaitsOnAPager(t *testing.T) {
	e := newProcEnv(t, ProcessLimits{})
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "first commit"},
		{"config", "core.pager", "less"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = e.ws
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	a := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"command": "git log", "tty": true, "yield_ms": 20000}))
	if a.State != "exited" || *a.ExitCode != 0 || !strings.Contains(a.Output, "first commit") {
		t.Fatalf("git log: %+v", a)
	}
}

func TestProcessFloodIsBounded(t *testing.T) {
	e := newProcEnv(t, ProcessLimits{Memory: 64 << 10, File: 256 << 10})
	a := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"command": "yes", "yield_ms": 0}))
	e.procs.mu.Lock()
	pr := e.procs.byID[a.ID]
	e.procs.mu.Unlock()
	for pr.out.size() < 4<<20 {
		<-pr.out.wait()
	}
	// Other calls are not held up meanwhile.
	if r := e.ok(t, "s1", ExecuteCommand, map[string]any{"command": "echo still here"}); !strings.Contains(r.Text(), "still here") {
		t.Fatal(r.Text())
	}
	r := answerOf(t, e.ok(t, "s1", ReadProcess, map[string]any{"id": a.ID, "cursor": 0, "max_bytes": 10}))
	if r.DroppedBytes < 3<<20 || r.Output != "y\ny\ny\ny\ny\n" || r.Cursor != r.DroppedBytes+10 {
		t.Fatalf("flood read: dropped %d, output %q, cursor %d", r.DroppedBytes, r.Output, r.Cursor)
	}
	fi, err := os.Stat(e.procs.spillPath(a.ID))
	if err != nil || fi.Size() > 256<<10 {
		t.Fatalf("spill file: %v %v", fi, err)
	}
	e.ok(t, "s1", StopProcess, map[string]any{"id": a.ID})
	if list := e.ok(t, "s1", ListProcesses, map[string]any{}).Structured.(map[string]any)["processes"].([]ProcessInfo); list[0].OutputBytes < 4<<20 {
		t.Fatalf("list: %+v", list)
	}
}

func TestProcessDoubleForkedTreeStoppedWhole(t *testing.T) {
	e := newProcEnv(t, ProcessLimits{})
	a := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{
		"command": `(setsid sh -c 'sleep 1000 & sleep 1000' &); (sleep 1001 &); echo started; sleep 1000`, "until": "started"}))
	var pids []int
	for range 100 { // the children may still be forking
		if pids = treePids(e, a.ID); len(pids) >= 5 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(pids) < 5 {
		t.Fatalf("the tree has %d processes: %v", len(pids), pids)
	}
	e.ok(t, "s1", StopProcess, map[string]any{"id": a.ID, "grace_ms": 200})
	waitGone(t, pids)
}

func TestProcessEnds(t *testing.T) {
	e := newProcEnv(t, ProcessLimits{Idle: time.Minute})
	start := func(session string, args map[string]any) (string, []int) {
		a := answerOf(t, e.ok(t, session, StartProcess, args))
		return a.ID, treePids(e, a.ID)
	}
	reason := func(session, id string) string {
		t.Helper()
		_, a := e.readUntil(t, session, id, 0, "\x00never")
		return a.Reason
	}
	// Timeout.
	id, pids := start("s1", map[string]any{"command": "sleep 1000", "timeout": 1, "yield_ms": 0})
	if r := reason("s1", id); r != ReasonTimeout {
		t.Fatalf("timeout: %s", r)
	}
	waitGone(t, pids)
	// Session end: every owner of the session.
	id, pids = start("s2", map[string]any{"command": "sleep 1000", "yield_ms": 0})
	e.procs.EndSession("s2")
	waitGone(t, pids)
	if r := reason("s2", id); r != ReasonOwnerGone {
		t.Fatalf("session end: %s", r)
	}
	// Idle owner.
	id, pids = start("s3", map[string]any{"command": "sleep 1000", "yield_ms": 0})
	e.procs.sweep(time.Now().Add(61 * time.Second))
	waitGone(t, pids)
	if r := reason("s3", id); r != ReasonIdle {
		t.Fatalf("idle: %s", r)
	}
	// The next call of the owner carries a notice of the end.
	id, _ = start("s4", map[string]any{"command": "exit 7", "yield_ms": 0})
	for e.procs.byID[id].running() {
		<-e.procs.byID[id].done
	}
	r := e.ok(t, "s4", ExecuteCommand, map[string]any{"command": "true"})
	if n, ok := r.Meta["toolgate/processes"].([]map[string]any); !ok || n[0]["id"] != id || n[0]["exit_code"] != 7 ||
		!strings.Contains(r.Text(), "process "+id) {
		t.Fatalf("notice: %v\n%s", r.Meta, r.Text())
	}
	if r := e.ok(t, "s4", ExecuteCommand, map[string]any{"command": "true"}); r.Meta["toolgate/processes"] != nil {
		t.Fatalf("notice given twice: %v", r.Meta)
	}
	// Server stop.
	_, pids = start("s5", map[string]any{"command": "sleep 1000", "yield_ms": 0})
	e.procs.Close()
	waitGone(t, pids)
	if r := e.as(t, "s5", StartProcess, map[string]any{"command": "true"}); r.Error == nil || r.Error.Type != tool.Unavailable {
		t.Fatalf("start after Close: %s", r.Text())
	}
}

func TestProcessLimits(t *testing.T) {
	e := newProcEnv(t, ProcessLimits{PerOwner: 2, PerPrincipal: 3})
	for range 2 {
		e.ok(t, "s1", StartProcess, map[string]any{"command": "sleep 1000", "yield_ms": 0})
	}
	if r := e.as(t, "s1", StartProcess, map[string]any{"command": "sleep 1000", "yield_ms": 0}); r.Error == nil || r.Error.Type != tool.RateLimited {
		t.Fatalf("third of an owner: %s", r.Text())
	}
	e.ok(t, "s2", StartProcess, map[string]any{"command": "sleep 1000", "yield_ms": 0})
	if r := e.as(t, "s3", StartProcess, map[string]any{"command": "sleep 1000", "yield_ms": 0}); r.Error == nil || r.Error.Type != tool.RateLimited {
		t.Fatalf("fourth of a principal: %s", r.Text())
	}
	e.ok(t, "s1", StopProcess, map[string]any{"all": true, "signal": "KILL"})
	e.ok(t, "s1", StartProcess, map[string]any{"command": "sleep 1000", "yield_ms": 0})
}

func TestProcessCursorsNeverRepeatOrSkip(t *testing.T) {
	e := newProcEnv(t, ProcessLimits{})
	a := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"command": "seq 1 150000", "yield_ms": 0}))
	var want strings.Builder
	for i := 1; i <= 150000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var got strings.Builder
	cursor := int64(0)
	for reads := 0; reads < 10000 || cursor < int64(want.Len()); reads++ {
		r := answerOf(t, e.ok(t, "s1", ReadProcess, map[string]any{"id": a.ID, "cursor": cursor, "max_bytes": 1 + rng.IntN(200), "view": "raw"}))
		if r.DroppedBytes != 0 || r.Cursor != cursor+int64(len(r.Output)) {
			t.Fatalf("read %d at %d: cursor %d, %d bytes, dropped %d", reads, cursor, r.Cursor, len(r.Output), r.DroppedBytes)
		}
		got.WriteString(r.Output)
		cursor = r.Cursor
		if reads > 200000 {
			t.Fatal("the output never ended")
		}
	}
	if got.String() != want.String() {
		t.Fatalf("read %d bytes, want %d", got.Len(), want.Len())
	}
}

func TestProcessLineChecks(t *testing.T) {
	e := newProcEnv(t, ProcessLimits{})
	a := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"argv": []string{"bash"}, "stdin": "open", "yield_ms": 0}))
	r := e.as(t, "s1", WriteProcess, map[string]any{"id": a.ID, "text": "echo one\nrm -rf /\n"})
	if r.Error == nil || r.Error.Details["hard_deny"] != true || r.Error.Details["line"] != "rm -rf /" {
		t.Fatalf("hard-denied line: %s", r.Text())
	}
	r = e.as(t, "s1", WriteProcess, map[string]any{"id": a.ID, "text": "git push --force origin main\n"})
	if r.Error == nil || r.Error.Details["needs_approval"] != true {
		t.Fatalf("asking line: %s", r.Text())
	}
	// Nothing of either was written: the shell runs the next line first.
	e.ok(t, "s1", WriteProcess, map[string]any{"id": a.ID, "text": "echo two\n", "wait_ms": 2000})
	out, _ := e.readUntil(t, "s1", a.ID, 0, "two")
	if out != "two\n" {
		t.Fatalf("the shell's output %q", out)
	}
	// Approved, the asking line is written.
	raw, _ := json.Marshal(map[string]any{"id": a.ID, "text": "echo 'git push --force'\n"})
	if res, _ := e.tools[WriteProcess].Run(Approved(context.Background()), tool.Call{Args: raw, Principal: "p", Session: "s1"}); res.Error != nil {
		t.Fatal(res.Error.Text())
	}
	// A REPL's lines are checked as code.
	py := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"argv": []string{"python3", "-i", "-q"}, "tty": true, "yield_ms": 0}))
	r = e.as(t, "s1", WriteProcess, map[string]any{"id": py.ID, "text": "import shutil; shutil.rmtree('/home')\n"})
	if r.Error == nil || r.Error.Details["needs_approval"] != true {
		t.Fatalf("REPL line: %s", r.Text())
	}
}

func TestProcessPasswordPromptRefused(t *testing.T) {
	e := newProcEnv(t, ProcessLimits{})
	a := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"command": `printf "[sudo] password for dev: "; read p; echo got`,
		"stdin": "open", "until": "password"}))
	if !a.PasswordPrompt || !strings.Contains(e.ok(t, "s1", ReadProcess, map[string]any{"id": a.ID}).Text(), "do not type one") {
		t.Fatalf("prompt not reported: %+v", a)
	}
	r := e.as(t, "s1", WriteProcess, map[string]any{"id": a.ID, "text": "hunter2\n"})
	if r.Error == nil || r.Error.Type != tool.PermissionDenied || r.Error.Details["password_prompt"] != true {
		t.Fatalf("password written: %s", r.Text())
	}
	// Keys still go: ctrl-c (a signal without a terminal) ends it.
	e.ok(t, "s1", WriteProcess, map[string]any{"id": a.ID, "keys": []string{"ctrl-c"}})
	if _, end := e.readUntil(t, "s1", a.ID, 0, "\x00never"); end.State != "exited" || strings.Contains(end.Output, "got") {
		t.Fatalf("after ctrl-c: %+v", end)
	}
	// Where the policy allows it, the answer is written.
	allowed := newProcEnv(t, ProcessLimits{AllowSecretInput: true})
	b := answerOf(t, allowed.ok(t, "s1", StartProcess, map[string]any{"command": `printf "Password: "; read p; echo got`, "stdin": "open", "until": "Password"}))
	allowed.ok(t, "s1", WriteProcess, map[string]any{"id": b.ID, "text": "x\n"})
	if out, _ := allowed.readUntil(t, "s1", b.ID, 0, "got"); !strings.Contains(out, "got") {
		t.Fatal(out)
	}
}

func TestProcessEmptyReadsWaitLonger(t *testing.T) {
	var r emptyReads
	var waits []time.Duration
	for range 8 {
		waits = append(waits, r.minWait())
		r.record(true)
	}
	if waits[0] != 0 || waits[1] != 0 || waits[2] != time.Second || waits[3] != 2*time.Second || waits[7] != 30*time.Second {
		t.Fatalf("minimum waits %v", waits)
	}
	r.record(false)
	if r.minWait() != 0 {
		t.Fatal("a read with output did not reset the wait")
	}
}

func TestProcessStopSignals(t *testing.T) {
	e := newProcEnv(t, ProcessLimits{})
	a := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"command": `trap 'echo bye; exit 5' TERM; echo ready; while :; do sleep 0.1; done`, "until": "ready"}))
	s := e.ok(t, "s1", StopProcess, map[string]any{"id": a.ID, "grace_ms": 20000}).Structured.(StopAnswer)
	if s.Reason != ReasonStopped || s.ExitCode == nil || *s.ExitCode != 5 {
		t.Fatalf("TERM with a trap: %+v", s)
	}
	if r := e.as(t, "s1", StopProcess, map[string]any{"id": "p-unknown"}); r.Error == nil || r.Error.Type != tool.NotFound {
		t.Fatal(r.Text())
	}
}

func TestProcessGuardedEntriesRemoved(t *testing.T) {
	e := newProcEnv(t, ProcessLimits{})
	a := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"command": "mkdir -p .vscode && echo '{}' > .vscode/tasks.json && echo made"}))
	out, end := e.readUntil(t, "s1", a.ID, 0, "removed")
	if end.State != "exited" && !strings.Contains(out, "removed") {
		t.Fatalf("output %q", out)
	}
	if _, err := os.Stat(filepath.Join(e.ws, ".vscode", "tasks.json")); err == nil {
		t.Fatalf("a process left a guarded entry: %q", out)
	}
}

// TestProcessLineRules: with the policy's rules (Options.Rules), a line
// written to a shell is judged as execute_command with that line would
// be: a Bash(...) deny rule refuses it (not written), an allow rule lets
// it through, a line no rule allows asks as the level says; a REPL's
// lines are judged as run_code.
func TestProcessLineRules(t *testing.T) {
	pol, err := policy.Parse([]byte("allow:\n  - Bash(echo:*)\ndeny:\n  - Bash(curl:*)\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := &procEnv{ws: t.TempDir(), procs: NewProcesses(ProcessLimits{Dir: t.TempDir()})}
	t.Cleanup(func() { e.procs.Close() })
	e.tools = toolMap(t, Options{Root: e.ws, Processes: e.procs, Rules: pol.Decide})
	a := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"argv": []string{"bash"}, "stdin": "open", "yield_ms": 0}))
	r := e.as(t, "s1", WriteProcess, map[string]any{"id": a.ID, "text": "echo one\ncurl -s http://example.com\n"})
	if r.Error == nil || r.Error.Type != tool.PermissionDenied || r.Error.AsksApproval() || r.Error.Details["line"] != "curl -s http://example.com" ||
		!strings.Contains(fmt.Sprint(r.Error.Details["rule"]), "curl") {
		t.Fatalf("a line a deny rule names: %s", r.Text())
	}
	r = e.as(t, "s1", WriteProcess, map[string]any{"id": a.ID, "text": "touch made-by-the-shell\n"})
	if !r.Error.AsksApproval() {
		t.Fatalf("a line no rule allows: %s", r.Text())
	}
	e.ok(t, "s1", WriteProcess, map[string]any{"id": a.ID, "text": "echo two\n"})
	if out, _ := e.readUntil(t, "s1", a.ID, 0, "two"); out != "two\n" {
		t.Fatalf("the shell's output %q: a refused line was written", out)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "made-by-the-shell")); err == nil {
		t.Fatal("the asking line ran")
	}
	// A line typed over several writes is judged whole when it ends; a
	// control character that edits it is refused; on a terminal, keys that
	// edit it too, and ctrl-c drops what was typed.
	sh := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"argv": []string{"bash"}, "stdin": "open", "yield_ms": 0}))
	e.ok(t, "s1", WriteProcess, map[string]any{"id": sh.ID, "text": "cu"})
	r = e.as(t, "s1", WriteProcess, map[string]any{"id": sh.ID, "text": "rl -s http://example.com\n"})
	if r.Error == nil || r.Error.Type != tool.PermissionDenied || r.Error.Details["line"] != "curl -s http://example.com" {
		t.Fatalf("a line split over two writes: %s", r.Text())
	}
	if r := e.as(t, "s1", WriteProcess, map[string]any{"id": sh.ID, "text": "x\x7f\x7fcurl x\n"}); r.Error == nil || r.Error.Type != tool.PermissionDenied {
		t.Errorf("a backspace in the text: %s", r.Text())
	}
	tty := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"argv": []string{"bash", "--norc", "-i"}, "tty": true, "yield_ms": 0}))
	for _, in := range []map[string]any{{"keys": []string{"up"}}, {"keys": []string{"backspace"}}, {"text": "ec", "keys": []string{"ctrl-z"}}} {
		in["id"] = tty.ID
		if r := e.as(t, "s1", WriteProcess, in); r.Error == nil || r.Error.Type != tool.PermissionDenied {
			t.Errorf("%v on a terminal: %s, want permission_denied", in, r.Text())
		}
	}
	e.ok(t, "s1", WriteProcess, map[string]any{"id": tty.ID, "text": "ec"})
	e.ok(t, "s1", WriteProcess, map[string]any{"id": tty.ID, "keys": []string{"ctrl-c"}})
	e.ok(t, "s1", WriteProcess, map[string]any{"id": tty.ID, "text": "echo th''ree\n"})
	if out, _ := e.readUntil(t, "s1", tty.ID, 0, "three"); !strings.Contains(out, "three") {
		t.Fatalf("the terminal's output %q", out)
	}
	py := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"argv": []string{"python3", "-i", "-q"}, "stdin": "open", "yield_ms": 0}))
	if r := e.as(t, "s1", WriteProcess, map[string]any{"id": py.ID, "text": "print(1)\n"}); !r.Error.AsksApproval() ||
		!strings.Contains(r.Error.Message, "run_code") {
		t.Fatalf("a REPL line no rule allows: %s", r.Text())
	}
}

// TestProcessNoticesFromAnyTool: Processes.Check (the engine's result
// check) puts the notice of a process that exited in the result of any
// tool of its owner, once, not in another owner's, and starts the owner's
// idle clock again; a caller without processes is left as it is.
func TestProcessNoticesFromAnyTool(t *testing.T) {
	e := newProcEnv(t, ProcessLimits{})
	a := answerOf(t, e.ok(t, "s1", StartProcess, map[string]any{"command": "exec timeout 1 tail -f /dev/null", "yield_ms": 0}))
	waitGone(t, treePids(e, a.ID))
	e.procs.mu.Lock()
	pr := e.procs.byID[a.ID]
	e.procs.owners["p\x00s1"].last = time.Time{}
	e.procs.mu.Unlock()
	<-pr.done
	def := tool.Definition{Name: "read_file"}
	other := e.procs.Check(context.Background(), def, tool.Call{Principal: "p", Session: "s2"}, tool.TextResult("file"))
	if other.Text() != "file" || other.Meta != nil {
		t.Fatalf("another owner's result: %q %v", other.Text(), other.Meta)
	}
	r := e.procs.Check(context.Background(), def, tool.Call{Principal: "p", Session: "s1"}, tool.TextResult("file"))
	if !strings.Contains(r.Text(), "process "+a.ID) || !strings.Contains(r.Text(), "exit code 124") || r.Meta["toolgate/processes"] == nil {
		t.Fatalf("the owner's result: %q %v", r.Text(), r.Meta)
	}
	if r := e.procs.Check(context.Background(), def, tool.Call{Principal: "p", Session: "s1"}, tool.TextResult("file")); r.Text() != "file" {
		t.Fatalf("told twice: %q", r.Text())
	}
	e.procs.mu.Lock()
	last := e.procs.owners["p\x00s1"].last
	e.procs.mu.Unlock()
	if last.IsZero() {
		t.Fatal("the owner's idle clock did not start again")
	}
}

// TestProcessToolsInline: read_process and list_processes run on the
// goroutine that called the engine (engine.Inliner); the tools that start,
// type into or stop processes, and the commands, run on its workers.
func TestProcessToolsInline(t *testing.T) {
	e := newProcEnv(t, ProcessLimits{})
	for _, name := range []string{ReadProcess, ListProcesses, StartProcess, WriteProcess, StopProcess, ExecuteCommand, RunCode} {
		in, ok := e.tools[name].(engine.Inliner)
		if got, want := ok && in.Inline(), name == ReadProcess || name == ListProcesses; got != want {
			t.Errorf("%s runs inline: %v, want %v", name, got, want)
		}
	}
}
