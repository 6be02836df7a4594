package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The levels of confinement, strongest first. A Level is measured by
// running a command (Probe) and reading what held, never from what the
// backend was asked to do.
const (
	// LevelFull: the user, mount, pid, net, ipc, uts and cgroup
	// namespaces, Landlock, the seccomp filter and no_new_privs all held.
	LevelFull = "full"
	// LevelReduced: the seccomp filter and no_new_privs held, but a
	// namespace or Landlock did not: the Reduced backend (no namespaces:
	// a restricted pod, a masked /proc, a runtime's seccomp profile),
	// bubblewrap without a user namespace of its own, gVisor (no
	// Landlock).
	LevelReduced = "reduced"
	// LevelNone: no command can run confined here; the command tools are
	// not offered.
	LevelNone = "none"
)

// Level is how strongly commands are confined on this machine: the
// level, the backend that reached it, the layers that did not hold, and
// for each what would give it.
type Level struct {
	Level   string `json:"level"`
	Backend string `json:"backend,omitempty"`
	// Missing names the layers that did not hold: "user namespace",
	// "landlock", "seccomp", "cgroup"…, or why nothing could run.
	Missing []string `json:"missing,omitempty"`
	// Remedies says, for the missing layers, which chart value or node
	// setting gives them.
	Remedies []string `json:"remedies,omitempty"`
	// Skipped are the stronger backends that could not run here, and why.
	Skipped []string `json:"skipped,omitempty"`
}

// Meets reports whether l is at least the level require ("full" or
// "reduced"; "" is "full").
func (l Level) Meets(require string) bool {
	rank := map[string]int{LevelNone: 0, LevelReduced: 1, LevelFull: 2}
	if require == "" {
		require = LevelFull
	}
	need, known := rank[require]
	return known && rank[l.Level] >= need // a level nobody knows is never met
}

// namespaceKinds are the namespaces a sandboxed command should run in, by
// the names Protections.Namespaces uses, with their /proc/PID/ns names.
var namespaceKinds = []struct{ name, proc string }{
	{"user", "user"}, {"mount", "mnt"}, {"pid", "pid"}, {"net", "net"},
	{"ipc", "ipc"}, {"uts", "uts"}, {"cgroup", "cgroup"},
}

// remedies are what gives each missing layer, for the messages of a
// refused command and /readyz.
var remedies = map[string]string{
	"user namespace": "user namespaces: the chart's sandbox.mode=userns (hostUsers: false and its seccomp profile), " +
		"or on a node sysctl user.max_user_namespaces > 0 (and kernel.apparmor_restrict_unprivileged_userns=0 where AppArmor restricts them)",
	"mount namespace": "a fresh /proc and mounts: the chart's sandbox.mode=userns (procMount: Unmasked, its seccomp profile, AppArmor unconfined)",
	"landlock":        "Landlock: a node kernel of 5.13 or later with landlock in its lsm= list (gVisor has none)",
	"seccomp":         "seccomp filters: a kernel with CONFIG_SECCOMP_FILTER, and a container that may load one (no_new_privs)",
	"signal scoping": "commands kept from signalling the server: a pid namespace (the chart's sandbox.mode=userns or gvisor), " +
		"or without one Landlock ABI 6: a node kernel of 6.12 or later",
}

// signalScopeABI is the Landlock ABI that keeps a command from signalling
// processes outside its domain; without a pid namespace nothing else does.
const signalScopeABI = 6

// Classify returns the level that protections p give, with the layers
// that did not hold.
func Classify(p Protections) Level {
	var missing []string
	for _, k := range namespaceKinds {
		if !slices.Contains(p.Namespaces, k.name) {
			missing = append(missing, k.name+" namespace")
		}
	}
	if !strings.HasPrefix(p.Landlock, "v") {
		missing = append(missing, "landlock")
	}
	if !p.Seccomp {
		missing = append(missing, "seccomp")
	}
	if !p.NoNewPrivs {
		missing = append(missing, "no_new_privs")
	}
	v, _ := strconv.Atoi(strings.TrimPrefix(p.Landlock, "v"))
	unscoped := !slices.Contains(p.Namespaces, "pid") && (!strings.HasPrefix(p.Landlock, "v") || v < signalScopeABI)
	if unscoped {
		missing = append(missing, "signal scoping") // the command can kill the server
	}
	l := Level{Level: LevelFull}
	switch {
	case !p.Seccomp || !p.NoNewPrivs || unscoped:
		l.Level = LevelNone
	case len(missing) > 0:
		l.Level = LevelReduced
	}
	if strings.HasPrefix(p.Cgroup, "none") {
		missing = append(missing, "cgroup") // the rlimits still hold
	}
	l.Missing = missing
	for _, m := range missing {
		if r, ok := remedies[m]; ok && !slices.Contains(l.Remedies, r) {
			l.Remedies = append(l.Remedies, r)
		}
	}
	return l
}

// Probe runs one command (true, in an empty workspace) through b and
// returns the level its measured protections give; LevelNone, with the
// reason, when no command could run. The command's exit status does not
// matter (a minimal image may have no true): the sandbox is set up, and
// measured, before the command starts.
func Probe(ctx context.Context, b Backend) Level {
	if runtime.GOOS != "linux" {
		return Level{Level: LevelNone, Missing: []string{"toolgate's command sandbox needs Linux (this is " + runtime.GOOS + ")"}}
	}
	dir, err := os.MkdirTemp("", "toolgate-probe-")
	if err != nil {
		return Level{Level: LevelNone, Missing: []string{"probe: " + err.Error()}}
	}
	defer os.RemoveAll(dir)
	o, err := b.Run(ctx, Spec{Argv: []string{"true"}, Root: dir})
	if err != nil {
		l := Level{Level: LevelNone, Missing: []string{err.Error()}}
		if strings.Contains(err.Error(), "proc") {
			l.Remedies = []string{remedies["mount namespace"]}
		}
		return l
	}
	l := Classify(o.Protections)
	l.Backend, l.Skipped = o.Backend, o.Skipped
	return l
}

// ErrBelowRequired: the sandbox here is weaker than the policy requires;
// the command did not run (or, when it was found only after it ran, its
// result is withheld).
var ErrBelowRequired = errors.New("the sandbox is weaker than the policy requires")

// Leveled runs commands through Backend only while the sandbox's level is
// at least Require: it probes the level once (Level), refuses every
// command below it with ErrBelowRequired naming what is missing, and
// checks each command's measured protections again after it ran (a
// backend that fell back to a weaker one is caught too).
type Leveled struct {
	Backend Backend
	// Require is "full" (the default when empty) or "reduced".
	Require string

	once  sync.Once
	level Level
}

// Name is the backend's name.
func (g *Leveled) Name() string { return g.Backend.Name() }

// Level probes the level once and returns it.
func (g *Leveled) Level(ctx context.Context) Level {
	g.once.Do(func() { g.level = Probe(ctx, g.Backend) })
	return g.level
}

// Run runs spec when the level is high enough.
func (g *Leveled) Run(ctx context.Context, spec Spec) (Outcome, error) {
	l := g.Level(ctx)
	if !l.Meets(g.Require) {
		return Outcome{}, belowError(g.Require, l)
	}
	spec.Require = cmp.Or(g.Require, LevelFull) // refused before it runs where the backend measures first
	// Never a weaker backend than the one the level was measured with: a
	// stronger one that fails now (out of processes, a mount refused) is
	// an error to retry, not a reason to run the command with less.
	b := g.Backend
	if c, ok := b.(*Chain); ok && l.Backend != "" {
		b = c.upTo(l.Backend)
	}
	o, err := b.Run(ctx, spec)
	if err != nil {
		return o, err
	}
	if l := Classify(o.Protections); !l.Meets(g.Require) {
		l.Backend = o.Backend
		return Outcome{}, belowError(g.Require, l)
	}
	return o, nil
}

// belowError is the error of a command refused because the level l is
// below require ("" is "full"): it names both, what is missing and what
// gives it, and is ErrBelowRequired; LevelOf returns l from it.
func belowError(require string, l Level) error {
	req := cmp.Or(require, LevelFull)
	msg := fmt.Sprintf("%v: the policy requires %s (sandbox.require), this machine gives %s", ErrBelowRequired, req, l.Level)
	if len(l.Missing) > 0 {
		msg += "; missing: " + strings.Join(l.Missing, ", ")
	}
	if len(l.Remedies) > 0 {
		msg += "; to get them: " + strings.Join(l.Remedies, "; ")
	}
	return &levelError{msg: msg, level: l}
}

type levelError struct {
	msg   string
	level Level
}

// LevelOf returns the level measured when a command was refused for being
// below the policy's (an error that is ErrBelowRequired).
func LevelOf(err error) (Level, bool) {
	var le *levelError
	if errors.As(err, &le) {
		return le.level, true
	}
	return Level{}, false
}

func (e *levelError) Error() string        { return e.msg }
func (e *levelError) Is(target error) bool { return target == ErrBelowRequired }
