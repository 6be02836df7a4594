package sandbox

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"time"
)

// Backend runs one command under some confinement.
//
// Run returns an error only when the command could not be run as asked (the
// spec is invalid, the backend is unavailable, the sandbox could not be set
// up); a command that ran and failed, was killed, timed out or hit a limit is
// an Outcome (see Outcome.Killed and Outcome.LimitsHit), never an error.
// Backends are safe for concurrent use.
type Backend interface {
	// Name is the backend's short name: "native", "bwrap", "dry-run", "chain".
	Name() string
	Run(ctx context.Context, spec Spec) (Outcome, error)
}

// Spec is what to run and how confined.
type Spec struct {
	// Argv is the program and its arguments. A program name without a slash
	// is looked up in the sandbox's PATH. Exactly one of Argv and Shell is set.
	Argv []string
	// Shell is a shell command line, run as /bin/sh -c Shell.
	Shell string

	// Root is the workspace: an absolute host path, mounted writable at the
	// same path inside the sandbox.
	Root string
	// Dir is the working folder, relative to Root ("" or "." is Root itself).
	// It may not climb out of Root.
	Dir string
	// Env is the whole environment of the command, NAME=value: nothing of
	// the caller's environment passes unless listed here. The sandbox adds
	// PATH, HOME, TMPDIR, LANG, TERM and the tools' cache folders when
	// absent (see DefaultEnv) and, with a proxy network, the proxy
	// variables.
	Env []string
	// Stdin is the command's standard input; nil means empty.
	Stdin []byte

	Limits Limits
	// Network is the command's network: none by default.
	Network Network

	// Writable lists absolute host paths (besides Root) mounted writable at
	// the same path; ReadOnly lists absolute host paths mounted read-only.
	// Missing paths are an error. Everything else but /tmp and /dev/shm
	// is read-only.
	Writable []string
	ReadOnly []string

	// Stream, when set, receives the command's standard output and error
	// as they are written, in one stream in the order they came (one
	// pipe, or the terminal with TTY); Outcome.Stdout and Stderr then stay
	// empty and Limits.Output does not apply: the caller bounds what it
	// keeps. Only the native backend streams (others: ErrUnsupported).
	Stream io.Writer
	// Input, with Stream, is the command's standard input, copied until it
	// ends (then the input is closed; with TTY, left open). Stdin is
	// ignored.
	Input io.Reader
	// TTY, with Stream, makes a pseudo-terminal of 80x24 the command's
	// standard input, output and error (and its controlling terminal).
	TTY bool
	// Started, when set, is called with the command's process (the init
	// of its pid namespace) once it runs: signals sent to it reach the
	// command. Killing it ends the whole tree.
	Started func(p *os.Process)
	// Refused, when set, is told each system call the sandbox refuses
	// (as Outcome.Blocked names it: "socket(AF_UNIX)", "ptrace") as it
	// happens, where the backend can tell (Protections.SeccompReport):
	// a long-lived command's refusals are known before it ends. It must
	// not block. Only the native backend reports them.
	Refused func(call string)
	// Pod, when set, runs the command in that pod's user and network
	// namespaces (a loopback shared with the pod's other commands),
	// instead of new ones. Only the native backend has pods.
	Pod *Pod

	// Require, when set ("full" or "reduced"), is the least level the
	// command may run at, judged on what held (Classify of the measured
	// protections) before the command starts: the native backend, which
	// measures before exec, refuses below it with ErrBelowRequired and the
	// command never runs; the others are checked after (Leveled).
	Require string

	// PrivateHome makes the home folder (Home) a writable tmpfs of the
	// command's own, gone with it, instead of an empty read-only folder:
	// for a long-lived server (Native.Start) that keeps state there.
	PrivateHome bool
}

// Limits bound what a command may consume. A zero field takes the default
// of DefaultLimits; there is no way to ask for "unlimited".
type Limits struct {
	Wall      time.Duration // wall-clock time; then the whole process tree is killed
	CPU       time.Duration // CPU time per process (RLIMIT_CPU), and a CPU share of 1 core (cgroup)
	Memory    int64         // bytes of memory for the whole tree (cgroup; RLIMIT_DATA per process without one)
	Processes int           // processes and threads at once (cgroup pids; RLIMIT_NPROC in the user namespace)
	Output    int           // bytes kept of stdout and of stderr each; the middle of longer output is cut
	FileSize  int64         // largest file a process may write (RLIMIT_FSIZE)
	OpenFiles int           // open file descriptors per process (RLIMIT_NOFILE)
	// CPUByCgroup makes the cgroup's quota of one core the only CPU
	// bound where it holds: a rate, never a total that would kill a
	// long-lived server; RLIMIT_CPU (CPU) is then not set, and bounds
	// CPU only where no cpu cgroup could be limited.
	CPUByCgroup bool
}

// DefaultLimits returns the limits used for zero fields of Limits: 30 s
// wall, 60 s CPU, 512 MiB memory, 128 processes, 64 KiB of each output
// stream, 256 MiB files, 256 open files.
func DefaultLimits() Limits {
	return Limits{
		Wall:      30 * time.Second,
		CPU:       60 * time.Second,
		Memory:    512 << 20,
		Processes: 128,
		Output:    64 << 10,
		FileSize:  256 << 20,
		OpenFiles: 256,
	}
}

// withDefaults returns l with zero fields replaced by DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.Wall <= 0 {
		l.Wall = d.Wall
	}
	if l.CPU <= 0 {
		l.CPU = d.CPU
	}
	if l.Memory <= 0 {
		l.Memory = d.Memory
	}
	if l.Processes <= 0 {
		l.Processes = d.Processes
	}
	if l.Output <= 0 {
		l.Output = d.Output
	}
	if l.FileSize <= 0 {
		l.FileSize = d.FileSize
	}
	if l.OpenFiles <= 0 {
		l.OpenFiles = d.OpenFiles
	}
	return l
}

// TTYRows and TTYCols are the size of a command's terminal (Spec.TTY).
const (
	TTYRows = 24
	TTYCols = 80
)

// ProxyPort is the loopback port, inside the sandbox, on which a proxy
// network is reached: HTTP_PROXY and HTTPS_PROXY are http://127.0.0.1:3128.
const ProxyPort = 3128

// Network is a command's network. The zero value is no network at all: a
// fresh network namespace with no interface up, and no inet, netlink,
// packet or vsock socket can even be created.
//
// With a proxy, the namespace's loopback is up and a listening socket on
// 127.0.0.1:ProxyPort inside it is accepted from outside by the backend,
// which joins each connection to the proxy (dialing Proxy, or calling
// Dial). Nothing else is reachable: the namespace has no other interface
// and no route, and no host socket path is visible. The proxy (e.g. the
// package sandbox/egress) decides what may pass.
type Network struct {
	// Proxy is the host address (host:port) of an HTTP CONNECT proxy.
	Proxy string
	// Dial, when set, opens a connection to the proxy instead of dialing
	// Proxy over TCP (e.g. to reach an in-process proxy).
	Dial func(ctx context.Context) (net.Conn, error)
}

// Enabled reports whether n lets the command reach a proxy.
func (n Network) Enabled() bool { return n.Proxy != "" || n.Dial != nil }

// Mode is "none" or "proxy".
func (n Network) Mode() string {
	if n.Enabled() {
		return "proxy"
	}
	return "none"
}

// Outcome is how a command ended, what it printed and used, and which
// protections held while it ran.
type Outcome struct {
	// Backend is the name of the backend that ran the command.
	Backend string `json:"backend"`
	// Command is the argv that ran (or, for dry-run, would run) inside the
	// sandbox, and Launcher the host command that started it, if any.
	Command  []string `json:"command"`
	Launcher []string `json:"launcher,omitempty"`
	// DryRun is true when nothing ran.
	DryRun bool `json:"dry_run,omitempty"`
	// Skipped lists the backends a Chain tried first and why they could
	// not run the command ("native: …").
	Skipped []string `json:"skipped,omitempty"`

	// ExitCode is the command's exit status, or -1 when a signal ended it.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that ended the command ("SIGKILL"), if any.
	Signal string `json:"signal,omitempty"`
	// Killed says why the sandbox ended the command: "" (it ended by
	// itself), "timeout", "memory", "output" or "cancelled".
	Killed string `json:"killed,omitempty"`
	// LimitsHit lists the limits the command ran into: "wall", "cpu",
	// "memory", "processes", "output", "file_size".
	LimitsHit []string `json:"limits_hit,omitempty"`
	// Blocked lists the system calls the sandbox refused (e.g.
	// "socket(AF_INET)", "ptrace"), when the backend can tell.
	Blocked []string `json:"blocked,omitempty"`

	Stdout          []byte `json:"-"`
	Stderr          []byte `json:"-"`
	StdoutTruncated bool   `json:"stdout_truncated,omitempty"`
	StderrTruncated bool   `json:"stderr_truncated,omitempty"`

	Usage       Usage       `json:"usage"`
	Protections Protections `json:"protections"`
}

// Usage is what a command consumed.
type Usage struct {
	Wall       time.Duration `json:"wall_ns"`
	CPU        time.Duration `json:"cpu_ns"`        // user + system, of the whole tree when a cgroup counts it
	MaxRSS     int64         `json:"max_rss_bytes"` // peak memory, of the whole tree when a cgroup counts it
	OutputSize int64         `json:"output_bytes"`  // stdout + stderr bytes the command wrote, kept or not
}

// Protections is what confined a command while it ran, as measured by the
// backend (not as configured): a protection that could not be applied says
// why.
type Protections struct {
	// Namespaces lists the namespaces the command ran in: user, mount, pid,
	// net, ipc, uts, cgroup.
	Namespaces []string `json:"namespaces"`
	// Filesystem describes the file system view ("minimal read-only system,
	// writable workspace").
	Filesystem string `json:"filesystem,omitempty"`
	// Landlock is "v<ABI>" when a Landlock ruleset was enforced, else
	// "unavailable: <reason>".
	Landlock string `json:"landlock"`
	// Seccomp is true when the seccomp filter was loaded; SeccompReport
	// whether blocked calls are reported in Outcome.Blocked.
	Seccomp       bool `json:"seccomp"`
	SeccompReport bool `json:"seccomp_report,omitempty"`
	// Cgroup is "v2", "v1" or "none: <reason>"; CgroupLimits the limits it
	// enforced ("memory", "pids", "cpu").
	Cgroup       string   `json:"cgroup"`
	CgroupLimits []string `json:"cgroup_limits,omitempty"`
	// Rlimits lists the resource limits set, e.g. "cpu=60s".
	Rlimits []string `json:"rlimits,omitempty"`
	// NoNewPrivs is true when the command could not gain privileges
	// through exec (no_new_privs), and Capabilities "none" when it held no
	// capability at all.
	NoNewPrivs   bool   `json:"no_new_privs"`
	Capabilities string `json:"capabilities,omitempty"`
	// Network is "none" or "proxy".
	Network string `json:"network"`
	// User is the command's user inside the sandbox and the host user it
	// maps to, e.g. "0 -> host 1000".
	User string `json:"user,omitempty"`
}

// Errors a backend returns (wrapped) when it cannot run a spec.
var (
	// ErrUnavailable: the backend cannot run here (not Linux, no user
	// namespaces, bwrap missing, …). A Chain moves on to the next backend.
	ErrUnavailable = errors.New("sandbox backend unavailable")
	// ErrUnsupported: the backend cannot give what the spec asks (e.g. a
	// proxy network). A Chain moves on to the next backend.
	ErrUnsupported = errors.New("sandbox backend does not support this spec")
	// ErrInvalidSpec: the spec itself is wrong (no command, a relative
	// Root, a Dir outside Root, …). A Chain stops.
	ErrInvalidSpec = errors.New("invalid sandbox spec")
	// ErrLinkedReadOnly (with ErrInvalidSpec): a read-only file has
	// other hard links, through which it would be writable from any
	// that lies where the command may write (where they lie is not
	// looked for: refused whatever their file system).
	ErrLinkedReadOnly = errors.New("a read-only file has other hard links")
	// ErrRefused: a Chain with no backend able to run the spec, and no
	// dry-run fallback, refuses to run it unconfined.
	ErrRefused = errors.New("no sandbox backend could run the command; refusing to run it unconfined")
)
