package exec

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/egress"
	"github.com/toolgate/toolgate/tool"
)

// Options configure the command tools.
type Options struct {
	// Root is the workspace: an absolute folder, writable inside the
	// sandbox; commands run in it (or a folder below it). Required.
	Root string
	// Backend runs the commands; nil means the native sandbox
	// (&sandbox.Native{}). There is no unconfined backend.
	Backend sandbox.Backend
	// Limits bound each command; zero fields take sandbox.DefaultLimits.
	// Limits.Wall is the default timeout.
	Limits sandbox.Limits
	// MaxTimeout caps the timeout a call may ask for (default 10 minutes).
	MaxTimeout time.Duration
	// Egress, when set, is the commands' only way out: each command reaches
	// this proxy, in this process, as HTTP(S)_PROXY inside the sandbox, and
	// the connections it refused or could not make are reported (see the
	// package doc). Nil: no network at all.
	Egress *egress.Proxy
	// Env is passed to every command (NAME=value), before the call's own.
	Env []string
	// Protect lists absolute host paths of files and folders that no
	// command may change (toolgate's policy file, audit log, state
	// folder): those inside the workspace are guarded as its config paths
	// are (see guard). One that exists but cannot be mounted read-only
	// keeps every command from running.
	Protect []string
	// AllowCI reports whether the policy lets commands write the CI
	// definition rel (policy.CIPaths; a slash path relative to Root, at
	// its top: ".github/workflows", "Jenkinsfile"): an allow rule names it
	// (policy.Policy.AllowsChange). Those it does not allow are read-only
	// for commands, since a command cannot ask while it runs; nil allows
	// none.
	AllowCI func(rel string) bool
	// MaxCommand caps the length of a command, argv or code in bytes
	// (default 64 KiB).
	MaxCommand int
	// ErrorOnExit makes a non-zero exit a tool error (type "internal"
	// with the exit code in Details). By default a non-zero exit is a
	// normal result carrying exit_code, as a terminal shows it.
	ErrorOnExit bool
	// Processes is the registry of the processes start_process starts,
	// and of each caller's pod (its commands share the network of its
	// processes). Nil: Tools makes one with the default limits, which
	// nothing closes (its processes end at their timeout or idle limit);
	// a server gives its own and closes it when it stops.
	Processes *Processes
	// MeterProvider, when set, records each command's time in the sandbox
	// (toolgate.sandbox.duration, by backend). A command also gets a span
	// (toolgate.sandbox) when the context it runs in has a recording one.
	MeterProvider metric.MeterProvider
	// Rules, when set, judges each line written to a shell or a REPL
	// (write_process) as the policy judges a call of execute_command or
	// run_code by the same caller (the CLI gives policy.Policy.Decide):
	// its Bash(...) rules, mode and levels. A line it denies is not
	// written; one it asks about needs approval. Nil: the lines are
	// judged by the dangerous-command and code checks alone.
	Rules func(tool.Definition, tool.Call) policy.Decision
}

func (o Options) withDefaults() (Options, error) {
	if o.Root == "" || !filepath.IsAbs(o.Root) {
		return o, fmt.Errorf("exec: Options.Root must be an absolute folder, got %q", o.Root)
	}
	o.Root = filepath.Clean(o.Root)
	if o.Backend == nil {
		o.Backend = &sandbox.Native{}
	}
	if o.MaxTimeout <= 0 {
		o.MaxTimeout = 10 * time.Minute
	}
	if o.MaxCommand <= 0 {
		o.MaxCommand = 64 << 10
	}
	return o, nil
}

// Approved returns a context in which commands the check puts on the
// dangerous list (Ask) run: the engine sets it (tool.WithApproval) after an
// approver said yes to the call. Commands on the hard list never run.
func Approved(ctx context.Context) context.Context { return tool.WithApproval(ctx) }

func isApproved(ctx context.Context) bool { return tool.Approved(ctx) }

// CommandInput is execute_command's arguments.
type CommandInput struct {
	Command string            `json:"command,omitempty" jsonschema:"a shell command line, run by /bin/sh -c in the workspace; if omitted, argv is run (give exactly one of command and argv)"`
	Argv    []string          `json:"argv,omitempty" jsonschema:"the program and its arguments, run without a shell; if omitted, command is run (give exactly one of command and argv)"`
	Cwd     string            `json:"cwd,omitempty" jsonschema:"working folder, relative to the workspace (default: the workspace)"`
	Timeout float64           `json:"timeout,omitempty" jsonschema:"seconds before the command and everything it started are killed (default 30)" minimum:"0"`
	Env     map[string]string `json:"env,omitempty" jsonschema:"extra environment variables (by default none: nothing of the host's environment is passed; the sandbox sets PATH, HOME, TMPDIR, LANG, TERM and cache folders). Variables that load code or run programs (LD_PRELOAD, BASH_ENV, NODE_OPTIONS, PYTHONPATH, GIT_SSH_COMMAND…) are refused"`
}

// CodeInput is run_code's arguments.
type CodeInput struct {
	Language string  `json:"language" jsonschema:"the language of the code" enum:"python,node,bash"`
	Code     string  `json:"code" jsonschema:"the program's source" minLength:"1"`
	Cwd      string  `json:"cwd,omitempty" jsonschema:"working folder, relative to the workspace (default: the workspace)"`
	Timeout  float64 `json:"timeout,omitempty" jsonschema:"seconds before the program is killed (default 30)" minimum:"0"`
}

// Output is the structured result of both tools.
type Output struct {
	ExitCode        int                 `json:"exit_code"`
	Signal          string              `json:"signal,omitempty"`
	Stdout          string              `json:"stdout"`
	Stderr          string              `json:"stderr"`
	StdoutTruncated bool                `json:"stdout_truncated,omitempty"`
	StderrTruncated bool                `json:"stderr_truncated,omitempty"`
	DurationMS      int64               `json:"duration_ms"`
	Killed          string              `json:"killed,omitempty"`
	LimitsHit       []string            `json:"limits_hit,omitempty"`
	Blocked         []string            `json:"blocked,omitempty"`
	Backend         string              `json:"backend"`
	Protections     sandbox.Protections `json:"protections"`
	EgressFailures  []EgressFailure     `json:"egress_failures,omitempty"`
	// Hint says what the output suggests to do next, when it is not an
	// error (a program that ignored the proxy).
	Hint string `json:"hint,omitempty"`
	// BackgroundKilled counts the processes a shell line left running in
	// the background (server &), killed when it ended.
	BackgroundKilled int `json:"background_killed,omitempty"`
}

// The names of the tools Tools returns: a program that knows a call of one
// is coming can start a sandbox helper ahead (sandbox.Native.Warm) while it
// sets up the rest.
const (
	ExecuteCommand = "execute_command"
	RunCode        = "run_code"
)

// Tools returns execute_command and run_code, tagged "exec", level 2.
func Tools(opts Options) ([]tool.Tool, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &set{opts: o, sandboxTime: newSandboxTimer(o.MeterProvider), procs: o.Processes}
	if s.procs == nil {
		s.procs = NewProcesses(ProcessLimits{})
	}
	common := []tool.Option{
		tool.WithLevel(tool.LevelMedium),
		tool.WithAnnotations(tool.Annotations{Destructive: true, OpenWorld: o.Egress != nil}),
		tool.WithTags("exec"),
	}
	tools := []tool.Tool{
		lazyTool(ExecuteCommand,
			"Run a shell command (or an argv) in a sandbox over the workspace: the system is read-only, "+
				"the network is "+networkWords(o.Egress)+", and the command is killed at its timeout. "+
				"Returns exit_code, stdout and stderr; a non-zero exit is a result, not an error.\n"+
				"Use it to build, test, run git or other programs in the workspace. Do not use it to read, search, "+
				"write or edit files: read_file, search_files, write_file and edit_file are safer and faster.\n"+
				`Example: {"command": "go test ./...", "timeout": 120}`,
			s.executeCommand, common...),
		lazyTool(RunCode,
			"Run a Python, Node.js or bash program in the same sandbox as execute_command. "+
				"Returns exit_code, stdout and stderr.\n"+
				"Use it to compute, transform data or try a snippet without writing a file first. "+
				"Not for running the project's own programs or tests: use execute_command for that.\n"+
				`Example: {"language": "python", "code": "print(sum(range(10)))"}`,
			s.runCode, common...),
	}
	s.commandTool, s.codeTool = tools[0], tools[1]
	tools = append(tools, s.processTools(o)...)
	for i, t := range tools {
		tools[i] = own(t, s.procs)
	}
	return tools, nil
}

// lazyTool is tool.New(name, desc, fn, opts...) with Output's schema as
// the output schema, built on first use (tool.Lazy): a process that runs
// another tool's call infers neither schema.
func lazyTool[In any](name, desc string, fn func(context.Context, In) (tool.Result, error), opts ...tool.Option) tool.Tool {
	return tool.Lazy(tool.HeadOf(name, desc, opts...), func() tool.Tool {
		out, err := tool.InferSchema(outputType)
		if err != nil {
			panic(fmt.Sprintf("exec: output schema of %s: %v", name, err))
		}
		return tool.New(name, desc, fn, append(slices.Clip(opts), tool.WithOutputSchema(out))...)
	})
}

type set struct {
	opts        Options
	sandboxTime metric.Float64Histogram // nil: no metrics (telemetry.go)
	procs       *Processes
	// commandTool and codeTool are execute_command and run_code, whose
	// definitions Rules judges lines by.
	commandTool, codeTool tool.Tool
}

func (s *set) executeCommand(ctx context.Context, in CommandInput) (tool.Result, error) {
	switch {
	case in.Command == "" && len(in.Argv) == 0:
		return errResult(tool.Errorf(tool.InvalidArguments, "give command (a shell line) or argv (a program and its arguments)").
			WithSuggestion(`send {"command": "ls -la"} or {"argv": ["ls", "-la"]}`)), nil
	case in.Command != "" && len(in.Argv) > 0:
		return errResult(tool.Errorf(tool.InvalidArguments, "give command or argv, not both").
			WithSuggestion("send only one of them")), nil
	}
	size := len(in.Command)
	for _, a := range in.Argv {
		size += len(a) + 1
	}
	if size > s.opts.MaxCommand {
		return errResult(tool.Errorf(tool.TooLarge, "the command is %d bytes; at most %d are accepted", size, s.opts.MaxCommand).
			WithSuggestion("write long input to a file in the workspace (e.g. with write_file) and pass its name")), nil
	}
	var f Finding
	spec := sandbox.Spec{}
	var mark string
	if in.Command != "" {
		f = CheckShell(in.Command)
		mark = newMark()
		spec.Shell = backgroundTrap(mark) + in.Command
	} else {
		f = CheckArgv(in.Argv)
		spec.Argv = in.Argv
	}
	if e := s.verdict(ctx, f); e != nil {
		return errResult(e), nil
	}
	return s.run(ctx, spec, in.Cwd, in.Timeout, in.Env, mark)
}

func (s *set) runCode(ctx context.Context, in CodeInput) (tool.Result, error) {
	if len(in.Code) > s.opts.MaxCommand {
		return errResult(tool.Errorf(tool.TooLarge, "the code is %d bytes; at most %d are accepted", len(in.Code), s.opts.MaxCommand).
			WithSuggestion("write the program to a file in the workspace and run it with execute_command")), nil
	}
	var argv []string
	check := CheckCode
	switch in.Language {
	case "python":
		argv = []string{"python3", "-c", in.Code}
	case "node":
		argv = []string{"node", "-e", in.Code}
	case "bash":
		argv, check = []string{"bash", "-c", in.Code}, CheckShell
	default:
		return errResult(tool.Errorf(tool.InvalidArguments, "unknown language %q", in.Language).
			WithSuggestion("use python, node or bash")), nil
	}
	if e := s.verdict(ctx, check(in.Code)); e != nil {
		return errResult(e), nil
	}
	if strings.TrimSpace(in.Code) == "" {
		return errResult(tool.Errorf(tool.InvalidArguments, "the code is empty").WithSuggestion("send the program's source in code")), nil
	}
	return s.run(ctx, sandbox.Spec{Argv: argv}, in.Cwd, in.Timeout, nil, "")
}

// verdict turns a finding into the error that stops the call (nil: run).
//
// Deny is a permission_denied error with Details["hard_deny"] = true:
// the command never runs. Ask is a permission_denied error with
// Details["needs_approval"] = true and Details["reason"]: the policy
// layer may ask a human and, on yes, call again with Approved(ctx).
func (s *set) verdict(ctx context.Context, f Finding) *tool.Error {
	switch f.Verdict {
	case Deny:
		return tool.Errorf(tool.PermissionDenied, "this command is never run: %s", f.Reason).
			WithSuggestion("do not retry it in another form; do the task another way, inside the workspace").
			WithDetail("hard_deny", true).WithDetail("needs_approval", false).WithDetail("reason", f.Reason).
			WithDetail("command", f.Command)
	case Ask:
		if isApproved(ctx) {
			return nil
		}
		return tool.Errorf(tool.PermissionDenied, "this command needs a human's approval: %s", f.Reason).
			WithSuggestion("ask the user to approve this exact command, or do the task without it").
			WithDetail("needs_approval", true).WithDetail("reason", f.Reason).WithDetail("command", f.Command)
	}
	return nil
}

// run runs spec; mark, when set, is the mark of backgroundTrap in its
// shell line, whose count the answer reports.
func (s *set) run(ctx context.Context, spec sandbox.Spec, cwd string, timeout float64, env map[string]string, mark string) (tool.Result, error) {
	spec, connections, g, e := s.prepare(ctx, spec, cwd, timeout, s.opts.MaxTimeout, env)
	if e != nil {
		return errResult(e), nil
	}
	o, err := s.sandboxRun(ctx, spec)
	if err != nil {
		if e := sandboxError(err); e != nil {
			return errResult(e), nil
		}
		return tool.Result{}, fmt.Errorf("running the command: %w", err)
	}
	var left int
	if mark != "" {
		o.Stderr, left = cutMark(o.Stderr, mark)
	}
	r := s.result(o, connections.failures(), g, g.check(), filepath.Join(g.root, filepath.Clean("/"+cwd)))
	if out, ok := r.Structured.(Output); ok && left > 0 {
		out.BackgroundKilled = left
		r.Structured = out
		r.Content = append(r.Content, tool.TextContent(fmt.Sprintf(
			"note: the command left %d process(es) running in the background; they were killed when it ended. "+
				"Use start_process to keep a server running (its execute_command calls reach it on the loopback).\n", left)))
	}
	return r, nil
}

// prepare completes a spec for the workspace: working folder, limits, the
// network, the environment (checked), the timeout (at most max) and the
// guard of protected entries; in the caller's pod when it has one.
func (s *set) prepare(ctx context.Context, spec sandbox.Spec, cwd string, timeout float64, maxTimeout time.Duration, env map[string]string) (sandbox.Spec, *egressLog, *guard, *tool.Error) {
	spec.Root = s.opts.Root
	spec.Dir = cwd
	spec.Limits = s.opts.Limits
	var connections *egressLog
	spec.Network, connections = s.network()
	spec.Env = append([]string(nil), s.opts.Env...)
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if e := checkEnv(k, env[k]); e != nil {
			return spec, nil, nil, e
		}
		spec.Env = setEnv(spec.Env, k, env[k])
	}
	if timeout > 0 {
		// Compared in seconds before converting: a huge timeout (1e308)
		// overflows time.Duration into a negative value that would pass.
		if timeout > maxTimeout.Seconds() {
			return spec, nil, nil, tool.Errorf(tool.InvalidArguments, "timeout %gs is over the maximum of %s", timeout, maxTimeout).
				WithSuggestion("ask for at most %g seconds", maxTimeout.Seconds())
		}
		spec.Limits.Wall = time.Duration(timeout * float64(time.Second))
	}
	// Files that act later outside the sandbox (.git, IDE tasks, shell rc,
	// toolgate's own) stay read-only even though the workspace is writable.
	g, err := newGuard(s.opts.Root, s.opts.Protect, s.opts.AllowCI)
	if we := (*policy.WorkspaceError)(nil); errors.As(err, &we) {
		return spec, nil, nil, workspaceError(we)
	}
	if err != nil {
		return spec, nil, nil, tool.Errorf(tool.Unavailable, "no command can run: toolgate cannot protect %v", err).
			WithSuggestion("ask the operator to keep toolgate's policy file, audit log and state folder outside the workspace, or to make each a plain file or folder")
	}
	spec.ReadOnly = append(spec.ReadOnly, g.readOnly...)
	spec.Writable = append(spec.Writable, g.pinned...)
	if s.procs != nil {
		spec.Pod = s.procs.podOf(ownerOf(ctx))
	}
	return spec, connections, g, nil
}

// sandboxError is the tool error for a sandbox that could not run a
// command (nil: an internal error).
func sandboxError(err error) *tool.Error {
	switch {
	case errors.Is(err, sandbox.ErrLinkedReadOnly):
		return tool.Errorf(tool.Unavailable, "the command did not run: %v", err).
			WithSuggestion("do the task with the file tools, and ask the user to make the file's other hard links copies or symbolic links")
	case errors.Is(err, sandbox.ErrInvalidSpec):
		return tool.Errorf(tool.InvalidArguments, "%v", err).
			WithSuggestion("give cwd as a folder inside the workspace, relative to it (e.g. \"src\")")
	case errors.Is(err, sandbox.ErrBelowRequired):
		return tool.Errorf(tool.SandboxViolation, "the command did not run: %v", err).
			WithSuggestion("do the task with the file tools, or ask the operator for the missing protections (or for sandbox.require: reduced in the policy)")
	case errors.Is(err, sandbox.ErrUnavailable), errors.Is(err, sandbox.ErrUnsupported), errors.Is(err, sandbox.ErrRefused):
		return tool.Errorf(tool.Unavailable, "the command did not run: no sandbox could run it: %v", err).
			WithSuggestion("retry once in a moment (a sandbox that worked may have failed for a moment); if it fails again, do the task with the file tools")
	}
	return nil
}

func setEnv(env []string, k, v string) []string {
	for i, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); name == k {
			env[i] = k + "=" + v
			return env
		}
	}
	return append(env, k+"="+v)
}

// result turns an outcome into the tool's result: the command creating or
// changing a guarded entry (b), the sandbox stopping the command (a limit,
// a refused system call, the timeout) or a connection the egress proxy
// refused or could not make is an error with the output attached; an exit
// of any code is a result. dir is the command's working folder.
func (s *set) result(o sandbox.Outcome, egressFailures []EgressFailure, g *guard, b breach, dir string) tool.Result {
	out := Output{
		ExitCode: o.ExitCode, Signal: o.Signal, Stdout: string(o.Stdout), Stderr: string(o.Stderr),
		StdoutTruncated: o.StdoutTruncated, StderrTruncated: o.StderrTruncated,
		DurationMS: o.Usage.Wall.Milliseconds(), Killed: o.Killed, LimitsHit: o.LimitsHit, Blocked: o.Blocked,
		Backend: o.Backend, Protections: o.Protections, EgressFailures: egressFailures,
	}
	meta := map[string]any{"backend": o.Backend, "protections": o.Protections, "duration_ms": out.DurationMS, "dry_run": o.DryRun}
	if o.DryRun {
		meta["command"] = o.Command
		meta["launcher"] = o.Launcher
	}
	var e *tool.Error
	switch {
	case len(b.paths) > 0:
		e = breachError(b)
	case o.Killed == "timeout":
		e = tool.Errorf(tool.Timeout, "the command ran out of time after %s and was killed, with everything it started", o.Usage.Wall.Round(time.Millisecond)).
			WithSuggestion("run something shorter, run it in smaller steps, or ask for a longer timeout").WithRetry(0)
	case o.Killed == "memory" || contains(o.LimitsHit, "memory") && o.Signal == "SIGKILL":
		e = tool.Errorf(tool.SandboxViolation, "the command was killed: it used more than its memory limit").
			WithSuggestion("use less memory (process the data in parts)").WithDetail("limit", "memory")
	case contains(o.LimitsHit, "processes"):
		e = tool.Errorf(tool.SandboxViolation, "the command hit the limit on processes (a fork bomb, or too many parallel jobs)").
			WithSuggestion("start fewer processes at once").WithDetail("limit", "processes")
	case o.Killed == "output":
		e = tool.Errorf(tool.SandboxViolation, "the command was killed: it wrote far more output than can be kept").
			WithSuggestion("redirect the output to a file in the workspace and read the part you need").WithDetail("limit", "output")
	case contains(o.LimitsHit, "file_size") || o.ExitCode == 128+25 && strings.Contains(string(o.Stderr), "File size limit exceeded"):
		// RLIMIT_FSIZE stopped a write: the file is cut at the limit. A
		// shell reports a child killed by SIGXFSZ (25) as exit 153 and
		// says so on stderr.
		e = tool.Errorf(tool.SandboxViolation, "the command was killed: it wrote a file larger than the limit (the file is cut short)").
			WithSuggestion("write less data, or split it across smaller files; delete the partial file").WithDetail("limit", "file_size")
	case contains(o.LimitsHit, "cpu"):
		e = tool.Errorf(tool.SandboxViolation, "the command was killed: it used up its CPU time").
			WithSuggestion("do less work per command").WithDetail("limit", "cpu")
	case len(o.Blocked) > 0 && !ipv6Probe(o):
		e = tool.Errorf(tool.SandboxViolation, "the sandbox refused what the command tried: %s", strings.Join(o.Blocked, ", ")).
			WithSuggestion("%s", blockedHint(o.Blocked, s.opts.Egress != nil)).WithDetail("blocked", o.Blocked)
	case o.Signal == "SIGSYS":
		e = tool.Errorf(tool.SandboxViolation, "the command was killed for a system call the sandbox forbids").
			WithSuggestion("do not use other architectures' system calls")
	case len(egressFailures) > 0:
		e = egressError(egressFailures, s.opts.Egress.Policy().Allowed())
	case o.DryRun:
	case o.ExitCode != 0 || refusedWrite(o.Stderr, s.opts.Root, dir, g):
		// A refused write outside the workspace or to a guarded entry fails
		// loudly even when the command goes on to exit 0 (echo x > /etc/x;
		// echo done).
		if st, ok := containment(o.Stderr, s.opts.Root, s.opts.Egress != nil); ok {
			e = tool.Errorf(tool.SandboxViolation, "the sandbox stopped %s", st.what).
				WithSuggestion("work inside the workspace: read and write files there (scratch files in /tmp), without network access or privileged operations").
				WithDetail("evidence", st.evidence)
			if st.path != "" {
				e.WithDetail("path", st.path)
			}
			if r := g.ciRule(st.path, st.evidence, dir); r != "" {
				e.Message += "; " + ciReadOnly([]string{r})
				e.WithSuggestion("%s", ciSuggestion).WithDetail("allow_rules", []string{r})
			}
			break
		}
		if p, rule, ok := g.busy(o.Stderr, dir); ok {
			e = tool.Errorf(tool.SandboxViolation, "the sandbox stopped the removal or renaming of %s, a protected entry of the workspace or a folder on the way to one", p).
				WithSuggestion("leave it in place; if the task needs it changed, ask the user to make the change").WithDetail("path", p)
			if rule != "" {
				e.Message += "; " + ciReadOnly([]string{rule})
				e.WithSuggestion("%s", ciSuggestion).WithDetail("allow_rules", []string{rule})
			}
			break
		}
		if s.opts.Egress != nil && networkMark().Match(o.Stderr) {
			out.Hint = proxyHint
		}
		if s.opts.ErrorOnExit && o.ExitCode != 0 {
			e = tool.Errorf(tool.Internal, "the command exited with code %d", o.ExitCode).
				WithSuggestion("read stderr in the details")
			if out.Hint != "" {
				e.WithSuggestion("%s", out.Hint)
			}
		}
	}
	text := render(out)
	if o.DryRun {
		text = "dry run: nothing was run. It would run: " + strings.Join(o.Command, " ") + "\n"
	}
	r := tool.Result{Content: []tool.Content{tool.TextContent(text)}, Structured: out, Meta: meta}
	if e != nil {
		e.WithDetail("exit_code", o.ExitCode)
		if o.Signal != "" {
			e.WithDetail("signal", o.Signal)
		}
		if len(o.LimitsHit) > 0 {
			e.WithDetail("limits_hit", o.LimitsHit)
		}
		r.Error = e
		r.Content = []tool.Content{tool.TextContent(e.Text() + "\n\n" + text)}
	}
	return r
}

// ipv6Probe reports whether the only refusal was an inet6 socket that the
// command got over (it exited 0): how libraries test for IPv6 (urllib3
// does at import, so pip --version), not an attempt to connect.
func ipv6Probe(o sandbox.Outcome) bool {
	for _, b := range o.Blocked {
		if b != "socket(AF_INET6)" {
			return false
		}
	}
	return o.ExitCode == 0
}

func blockedHint(blocked []string, network bool) string {
	for _, b := range blocked {
		if strings.HasPrefix(b, "socket(AF_INET") {
			if network {
				return "only HTTP(S) through the proxy in HTTPS_PROXY is allowed"
			}
			return "there is no network in this sandbox; work with the files in the workspace"
		}
	}
	return "the sandbox forbids this (mounts, tracing, raw sockets, namespaces…); do the task without it"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// render is the text a model reads.
func render(o Output) string {
	var b strings.Builder
	if o.Signal != "" {
		fmt.Fprintf(&b, "killed by %s", o.Signal)
	} else {
		fmt.Fprintf(&b, "exit code %d", o.ExitCode)
	}
	fmt.Fprintf(&b, " (%d ms)\n", o.DurationMS)
	if o.Stdout != "" {
		b.WriteString("--- stdout ---\n")
		b.WriteString(o.Stdout)
		if !strings.HasSuffix(o.Stdout, "\n") {
			b.WriteByte('\n')
		}
	}
	if o.Stderr != "" {
		b.WriteString("--- stderr ---\n")
		b.WriteString(o.Stderr)
		if !strings.HasSuffix(o.Stderr, "\n") {
			b.WriteByte('\n')
		}
	}
	if o.Stdout == "" && o.Stderr == "" {
		b.WriteString("(no output)\n")
	}
	writeEgress(&b, o.EgressFailures)
	if o.Hint != "" {
		b.WriteString("hint: " + o.Hint + "\n")
	}
	return b.String()
}

func errResult(e *tool.Error) tool.Result { return tool.ErrorResult(e) }

var outputType = reflect.TypeFor[Output]()

// backgroundTrap goes before a shell line: when the shell exits, its
// EXIT trap counts the live processes that its end kills (builtins only:
// it starts none) and, if there are any, writes the count after mark as
// the last line of stderr. Those are, where the shell is pid 1 (the native
// sandbox: the init of its own pid namespace), every other process of the
// namespace; elsewhere the processes of the session the shell leads (the
// reduced sandbox kills that session, where no process may leave it), and
// none when it leads no session. Never the pod's or the host's other
// processes. The trap goes on the line's first line, so that the shell's
// messages keep their line numbers; a line that sets an EXIT trap of its
// own, or ends with exec, reports nothing.
func backgroundTrap(mark string) string {
	return `trap 'n=0; for p in /proc/[0-9]*; do [ "${p#/proc/}" = "$$" ] && continue; read -r s < "$p/stat" 2>/dev/null || continue; ` +
		`set -- ${s##*) }; case "$1" in Z*) continue ;; esac; [ $$ -eq 1 ] || [ "$4" = "$$" ] || continue; n=$((n+1)); done; ` +
		`[ $n -eq 0 ] || printf "\n` + mark + `%d\n" "$n" >&2' EXIT; `
}

// newMark returns a mark for backgroundTrap: random, so that a command
// cannot guess it.
func newMark() string {
	var b [8]byte
	rand.Read(b[:])
	return "toolgate-background-" + hex.EncodeToString(b[:]) + ":"
}

// cutMark takes backgroundTrap's last line out of stderr and returns the
// count it gave (0: none).
func cutMark(stderr []byte, mark string) ([]byte, int) {
	i := bytes.LastIndex(stderr, []byte("\n"+mark))
	if i < 0 {
		return stderr, 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(stderr[i+1+len(mark):])))
	if err != nil || n <= 0 {
		return stderr, 0
	}
	return stderr[:i], n
}
