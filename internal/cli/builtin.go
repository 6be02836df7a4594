package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/internal/procs"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/toolsets/exec"
	"github.com/toolgate/toolgate/toolsets/fs"
	"github.com/toolgate/toolgate/toolsets/web"
)

// toolsets are the built-in tools and what they hold open.
type toolsets struct {
	tools  []tool.Tool
	roots  *fs.Roots
	native *sandbox.Native
	// reduced is the sandbox without namespaces, last in the chain.
	reduced *sandbox.Reduced
	net     *network
	procs   *exec.Processes
	// level is the sandbox's measured level (nil: not measured yet), and
	// withheld names the command tools not offered, and why (empty when
	// they are offered).
	level    *sandbox.Level
	withheld string
}

func (t *toolsets) Close() error {
	if t.procs != nil {
		t.procs.Close() // its processes run in native's sandboxes
	}
	if t.native != nil {
		t.native.Close()
	}
	if t.reduced != nil {
		t.reduced.Close()
	}
	t.net.Close()
	if t.roots == nil { // a remote backend's: no folder here
		return nil
	}
	return t.roots.Close()
}

// builtinTools opens the roots (the current folder when none is given) and
// returns the built-in tool sets confined to them. The files toolgate itself
// depends on (the audit log, the policy file) are off limits to the tools
// when they lie inside a root.
func builtinTools(c *common) (*toolsets, error) {
	if c.remote != nil {
		return remoteTools(c)
	}
	// Commands run in the sandbox, in the first root. A long-lived server
	// keeps sandbox helpers started ahead (a pool of two), from the start
	// (each command still gets fresh namespaces, mounts and cgroup); a call of
	// a command tool starts its helper now, so that the helper's start-up
	// overlaps the rest of the set-up. The helper is toolgate-sandbox when
	// it is beside this program and of the same build, else this program.
	// A runner's sandboxes share its helpers (c.native, not theirs to close).
	native, own := c.native, c.native == nil
	if own {
		native = &sandbox.Native{Prestart: c.warm, Executable: sandboxHelper()}
		if (c.warm || c.command) && !c.noCommands {
			native.Warm()
		}
	}
	dirs := c.roots
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	roots, err := fs.OpenRoots(dirs...)
	if err != nil {
		if own {
			native.Close()
		}
		return nil, usageErr("--root: %v", err)
	}
	sets := &toolsets{roots: roots}
	if own {
		sets.native = native
	}
	rules := fs.DefaultRules()
	for _, f := range ownFiles(c) {
		for _, rel := range insideRoots(roots.Dirs(), f.path) {
			rules = append(rules, fs.Rule{Pattern: globQuote(rel), Reason: f.reason, Access: fs.ReadWrite})
			if auditLogPath(f.path) != f.path { // a folder of replicas' logs: all of it
				rules = append(rules, fs.Rule{Pattern: globQuote(rel) + "/**", Reason: f.reason, Access: fs.ReadWrite})
			}
		}
	}
	tools, err := fs.Tools(roots, fs.Options{Rules: rules, AllowHardLinks: c.files.AllowHardLinks, Parallel: procs.Widen})
	if err != nil {
		sets.Close()
		return nil, err
	}
	// Commands and http_request reach only the domains allowed (none by default).
	if sets.net, err = newNetwork(domainRules{allow: c.domains, deny: c.deniedDomains, ask: c.askedDomains}); err != nil {
		sets.Close()
		return nil, err
	}
	procDir := c.processDir
	if procDir == "" {
		procDir = filepath.Join(stateDir(), "processes")
	}
	limits := processLimits(c.processes, procDir)
	limits.Board, limits.Replica = c.board, replicaID()
	sets.procs = exec.NewProcesses(limits)
	// Commands run only at the sandbox level the policy requires
	// (sandbox.require), measured, not assumed.
	leveled := c.leveled
	if leveled == nil {
		// Where no namespace may be made (a restricted pod), the reduced
		// sandbox: Landlock, seccomp and rlimits, level reduced.
		sets.reduced = &sandbox.Reduced{Executable: sandboxHelper()}
		leveled = &sandbox.Leveled{Backend: sandbox.NewChain(native, &sandbox.Bwrap{}, sets.reduced), Require: c.require}
	}
	cmds, err := exec.Tools(exec.Options{Root: roots.Dirs()[0], Backend: leveled, Egress: sets.net.proxy,
		Protect: ownPaths(c), AllowCI: c.allowCI, MeterProvider: c.meter, Processes: sets.procs, Rules: c.lineRules})
	if err != nil {
		sets.Close()
		return nil, err
	}
	var withhold string // why the command tools are not offered
	if c.noCommands {
		withhold = "the policy's sandbox.commands is false"
	} else if c.warm || c.leveled != nil || runtime.GOOS != "linux" {
		// A server (and the agent loop) measures the sandbox's level at start
		// (a runner once for all its sandboxes); a one-off call of a command
		// tool measures it at its first command.
		// With none, the command tools are not offered: a command never runs
		// unconfined.
		l := leveled.Level(context.Background())
		sets.level = &l
		if l.Level == sandbox.LevelNone {
			withhold = "no command sandbox here (" + strings.Join(l.Missing, "; ") + ")"
		}
	}
	if withhold != "" {
		var names []string
		for _, t := range cmds {
			names = append(names, t.Definition().Name)
		}
		sets.withheld = fmt.Sprintf("%s: not offered: %s", strings.Join(names, ", "), withhold)
		cmds = nil
	}
	tools = append(tools, cmds...)
	if !c.noWeb {
		web, err := web.Tools(web.Options{Policy: sets.net.web, CacheDir: filepath.Join(stateDir(), "http-cache")})
		if err != nil {
			sets.Close()
			return nil, err
		}
		tools = append(tools, web...)
	}
	sets.tools = tools
	return sets, nil
}

// remoteTools are the tools of a gateway whose file and command tools run
// in remote sandboxes (c.remote): those forwarded to the caller's sandbox,
// and http_request, which stays here (the web is the gateway's).
func remoteTools(c *common) (*toolsets, error) {
	defs, err := sandboxDefinitions(!c.noCommands)
	if err != nil {
		return nil, err
	}
	sets := &toolsets{tools: c.remote.Tools(defs)}
	if sets.net, err = newNetwork(domainRules{allow: c.domains, deny: c.deniedDomains, ask: c.askedDomains}); err != nil {
		return nil, err
	}
	if !c.noWeb {
		web, err := web.Tools(web.Options{Policy: sets.net.web, CacheDir: filepath.Join(stateDir(), "http-cache")})
		if err != nil {
			sets.Close()
			return nil, err
		}
		sets.tools = append(sets.tools, web...)
	}
	return sets, nil
}

// processLimits are start_process's limits from the policy's processes
// block, the output of processes spilling to dir.
func processLimits(p policy.Processes, dir string) exec.ProcessLimits {
	return exec.ProcessLimits{PerOwner: p.PerOwner, PerPrincipal: p.PerPrincipal, PerServer: p.PerServer,
		Idle: p.Idle, Keep: p.Keep, MaxTimeout: p.MaxTimeout, File: p.OutputBytes, Dir: dir, AllowSecretInput: p.AllowSecretInput}
}

// processRecorder writes the starts, writes, stops and ends of processes
// into the audit log as records of the pseudo-tool "process:ID" (outcome
// the event; an end names its reason, a write its length).
func processRecorder(log *audit.Log) func(exec.ProcessEvent) {
	return func(ev exec.ProcessEvent) {
		args, _ := json.Marshal(map[string]any{"command": ev.Command, "bytes": ev.Bytes})
		rec := audit.Record{Tool: "process:" + ev.ID, Principal: ev.Owner, Session: ev.Session, Outcome: ev.Kind, Rule: ev.Reason, Arguments: args}
		if err := log.Append(context.Background(), rec); err != nil {
			slog.Error("audit log write failed", "err", err)
		}
	}
}

// ownFile is a file toolgate depends on, and why no tool may touch it.
type ownFile struct{ path, reason string }

// ownFiles are the audit log and the policy file (those given).
func ownFiles(c *common) []ownFile {
	var out []ownFile
	for _, f := range []ownFile{
		{c.auditPath, "toolgate's audit log: only toolgate writes it, and no tool may read or change it"},
		{c.policy, "toolgate's policy file: a tool may not change the rules that govern it"},
	} {
		if f.path != "" && f.path != "off" {
			out = append(out, f)
		}
	}
	return out
}

// ownPaths are ownFiles and the state folder, as absolute paths: a command
// may change none of them (exec.Options.Protect).
func ownPaths(c *common) []string {
	var out []string
	for _, f := range ownFiles(c) {
		out = append(out, realPath(f.path))
	}
	return append(out, realPath(stateDir()))
}

// insideRoots returns path relative to each root that contains it.
func insideRoots(dirs []string, path string) []string {
	abs := realPath(path)
	var out []string
	for _, d := range dirs {
		rel, err := filepath.Rel(realPath(d), abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(os.PathSeparator)) || filepath.IsAbs(rel) {
			continue
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}

// globQuote escapes the characters doublestar gives meaning to.
func globQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// realPath is path made absolute with symbolic links resolved, as far as
// they exist (a file not created yet resolves through its folder).
func realPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}
