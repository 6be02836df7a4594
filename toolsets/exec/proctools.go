package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/tool"
)

// The names of the process tools.
const (
	StartProcess  = "start_process"
	ReadProcess   = "read_process"
	WriteProcess  = "write_process"
	StopProcess   = "stop_process"
	ListProcesses = "list_processes"
)

// StartInput is start_process's arguments.
type StartInput struct {
	Command string            `json:"command,omitempty" jsonschema:"a shell command line, run by /bin/sh -c in the workspace; if omitted, argv is run (give exactly one of command and argv)"`
	Argv    []string          `json:"argv,omitempty" jsonschema:"the program and its arguments, run without a shell"`
	Cwd     string            `json:"cwd,omitempty" jsonschema:"working folder, relative to the workspace (default: the workspace)"`
	Env     map[string]string `json:"env,omitempty" jsonschema:"extra environment variables, checked as execute_command's"`
	Name    string            `json:"name,omitempty" jsonschema:"a short name to know the process by (default: the command)"`
	TTY     bool              `json:"tty,omitempty" jsonschema:"give the process a terminal (80x24, TERM=xterm-256color): for REPLs, debuggers and programs that behave differently without one; output is read as text, colours and cursor moves stripped"`
	Stdin   string            `json:"stdin,omitempty" enum:"closed,open" default:"closed" jsonschema:"open keeps standard input open for write_process (always open with tty)"`
	YieldMS int               `json:"yield_ms,omitempty" default:"10000" minimum:"0" maximum:"50000" jsonschema:"milliseconds to wait for output before answering (the process runs on); it answers sooner when the process exits or until matches"`
	Until   string            `json:"until,omitempty" jsonschema:"a regular expression: answer as soon as the output matches it (e.g. \"Listening on|ready\")"`
	Timeout float64           `json:"timeout,omitempty" default:"7200" minimum:"0" maximum:"28800" jsonschema:"seconds after which the process and everything it started are stopped"`
}

// ReadInput is read_process's arguments.
type ReadInput struct {
	ID        string `json:"id" jsonschema:"the process id start_process gave"`
	Cursor    int64  `json:"cursor,omitempty" minimum:"0" jsonschema:"where to read from: the cursor the last answer gave (0: from the start of what is kept)"`
	WaitMS    int    `json:"wait_ms,omitempty" minimum:"0" maximum:"50000" jsonschema:"milliseconds to wait for new output when there is none yet (instead of calling again at once)"`
	Until     string `json:"until,omitempty" jsonschema:"a regular expression: wait (up to wait_ms) until the new output matches it"`
	TailLines int    `json:"tail_lines,omitempty" minimum:"0" jsonschema:"only the last N lines of the output from the cursor on"`
	MaxBytes  int    `json:"max_bytes,omitempty" default:"8192" minimum:"1" maximum:"65536" jsonschema:"the most output bytes to return; read again from the cursor for more"`
	View      string `json:"view,omitempty" enum:"text,raw" default:"text" jsonschema:"text: a terminal's output as a person reads it; raw: the bytes as written"`
}

// WriteInput is write_process's arguments.
type WriteInput struct {
	ID     string   `json:"id" jsonschema:"the process id"`
	Text   string   `json:"text,omitempty" jsonschema:"text to write to the process's input; end a line with \\n to send it"`
	Keys   []string `json:"keys,omitempty" jsonschema:"keys to press after the text: enter, tab, esc, backspace, up, down, left, right, ctrl-c, ctrl-d, ctrl-z, ctrl-\\\\"`
	EOF    bool     `json:"eof,omitempty" jsonschema:"close the input after writing (with a terminal: ctrl-d)"`
	WaitMS int      `json:"wait_ms,omitempty" default:"500" minimum:"0" maximum:"50000" jsonschema:"milliseconds to wait for the output that follows"`
}

// StopInput is stop_process's arguments.
type StopInput struct {
	ID      string `json:"id,omitempty" jsonschema:"the process id (or all: true)"`
	All     bool   `json:"all,omitempty" jsonschema:"stop every process of this conversation"`
	Signal  string `json:"signal,omitempty" enum:"TERM,INT,HUP,QUIT,KILL" default:"TERM" jsonschema:"the signal sent first; KILL ends at once"`
	GraceMS int    `json:"grace_ms,omitempty" default:"3000" minimum:"0" maximum:"60000" jsonschema:"milliseconds to wait after the signal before everything left is killed"`
}

// ListInput is list_processes's arguments.
type ListInput struct {
	IncludeExited *bool `json:"include_exited,omitempty" jsonschema:"list the exited processes too (default true)"`
}

// ProcessAnswer is what start_process, read_process and write_process
// answer.
type ProcessAnswer struct {
	ID             string `json:"id,omitempty"`
	Name           string `json:"name,omitempty"`
	State          string `json:"state"`
	Reason         string `json:"reason,omitempty"`
	ExitCode       *int   `json:"exit_code,omitempty"`
	Signal         string `json:"signal,omitempty"`
	Output         string `json:"output"`
	Cursor         int64  `json:"cursor"`
	DroppedBytes   int64  `json:"dropped_bytes"`
	More           bool   `json:"more,omitempty"`
	PasswordPrompt bool   `json:"password_prompt,omitempty"`
	// Replica is the replica that runs the process, when the answer came
	// from the replicas' shared state (another replica runs it).
	Replica string `json:"replica,omitempty"`
	// Withheld says why the output of another replica's process is not
	// shown (the replicas share no key that opens it).
	Withheld string `json:"withheld,omitempty"`
}

// StopAnswer is stop_process's answer for one process.
type StopAnswer struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Reason   string `json:"reason,omitempty"`
	ExitCode *int   `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
}

// ProcessInfo is one entry of list_processes.
type ProcessInfo struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Command     string `json:"command"`
	State       string `json:"state"`
	Reason      string `json:"reason,omitempty"`
	Started     string `json:"started"`
	ExitCode    *int   `json:"exit_code,omitempty"`
	Signal      string `json:"signal,omitempty"`
	CPUMS       int64  `json:"cpu_ms"`
	OutputBytes int64  `json:"output_bytes"`
	Replica     string `json:"replica,omitempty"` // another replica runs it
}

// processTools returns the five process tools.
func (s *set) processTools(o Options) []tool.Tool {
	command := []tool.Option{tool.WithLevel(tool.LevelMedium), tool.WithTags("exec", "process"),
		tool.WithAnnotations(tool.Annotations{Destructive: true, OpenWorld: o.Egress != nil})}
	read := []tool.Option{tool.WithLevel(tool.LevelRead), tool.WithTags("exec", "process"),
		tool.WithAnnotations(tool.Annotations{ReadOnly: true})}
	return []tool.Tool{
		lazyPlain(StartProcess, "Start a long-running or interactive process (a dev server, a watcher, a REPL, a debugger) in the same sandbox as "+
			"execute_command, and return its first output. It runs on after the answer: read it with read_process, type into it with "+
			"write_process, end it with stop_process. Your execute_command and run_code calls share its network: a server it starts "+
			"is reachable from them on the loopback, and from no other caller.\n"+
			"Use execute_command for commands that end on their own.\n"+
			`Example: {"command": "python3 -m http.server 8000", "until": "Serving HTTP"}`,
			s.startProcess, command...),
		lazyPlain(ReadProcess, "Read a process's output from a cursor (the one the last answer gave), optionally waiting for new output "+
			"(wait_ms) or for a pattern (until). Answers state, exit_code once exited, output and the next cursor.\n"+
			`Example: {"id": "p-…", "cursor": 1234, "wait_ms": 5000}`,
			s.readProcess, read...),
		lazyPlain(WriteProcess, "Type into a process started with stdin open or tty: text, keys (enter, ctrl-c…), eof. Lines written to a shell or "+
			"a REPL are checked as commands or code are. Answers the output that followed. Never type passwords: when the process asks for "+
			"one, ask the user.\n"+
			`Example: {"id": "p-…", "text": "print(1+1)\n"}`,
			s.writeProcess, command...),
		lazyPlain(StopProcess, "Stop a process (or all: true) and everything it started: the signal (TERM), then KILL after grace_ms.\n"+
			`Example: {"id": "p-…"}`,
			s.stopProcess, tool.WithLevel(tool.LevelWrite), tool.WithTags("exec", "process"),
			tool.WithAnnotations(tool.Annotations{Destructive: true, Idempotent: true})),
		lazyPlain(ListProcesses, "List this conversation's processes: id, name, command, state, why it ended, start time, exit code, CPU "+
			"time and output size.",
			s.listProcesses, read...),
	}
}

// lazyPlain is tool.New built on first use (tool.Lazy).
func lazyPlain[In any](name, desc string, fn func(context.Context, In) (tool.Result, error), opts ...tool.Option) tool.Tool {
	return tool.Lazy(tool.HeadOf(name, desc, opts...), func() tool.Tool { return tool.New(name, desc, fn, opts...) })
}

// ownedTool gives its tool's calls their owner (principal and session, in
// the context) and puts the notices of processes that ended since the
// owner's last call in its results.
type ownedTool struct {
	tool.Tool
	procs  *Processes
	inline bool
}

// inlineTools run on the goroutine that called the engine (engine.Inliner):
// they start and stop nothing, read what is kept of a process's output (in
// memory, else its local spill file) and wait only as their context lets
// them (for output, for the board). A read of new output is the call an
// agent repeats most; on a worker it cost two goroutine hand-offs, each
// waking a thread on an idle machine.
var inlineTools = map[string]bool{ReadProcess: true, ListProcesses: true}

// Inline implements engine.Inliner.
func (t ownedTool) Inline() bool { return t.inline }

// own wraps t in an ownedTool, keeping a tool.Headed's head.
func own(t tool.Tool, p *Processes) tool.Tool {
	o := ownedTool{Tool: t, procs: p}
	if h, ok := t.(tool.Headed); ok {
		o.inline = inlineTools[h.Head().Name]
		return ownedHeaded{o, h}
	}
	o.inline = inlineTools[t.Definition().Name]
	return o
}

type ownedHeaded struct {
	ownedTool
	h tool.Headed
}

func (t ownedHeaded) Head() tool.Definition { return t.h.Head() }

func (t ownedTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	o := ownerOfCall(call)
	ctx = context.WithValue(ctx, ownerCtxKey{}, o)
	t.procs.touch(o)
	res, err := t.Tool.Run(ctx, call)
	if err == nil {
		res = t.procs.withNotices(o, res)
	}
	return res, err
}

// withNotices adds to res a line for each process of o that exited since
// o was last told, and meta["toolgate/processes"].
func (p *Processes) withNotices(o owner, res tool.Result) tool.Result {
	ended := p.notices(o)
	if len(ended) == 0 {
		return res
	}
	var lines []string
	var meta []map[string]any
	for _, pr := range ended {
		st := pr.snapshot()
		line := fmt.Sprintf("process %s (%s) exited: %s", pr.id, pr.name, st.reason)
		if st.exitCode != nil {
			line += fmt.Sprintf(", exit code %d", *st.exitCode)
		} else if st.signal != "" {
			line += ", " + st.signal
		}
		lines = append(lines, line)
		m := map[string]any{"id": pr.id, "name": pr.name, "state": "exited", "reason": st.reason}
		if st.exitCode != nil {
			m["exit_code"] = *st.exitCode
		}
		meta = append(meta, m)
	}
	res.Content = append(res.Content, tool.TextContent("["+strings.Join(lines, "; ")+"]\n"))
	res.SetMeta("toolgate/processes", meta)
	return res
}

// procState is a consistent copy of a process's state.
type procState struct {
	exited   bool
	reason   string
	exitCode *int
	signal   string
	cpu      time.Duration
}

func (pr *process) snapshot() procState {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return procState{exited: pr.exited, reason: pr.reason, exitCode: pr.exitCode, signal: pr.signal, cpu: pr.cpu}
}

func (st procState) name() string {
	if st.exited {
		return "exited"
	}
	return "running"
}

// terminalEnv is what every process gets, so that nothing waits on a
// pager or a prompt for credentials, and output is not held in buffers.
var terminalEnv = map[string]string{
	"PAGER": "cat", "GIT_PAGER": "cat", "MANPAGER": "cat", "SYSTEMD_PAGER": "cat", "LESS": "-FRX",
	"GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true", "EDITOR": "true", "VISUAL": "true",
	"PYTHONUNBUFFERED": "1", "DEBIAN_FRONTEND": "noninteractive", "npm_config_yes": "true",
}

func (s *set) startProcess(ctx context.Context, in StartInput) (tool.Result, error) {
	switch {
	case in.Command == "" && len(in.Argv) == 0:
		return errResult(tool.Errorf(tool.InvalidArguments, "give command (a shell line) or argv (a program and its arguments)").
			WithSuggestion(`send {"command": "npm run dev"} or {"argv": ["python3", "-i"]}`)), nil
	case in.Command != "" && len(in.Argv) > 0:
		return errResult(tool.Errorf(tool.InvalidArguments, "give command or argv, not both").WithSuggestion("send only one of them")), nil
	}
	size := len(in.Command)
	for _, a := range in.Argv {
		size += len(a) + 1
	}
	if size > s.opts.MaxCommand {
		return errResult(tool.Errorf(tool.TooLarge, "the command is %d bytes; at most %d are accepted", size, s.opts.MaxCommand)), nil
	}
	until, e := untilRegexp(in.Until)
	if e != nil {
		return errResult(e), nil
	}
	var f Finding
	spec := sandbox.Spec{}
	display := in.Command
	if in.Command != "" {
		f, spec.Shell = CheckShell(in.Command), in.Command
	} else {
		f, spec.Argv = CheckArgv(in.Argv), in.Argv
		display = strings.Join(in.Argv, " ")
	}
	if e := s.verdict(ctx, f); e != nil {
		return errResult(e), nil
	}
	timeout := in.Timeout
	if timeout <= 0 {
		timeout = 7200
	}
	o := ownerOf(ctx)
	// The process's own variables first: the call's env may not set them
	// (checkEnv refuses PAGER, EDITOR, GIT_*…), and its other ones follow.
	env := map[string]string{}
	for k, v := range in.Env {
		env[k] = v
	}
	spec, _, g, e := s.prepare(ctx, spec, in.Cwd, timeout, s.procs.limits.MaxTimeout, env)
	if e != nil {
		return errResult(e), nil
	}
	for k, v := range terminalEnv {
		spec.Env = setEnv(spec.Env, k, v)
	}
	if in.TTY {
		spec.Env = setEnv(spec.Env, "TERM", "xterm-256color")
		spec.Env = setEnv(spec.Env, "COLUMNS", fmt.Sprint(sandbox.TTYCols))
		spec.Env = setEnv(spec.Env, "LINES", fmt.Sprint(sandbox.TTYRows))
	}
	// A server's CPU is a rate, the cgroup's quota of one core, not the
	// 60 s of CPU time of a command; where no cpu cgroup holds, its CPU
	// time is bounded by its timeout.
	spec.Limits.CPU, spec.Limits.CPUByCgroup = spec.Limits.Wall, true
	pod, e := s.procs.admit(o)
	if e != nil {
		return errResult(e), nil
	}
	spec.Pod = pod
	name := in.Name
	if name == "" {
		name = display
		if len(name) > 60 {
			name = name[:57] + "..."
		}
	}
	pr := &process{
		id: newID(), name: name, command: display, owner: o.key, principal: o.principal, session: o.session,
		tty: in.TTY, stdinOpen: in.TTY || in.Stdin == "open", started: time.Now(), done: make(chan struct{}),
	}
	pr.kind, pr.program = programKind(spec)
	pr.out = newProcOutput(s.procs.limits.Memory, s.procs.limits.File, s.procs.spillPath(pr.id))
	spec.Stream, spec.TTY = pr.out, in.TTY
	if pr.stdinOpen {
		pr.in = newInputQueue()
		spec.Input = pr.in
	}
	started := make(chan struct{})
	var startOnce sync.Once
	spec.Started = func(p *os.Process) {
		pr.mu.Lock()
		pr.proc = p
		pr.mu.Unlock()
		startOnce.Do(func() { close(started) })
	}
	// The process outlives this call: its context is the registry's, not
	// the call's; cancel kills it.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	pr.cancel = cancel
	failed := make(chan error, 1)
	go func() {
		out, err := s.sandboxRun(runCtx, spec)
		// What the process created among the guarded entries (a missing
		// .git, .vscode…) goes, as after a command.
		if b := g.check(); len(b.paths) > 0 {
			pr.out.Write([]byte(fmt.Sprintf("\ntoolgate: removed what the process created among protected paths: %s\n", strings.Join(b.paths, ", "))))
		}
		pr.finish(out, err)
		pr.out.close()
		if pr.in != nil {
			pr.in.stop()
		}
		cancel()
		// The end is told before done closes: whoever waits for done (a
		// stop, the server's Close before its audit log closes) then
		// knows that the end is recorded.
		s.procs.emit(ProcessEvent{Kind: "end", ID: pr.id, Owner: pr.principal, Session: pr.session, Command: pr.command, Reason: pr.snapshot().reason})
		close(pr.done)
		startOnce.Do(func() { failed <- err; close(started) })
	}()
	<-started
	select {
	case err := <-failed:
		if err != nil {
			pr.out.remove()
			if e := sandboxError(err); e != nil {
				return errResult(e), nil
			}
			return tool.Result{}, fmt.Errorf("starting the process: %w", err)
		}
	default:
	}
	s.procs.add(pr)
	s.procs.publish(pr)
	s.procs.emit(ProcessEvent{Kind: "start", ID: pr.id, Owner: pr.principal, Session: pr.session, Command: pr.command})
	ans := s.collect(ctx, pr, 0, time.Duration(in.YieldMS)*time.Millisecond, until, waitAll, 0, defaultMaxBytes, false)
	ans.ID, ans.Name = pr.id, pr.name
	return s.answer(ans, false), nil
}

// spillPath is where a process's output spills.
func (p *Processes) spillPath(id string) string {
	return p.dir + "/" + id + ".out"
}

const defaultMaxBytes = 8 << 10

// How collect waits: the whole time (start_process's yield), until the
// first new output (read_process), or until output stops for a moment
// (write_process).
type waitMode int

const (
	waitAll waitMode = iota
	waitFirst
	waitQuiet
)

// quietFor is how long output must pause for write_process to answer
// before its wait is over.
const quietFor = 150 * time.Millisecond

// collect waits as mode says (at most wait; sooner when the process
// exits or until matches the output from cursor), then reads from
// cursor. While it waits, it reports progress each second. A read that
// does not wait (most: a read of new output) starts no ticker and looks
// for until nowhere: whatever they said, the wait was over.
func (s *set) collect(ctx context.Context, pr *process, cursor int64, wait time.Duration, until *regexp.Regexp,
	mode waitMode, tail, maxBytes int, raw bool) ProcessAnswer {
	if wait <= 0 {
		return pr.read(cursor, tail, maxBytes, raw)
	}
	begin := time.Now()
	deadline := begin.Add(wait)
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	var quiet <-chan time.Time
	for {
		changed := pr.out.wait()
		left := time.Until(deadline)
		if pr.ready(cursor, until, mode) || left <= 0 {
			break
		}
		timer := time.NewTimer(left)
		over := false
		select {
		case <-changed:
			if mode == waitQuiet && until == nil {
				quiet = time.After(quietFor)
			}
		case <-pr.done:
		case <-timer.C:
			over = true
		case <-quiet:
			over = true
		case <-ticker.C:
			tool.ReportProgress(ctx, float64(time.Since(begin).Milliseconds()), float64(wait.Milliseconds()), "waiting for "+pr.name)
		case <-ctx.Done():
			over = true
		}
		timer.Stop()
		if over {
			break
		}
	}
	return pr.read(cursor, tail, maxBytes, raw)
}

// ready reports whether a wait from cursor is over before its time: the
// process exited, until matched, or (waitFirst) new output came.
func (pr *process) ready(cursor int64, until *regexp.Regexp, mode waitMode) bool {
	switch {
	case !pr.running():
		return true
	case until != nil:
		return pr.matches(cursor, until)
	}
	return mode == waitFirst && pr.out.size() > cursor
}

// output is what a process wrote, as a read sees it: this replica's
// procOutput, or the tail another replica put on the board. read's data
// is the caller's own: nothing writes to it again (readOutput makes it a
// string in place).
type output interface {
	read(cursor int64, max int) (data []byte, from, total int64)
	size() int64
}

// matches reports whether the output from cursor matches re (the last
// 64 KiB of it, as text for a terminal).
func (pr *process) matches(cursor int64, re *regexp.Regexp) bool {
	return outputMatches(pr.out, pr.tty, cursor, re)
}

func outputMatches(out output, tty bool, cursor int64, re *regexp.Regexp) bool {
	total := out.size()
	data, _, _ := out.read(max(cursor, total-64<<10), 64<<10)
	if tty {
		text, _ := screenText(data, true)
		return re.MatchString(text)
	}
	return re.Match(data)
}

// read answers the output from cursor: at most maxBytes bytes (whole
// characters and escape sequences; as text for a terminal unless raw),
// only the last tail lines when tail > 0.
func (pr *process) read(cursor int64, tail, maxBytes int, raw bool) ProcessAnswer {
	st := pr.snapshot()
	ans := ProcessAnswer{State: st.name(), ExitCode: st.exitCode, Signal: st.signal}
	if st.exited {
		ans.Reason = st.reason
	}
	return readOutput(ans, pr.out, pr.tty, cursor, tail, maxBytes, raw)
}

// readOutput fills ans (its state set) with the output of out from cursor,
// as process.read says.
func readOutput(ans ProcessAnswer, out output, tty bool, cursor int64, tail, maxBytes int, raw bool) ProcessAnswer {
	running := ans.State == "running"
	total := out.size()
	if tail > 0 {
		cursor = max(cursor, total-int64(maxBytes))
	}
	data, from, total := out.read(cursor, maxBytes)
	ans.DroppedBytes = max(0, from-cursor)
	final := !running && from+int64(len(data)) == total
	used := whole(data, final)
	var text string
	switch {
	case tty && !raw:
		text, used = screenText(data[:used], final)
	case used > 0:
		// data is the caller's own (output): it is the text, not copied
		// (8 KiB a read).
		text = unsafe.String(&data[0], used)
	}
	if tail > 0 {
		lines := strings.SplitAfter(text, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		if len(lines) > tail {
			text = strings.Join(lines[len(lines)-tail:], "")
		}
	}
	ans.Output = text
	ans.Cursor = from + int64(used)
	ans.More = ans.Cursor < total
	ans.PasswordPrompt = running && asksPassword(out)
	return ans
}

// passwordPrompt is how a program asks for a secret at the end of its
// output.
var passwordPrompt = regexp.MustCompile(`(?i)(\[sudo\] password for [^:]*:|password[^:\n]{0,40}:|passphrase[^:\n]{0,40}:|enter pin[^:\n]{0,20}:)\s*$`)

// asksPassword reports whether the last line of the output is a password
// or passphrase prompt.
func (pr *process) asksPassword() bool { return asksPassword(pr.out) }

func asksPassword(out output) bool {
	total := out.size()
	data, _, _ := out.read(max(0, total-256), 256)
	text, _ := screenText(data, true)
	if i := strings.LastIndexByte(strings.TrimRight(text, " \t\n"), '\n'); i >= 0 {
		text = text[i+1:]
	}
	return passwordPrompt.MatchString(text)
}

// answer renders a process answer: a line of its state, the output as a
// block of its own (the same string as the structured output's, so that
// what checks a result reads it once), and a block of what follows.
func (s *set) answer(a ProcessAnswer, progress bool) tool.Result {
	var b strings.Builder
	if a.ID != "" {
		fmt.Fprintf(&b, "process %s (%s): ", a.ID, a.Name)
	}
	b.WriteString(a.State)
	if a.State == "exited" {
		fmt.Fprintf(&b, " (%s", a.Reason)
		if a.ExitCode != nil {
			fmt.Fprintf(&b, ", exit code %d", *a.ExitCode)
		} else if a.Signal != "" {
			fmt.Fprintf(&b, ", %s", a.Signal)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, "; cursor %d", a.Cursor)
	if a.DroppedBytes > 0 {
		fmt.Fprintf(&b, "; %d older bytes were dropped", a.DroppedBytes)
	}
	if a.More {
		b.WriteString("; more output: read again from the cursor")
	}
	if a.Output == "" {
		b.WriteString("\n(no new output)")
	}
	content := []tool.Content{tool.TextContent(b.String())}
	if a.Output != "" {
		content = append(content, tool.TextContent(a.Output))
	}
	b.Reset()
	if a.Withheld != "" {
		b.WriteString("its output cannot be read from this replica: " + a.Withheld + "\n")
	}
	if a.State == policy.ProcessLost {
		b.WriteString(lostLine(a.Replica))
	}
	if a.PasswordPrompt {
		b.WriteString("the process asks for a password: do not type one; ask the user to enter it, or stop the process\n")
	}
	if b.Len() > 0 {
		content = append(content, tool.TextContent(b.String()))
	}
	r := tool.Result{Content: content, Structured: a}
	if progress {
		r.SetMeta(tool.MetaProgress, true)
	}
	return r
}

func (s *set) readProcess(ctx context.Context, in ReadInput) (tool.Result, error) {
	until, e := untilRegexp(in.Until)
	if e != nil {
		return errResult(e), nil
	}
	if in.MaxBytes <= 0 {
		in.MaxBytes = defaultMaxBytes
	}
	wait := time.Duration(in.WaitMS) * time.Millisecond
	o := ownerOf(ctx)
	pr, e := s.procs.get(o, in.ID)
	if e != nil {
		remote, e := s.procs.elsewhere(ctx, o, in.ID)
		if e != nil {
			return errResult(e), nil
		}
		return s.readElsewhere(ctx, o, remote, in, until, wait), nil
	}
	// Empty reads in a row wait longer each time: polling at once costs
	// tokens and teaches nothing.
	if floor := pr.reads.minWait(); pr.running() && wait < floor && pr.out.size() <= in.Cursor {
		wait = floor
	}
	ans := s.collect(ctx, pr, in.Cursor, wait, until, waitFirst, in.TailLines, min(in.MaxBytes, 64<<10), in.View == "raw")
	advanced := ans.Cursor > in.Cursor || ans.DroppedBytes > 0
	pr.reads.record(!advanced && ans.State == "running")
	// A read that moved on or waited is progress, not a loop.
	return s.answer(ans, advanced || wait > 0), nil
}

// keyBytes are the keys write_process knows, for a terminal; without one,
// ctrl-c and the like are signals instead (see writeProcess).
var keyBytes = map[string]string{
	"enter": "\r", "tab": "\t", "esc": "\x1b", "escape": "\x1b", "backspace": "\x7f", "space": " ",
	"up": "\x1b[A", "down": "\x1b[B", "right": "\x1b[C", "left": "\x1b[D",
	"home": "\x1b[H", "end": "\x1b[F", "pageup": "\x1b[5~", "pagedown": "\x1b[6~", "delete": "\x1b[3~",
	"ctrl-c": "\x03", "ctrl-d": "\x04", "ctrl-z": "\x1a", `ctrl-\`: "\x1c", "ctrl-l": "\x0c", "ctrl-u": "\x15",
	"ctrl-a": "\x01", "ctrl-e": "\x05", "ctrl-r": "\x12", "ctrl-w": "\x17",
}

// keySignals are the keys that, without a terminal, signal the process.
var keySignals = map[string]syscall.Signal{"ctrl-c": syscall.SIGINT, "ctrl-z": sigTSTP, `ctrl-\`: syscall.SIGQUIT}

func (s *set) writeProcess(ctx context.Context, in WriteInput) (tool.Result, error) {
	o := ownerOf(ctx)
	pr, e := s.procs.get(o, in.ID)
	if e != nil {
		remote, e := s.procs.elsewhere(ctx, o, in.ID)
		if e == nil {
			e = endedElsewhere(remote)
		}
		if e == nil {
			e = runsElsewhere(remote, s.procs.board.replica)
		}
		return errResult(e), nil
	}
	if in.Text == "" && len(in.Keys) == 0 && !in.EOF {
		return errResult(tool.Errorf(tool.InvalidArguments, "nothing to write").
			WithSuggestion(`send text (e.g. "ls\n"), keys (e.g. ["ctrl-c"]) or eof: true`)), nil
	}
	if !pr.running() {
		return errResult(tool.Errorf(tool.Conflict, "process %s has exited", pr.id).
			WithSuggestion("read_process shows its last output; start it again with start_process")), nil
	}
	if pr.in == nil {
		return errResult(tool.Errorf(tool.InvalidArguments, "process %s was started with its input closed", pr.id).
			WithSuggestion(`start it again with "stdin": "open" (or "tty": true) to write to it`)), nil
	}
	var data []byte
	var signals []syscall.Signal
	if in.Text != "" {
		if pr.asksPassword() && !s.procs.limits.AllowSecretInput {
			return errResult(tool.Errorf(tool.PermissionDenied, "the process asks for a password or passphrase: a model may not type secrets").
				WithSuggestion("ask the user to enter it themselves, or stop the process (ctrl-c) and do the task without it").
				WithDetail("password_prompt", true)), nil
		}
	}
	// A line is judged whole: what earlier writes typed of it comes first,
	// and keys that edit it (the shell's line is then not what was sent) are
	// refused where lines are checked.
	pr.lineMu.Lock()
	defer pr.lineMu.Unlock()
	line, e := s.typed(ctx, pr, in.Text, in.Keys, in.EOF)
	if e != nil {
		return errResult(e), nil
	}
	data = append(data, in.Text...)
	for _, k := range in.Keys {
		k = strings.ToLower(strings.TrimSpace(k))
		if sig, ok := keySignals[k]; ok && !pr.tty {
			signals = append(signals, sig)
			continue
		}
		b, ok := keyBytes[k]
		if !ok {
			return errResult(tool.Errorf(tool.InvalidArguments, "unknown key %q", k).
				WithSuggestion("use enter, tab, esc, backspace, up, down, left, right, ctrl-c, ctrl-d, ctrl-z")), nil
		}
		if k == "enter" && !pr.tty {
			b = "\n"
		}
		data = append(data, b...)
	}
	if in.EOF && pr.tty {
		data = append(data, 0x04)
	}
	cursor := pr.out.size()
	if len(data) > 0 {
		if err := pr.in.write(data); err != nil {
			return errResult(tool.Errorf(tool.Conflict, "cannot write to process %s: %v", pr.id, err).
				WithSuggestion("read its output (read_process) and wait for it to take input")), nil
		}
	}
	pr.line = line
	if in.EOF && !pr.tty {
		pr.in.close()
	}
	pr.mu.Lock()
	proc := pr.proc
	pr.mu.Unlock()
	for _, sig := range signals {
		if proc != nil {
			signalTree(proc, sig)
		}
	}
	s.procs.emit(ProcessEvent{Kind: "write", ID: pr.id, Owner: pr.principal, Session: pr.session, Bytes: len(data)})
	ans := s.collect(ctx, pr, cursor, time.Duration(in.WaitMS)*time.Millisecond, nil, waitQuiet, 0, defaultMaxBytes, false)
	return s.answer(ans, true), nil
}

// checkLines checks what is written to a shell or a REPL as
// execute_command or run_code would check it, line by line: a line the
// check denies is never written, one it asks about needs approval.
// editKeys change a terminal's line in ways the gateway cannot follow
// (the line editor, history, completion).
var editKeys = map[string]bool{"tab": true, "backspace": true, "up": true, "down": true, "left": true, "right": true,
	"esc": true, "escape": true, "ctrl-r": true, "ctrl-w": true, "ctrl-a": true, "ctrl-e": true, "ctrl-k": true, "ctrl-y": true}

func (s *set) typed(ctx context.Context, pr *process, text string, keys []string, eof bool) (string, *tool.Error) {
	if pr.kind != "shell" && pr.kind != "code" {
		return "", nil
	}
	what := map[string]string{"shell": "shell", "code": "REPL"}[pr.kind]
	for _, c := range text {
		if c == 0x7f || c < 0x20 && c != '\n' && c != '\r' && (c != '\t' || pr.tty) {
			return "", tool.Errorf(tool.PermissionDenied, "the text holds control character %q, which edits the line of a %s whose lines the policy checks", c, what).
				WithSuggestion(`type the line as plain text ending in "\n"; use keys (ctrl-c) for signals`)
		}
	}
	line := pr.line + strings.ReplaceAll(text, "\r", "\n")
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		if e := s.checkLines(ctx, pr, line[:i]); e != nil {
			return "", e
		}
		line = line[i+1:]
	}
	for _, k := range keys {
		k = strings.ToLower(strings.TrimSpace(k))
		switch {
		case k == "enter":
			if e := s.checkLines(ctx, pr, line); e != nil {
				return "", e
			}
			line = ""
		case !pr.tty: // a pipe: a signal leaves the line as it is, a key's byte joins it
			if _, sig := keySignals[k]; !sig {
				line += keyBytes[k]
			}
		case editKeys[k]:
			return "", tool.Errorf(tool.PermissionDenied, "key %q edits the line of a %s whose lines the policy checks", k, what).
				WithSuggestion(`type the whole line as text (e.g. "git status\n"); ctrl-c drops the line being typed`)
		case k == "ctrl-c" || k == "ctrl-u": // a terminal drops the line
			line = ""
		case k == "space":
			line += " "
		case line != "": // what else does to a line typed so far is not followed
			return "", tool.Errorf(tool.PermissionDenied, "key %q on a line typed so far (%q) of a %s whose lines the policy checks", k, line, what).
				WithSuggestion(`end the line with "\n" or enter first, or drop it with ctrl-c`)
		}
	}
	if eof {
		if e := s.checkLines(ctx, pr, line); e != nil {
			return "", e
		}
		line = ""
	}
	return line, nil
}

func (s *set) checkLines(ctx context.Context, pr *process, text string) *tool.Error {
	check := map[string]func(string) Finding{"shell": CheckShell, "code": CheckCode}[pr.kind]
	if check == nil {
		return nil
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if e := s.verdict(ctx, check(line)); e != nil {
			return e.WithDetail("line", line)
		}
		if e := s.lineRules(ctx, pr, line); e != nil {
			return e.WithDetail("line", line)
		}
	}
	return nil
}

// lineRules judges a line written to a shell or a REPL by the policy's
// rules (Options.Rules), as a call of execute_command or run_code by the
// same caller would be judged.
func (s *set) lineRules(ctx context.Context, pr *process, line string) *tool.Error {
	if s.opts.Rules == nil {
		return nil
	}
	t, args := s.commandTool, map[string]any{"command": line}
	if pr.kind == "code" {
		t, args = s.codeTool, map[string]any{"language": pr.program, "code": line}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return tool.Errorf(tool.InvalidArguments, "the line cannot be judged: %v", err)
	}
	def := t.Definition()
	by := ownerOf(ctx).call
	d := s.opts.Rules(def, tool.Call{Name: def.Name, Args: raw, Principal: by.Principal, Session: by.Session, Auth: by.Auth})
	switch d.Effect {
	case policy.Deny:
		return tool.Errorf(tool.PermissionDenied, "this line is not written: %s", d.Reason).WithDetail("rule", d.Rule).
			WithSuggestion("the policy refuses it as a call of %s: do not retry it in another form; do the task another way", def.Name)
	case policy.Ask:
		if isApproved(ctx) {
			return nil
		}
		return tool.NeedsApproval(fmt.Sprintf("the policy asks about this line as a call of %s: %s", def.Name, d.Reason)).WithDetail("rule", d.Rule)
	}
	return nil
}

// shells and repls are the programs whose input is checked line by line.
var (
	shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "fish": true, "dash": true, "ksh": true, "ash": true, "mksh": true, "busybox": true}
	repls  = map[string]bool{"python": true, "python3": true, "ipython": true, "ipython3": true, "node": true, "nodejs": true, "deno": true,
		"bun": true, "irb": true, "ruby": true, "php": true, "perl": true, "lua": true, "julia": true, "R": true, "ghci": true}
)

// programKind is how the input of the process spec runs is checked:
// "shell" for a shell, "code" for an interpreter (a REPL; program is its
// name without a version: "python"), "" otherwise. Any program is taken
// as reading commands when it is started through a shell line that is one
// word list: `bash`, `python3 -i`.
func programKind(spec sandbox.Spec) (kind, program string) {
	argv := spec.Argv
	if spec.Shell != "" {
		argv = strings.Fields(spec.Shell)
	}
	if len(argv) == 0 {
		return "", ""
	}
	name := path.Base(argv[0])
	if shells[name] {
		return "shell", name
	}
	base := strings.TrimRight(name, "0123456789.")
	if repls[name] || repls[base] {
		return "code", base
	}
	// A shell line that runs something else (a script, a pipeline)
	// may still be a shell: check as one.
	if spec.Shell != "" && strings.ContainsAny(spec.Shell, "|;&") {
		return "shell", "sh"
	}
	return "", ""
}

func (s *set) stopProcess(ctx context.Context, in StopInput) (tool.Result, error) {
	o := ownerOf(ctx)
	sig, ok := map[string]syscall.Signal{"": syscall.SIGTERM, "TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP,
		"QUIT": syscall.SIGQUIT, "KILL": syscall.SIGKILL}[strings.TrimPrefix(strings.ToUpper(in.Signal), "SIG")]
	if !ok {
		return errResult(tool.Errorf(tool.InvalidArguments, "unknown signal %q", in.Signal).WithSuggestion("use TERM, INT, HUP, QUIT or KILL")), nil
	}
	grace := time.Duration(in.GraceMS) * time.Millisecond
	var list []*process
	switch {
	case in.All:
		list = s.procs.list(o)
	case in.ID == "":
		return errResult(tool.Errorf(tool.InvalidArguments, "give id, or all: true").WithSuggestion("list_processes shows the ids")), nil
	default:
		pr, e := s.procs.get(o, in.ID)
		if e != nil {
			remote, e := s.procs.elsewhere(ctx, o, in.ID)
			switch {
			case e != nil:
			case remote.State == "running":
				e = runsElsewhere(remote, s.procs.board.replica)
			default: // nothing to stop: say how it ended
				a := entryAnswer(remote)
				text := fmt.Sprintf("process %s (%s): %s (%s)\n", remote.ID, remote.Name, a.State, a.Reason)
				return tool.Result{Content: []tool.Content{tool.TextContent(text)},
					Structured: StopAnswer{ID: remote.ID, State: a.State, Reason: a.Reason, ExitCode: a.ExitCode, Signal: a.Signal}}, nil
			}
			return errResult(e), nil
		}
		list = []*process{pr}
	}
	var wg sync.WaitGroup
	for _, pr := range list {
		if pr.running() {
			s.procs.emit(ProcessEvent{Kind: "stop", ID: pr.id, Owner: pr.principal, Session: pr.session, Command: pr.command})
			wg.Go(func() { pr.stop(sig, grace, ReasonStopped) })
		}
	}
	wg.Wait()
	answers := make([]StopAnswer, 0, len(list))
	var b strings.Builder
	for _, pr := range list {
		st := pr.snapshot()
		answers = append(answers, StopAnswer{ID: pr.id, State: st.name(), Reason: st.reason, ExitCode: st.exitCode, Signal: st.signal})
		fmt.Fprintf(&b, "process %s (%s): %s (%s", pr.id, pr.name, st.name(), st.reason)
		if st.signal != "" {
			b.WriteString(", " + st.signal)
		} else if st.exitCode != nil {
			fmt.Fprintf(&b, ", exit code %d", *st.exitCode)
		}
		b.WriteString(")\n")
	}
	if len(list) == 0 {
		b.WriteString("no process to stop\n")
	}
	if in.All {
		return tool.Result{Content: []tool.Content{tool.TextContent(b.String())}, Structured: map[string]any{"stopped": answers}}, nil
	}
	return tool.Result{Content: []tool.Content{tool.TextContent(b.String())}, Structured: answers[0]}, nil
}

func (s *set) listProcesses(ctx context.Context, in ListInput) (tool.Result, error) {
	all := in.IncludeExited == nil || *in.IncludeExited
	out := []ProcessInfo{}
	var b strings.Builder
	o := ownerOf(ctx)
	for _, pr := range s.procs.list(o) {
		st := pr.snapshot()
		if st.exited && !all {
			continue
		}
		info := ProcessInfo{ID: pr.id, Name: pr.name, Command: pr.command, State: st.name(), Started: pr.started.UTC().Format(time.RFC3339),
			ExitCode: st.exitCode, Signal: st.signal, CPUMS: st.cpu.Milliseconds(), OutputBytes: pr.out.size()}
		if st.exited {
			info.Reason = st.reason
		}
		out = append(out, info)
	}
	remote, e := s.procs.listElsewhere(ctx, o)
	if e != nil {
		b.WriteString("(the processes of other replicas are not listed: " + e.Message + ")\n")
	}
	for _, r := range remote {
		if r.State != "running" && !all {
			continue
		}
		a := entryAnswer(r)
		out = append(out, ProcessInfo{ID: r.ID, Name: r.Name, Command: r.Command, State: r.State, Reason: a.Reason,
			Started: r.Started.UTC().Format(time.RFC3339), ExitCode: a.ExitCode, Signal: r.Signal, CPUMS: r.CPU.Milliseconds(),
			OutputBytes: r.Total, Replica: r.Replica})
	}
	for _, info := range out {
		fmt.Fprintf(&b, "%s  %-8s %s  %s", info.ID, info.State, info.Name, info.Reason)
		if info.Replica != "" {
			b.WriteString("  (on replica " + info.Replica + ")")
		}
		b.WriteString("\n")
	}
	if len(out) == 0 {
		b.WriteString("no processes\n")
	}
	return tool.Result{Content: []tool.Content{tool.TextContent(b.String())}, Structured: map[string]any{"processes": out}}, nil
}
