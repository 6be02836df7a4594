package policy

import "time"

// Limits is the limits section of a policy file, read by the policy and
// enforced by a Limiter (Config converts it). A zero value limits nothing
// beyond the Limiter's defaults.
type Limits struct {
	// Tools maps tool-name globs to a token bucket per tool, decided by
	// the one glob rule (GlobMap): a tool's own name, else the most
	// specific glob, else "*".
	Tools map[string]Rate `yaml:"tools,omitempty" json:"tools,omitempty"`
	// Principal is the token bucket of each principal across all tools.
	Principal Rate `yaml:"principal,omitempty" json:"principal,omitempty"`
	// ToolPrincipal maps tool-name globs to a token bucket per tool and
	// principal.
	ToolPrincipal map[string]Rate `yaml:"tool_principal,omitempty" json:"tool_principal,omitempty"`
	// Concurrency caps the calls of one tool running at once (0: no cap).
	Concurrency int `yaml:"concurrency,omitempty" json:"concurrency,omitempty"`
	// Loop is the loop guard.
	Loop LoopLimits `yaml:"loop,omitempty" json:"loop,omitempty"`
}

// LoopLimits is the loop guard section (see LoopConfig).
type LoopLimits struct {
	Max    int           `yaml:"max,omitempty" json:"max,omitempty"`       // identical calls allowed in Window (0: the default)
	Window time.Duration `yaml:"window,omitempty" json:"window,omitempty"` // 0: the default
	Cycles int           `yaml:"cycles,omitempty" json:"cycles,omitempty"` // repetitions of an A-B cycle that stop it (0: the default)
	Off    bool          `yaml:"off,omitempty" json:"off,omitempty"`       // no loop guard
}

// Config returns the section as a Limiter's configuration.
func (l Limits) Config() LimitConfig {
	return LimitConfig{
		Tools:         l.Tools,
		Principal:     l.Principal,
		ToolPrincipal: l.ToolPrincipal,
		Concurrency:   l.Concurrency,
		Loop:          LoopConfig{Max: l.Loop.Max, Window: l.Loop.Window, Cycles: l.Loop.Cycles, Off: l.Loop.Off},
	}
}

// Approvals is the approvals section of a policy file.
type Approvals struct {
	// Timeout is how long a question waits for an answer; no answer is a
	// denial. 0 means DefaultApprovalTimeout.
	Timeout time.Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// DefaultScope is the scope of an approval whose approver names none
	// ("once" when empty).
	DefaultScope Scope `yaml:"default_scope,omitempty" json:"default_scope,omitempty"`
	// DenialStreak is how many denials in a row in one session make the
	// model be told to stop and ask its user, and open the session's
	// Breaker (0: 3).
	DenialStreak int `yaml:"denial_streak,omitempty" json:"denial_streak,omitempty"`
	// HTTP is an address where the console's approvals page and its JSON
	// API alone are served, to this machine's clients (for serve and proxy
	// over stdio, which have no listener of their own; "" none). Under
	// --http the console beside /mcp shows the same queue.
	HTTP string `yaml:"http,omitempty" json:"http,omitempty"`
	// TokenEnv names the environment variable holding the approvals API's
	// token (X-Toolgate-Token) (at least 16 bytes): give every replica sharing state.redis
	// the same, so that an API client may post a decision to any of them
	// ("" : a random token per process, printed at start).
	TokenEnv string `yaml:"token_env,omitempty" json:"token_env,omitempty"`
	// StateKeyEnv names the environment variable holding the secret (at
	// least 32 bytes, the same on every replica) that seals the state of
	// an approval asked through the client's next call: MCP clients of
	// protocol 2026-07-28 on a stateless server are then asked by their
	// own user ("" : they go to the approvals page).
	StateKeyEnv string `yaml:"state_key_env,omitempty" json:"state_key_env,omitempty"`
}

// DefaultApprovalTimeout is how long a question waits when the policy does
// not say.
const DefaultApprovalTimeout = 5 * time.Minute

// Output is the output budgets section of a policy file.
type Output struct {
	// MaxBytes caps a result's size (0: the engine's default).
	MaxBytes int `yaml:"max_bytes,omitempty" json:"max_bytes,omitempty"`
	// Tools overrides MaxBytes per tool (glob over tool names → bytes),
	// decided by the one glob rule (GlobMap).
	Tools map[string]int `yaml:"tools,omitempty" json:"tools,omitempty"`
	// SpillDir is where a larger result is written in full ("" : the
	// engine's default, under the state folder).
	SpillDir string `yaml:"spill_dir,omitempty" json:"spill_dir,omitempty"`
}

// Files is the files section of a policy file: settings of the built-in
// file tools.
type Files struct {
	// AllowHardLinks lets the file tools read and change a regular file that
	// has other hard links. By default they refuse: such a file may be a
	// second name of a file outside the roots. Projects made of hard links
	// (pnpm's node_modules) need it.
	AllowHardLinks bool `yaml:"allow_hard_links,omitempty" json:"allow_hard_links,omitempty"`
}

// Processes is the processes section of a policy file: the limits of
// start_process (package toolsets/exec). Zero fields take the defaults.
type Processes struct {
	// PerOwner, PerPrincipal and PerServer bound the processes running at
	// once: of one conversation (8), of one principal (32), in all (256).
	PerOwner     int `yaml:"per_owner,omitempty" json:"per_owner,omitempty"`
	PerPrincipal int `yaml:"per_principal,omitempty" json:"per_principal,omitempty"`
	PerServer    int `yaml:"per_server,omitempty" json:"per_server,omitempty"`
	// Idle stops the processes of a conversation without a call for this
	// long (30m); Keep is how long an exited process stays readable (30m);
	// MaxTimeout the longest timeout a process may ask for (8h).
	Idle       time.Duration `yaml:"idle,omitempty" json:"idle,omitempty"`
	Keep       time.Duration `yaml:"keep,omitempty" json:"keep,omitempty"`
	MaxTimeout time.Duration `yaml:"max_timeout,omitempty" json:"max_timeout,omitempty"`
	// OutputBytes is how much output of a process is kept (the last 64
	// MiB, in a file under the state folder; the last MiB in memory).
	OutputBytes int64 `yaml:"output_bytes,omitempty" json:"output_bytes,omitempty"`
	// AllowSecretInput lets a model write to a process that asks for a
	// password or passphrase (refused by default).
	AllowSecretInput bool `yaml:"allow_secret_input,omitempty" json:"allow_secret_input,omitempty"`
}

// Sandbox is the sandbox section of a policy file: how strongly commands
// must be confined for the command tools to run them, and where a
// conversation's file and command tools run (issue 28).
type Sandbox struct {
	// Require is the lowest sandbox level at which commands run: "full"
	// (the default: every namespace, Landlock, seccomp) or "reduced"
	// (seccomp and no_new_privs hold, some namespaces or Landlock do not).
	// Below it the command tools answer sandbox_violation, naming what is
	// missing.
	Require string `yaml:"require,omitempty" json:"require,omitempty"`
	// Commands false leaves the command tools (execute_command, run_code,
	// the process tools) out altogether, whatever the sandbox could do: a
	// gateway that should run no command (the chart's sandbox.mode=none).
	// Unset or true: they are offered as the level allows.
	Commands *bool `yaml:"commands,omitempty" json:"commands,omitempty"`
	// Backend is where the file and command tools of a conversation run:
	// "local" (the default: in this process, over --root), "runner" (one
	// workspace per conversation on a `toolgate runner`) or "kubernetes"
	// (one Pod or agent-sandbox claim per conversation).
	Backend string `yaml:"backend,omitempty" json:"backend,omitempty"`
	// Runner reaches the runners of backend runner.
	Runner *SandboxRunner `yaml:"runner,omitempty" json:"runner,omitempty"`
	// Kubernetes places the sandboxes of backend kubernetes.
	Kubernetes *SandboxKubernetes `yaml:"kubernetes,omitempty" json:"kubernetes,omitempty"`
	// Workspace is the root of the file tools inside a sandbox, which the
	// policy's path rules resolve against ("" : DefaultWorkspace).
	Workspace string `yaml:"workspace,omitempty" json:"workspace,omitempty"`
	// Network is what the commands of a remote sandbox reach: "none", the
	// only value (a runner is not given the policy's domains). Saying so
	// lets a remote backend start with a policy whose allow rules name
	// domains, which then serve http_request alone; without it such a
	// policy is refused rather than run with less than it says.
	Network string `yaml:"network,omitempty" json:"network,omitempty"`
}

// SandboxRunner is sandbox.runner: the runners a gateway places
// sandboxes on, and the secret their tokens derive from.
type SandboxRunner struct {
	// URL is one runner (http://HOST:PORT); URLs several (each sandbox id
	// is placed on one of them by a hash, the same on every replica).
	URL  string   `yaml:"url,omitempty" json:"url,omitempty"`
	URLs []string `yaml:"urls,omitempty" json:"urls,omitempty"`
	// SecretEnv names the environment variable holding the runners'
	// secret (their --token-env), at least 16 bytes.
	SecretEnv string `yaml:"secret_env,omitempty" json:"secret_env,omitempty"`
	// Idle deletes a sandbox with no call for this long (0: never);
	// Max refuses a new sandbox while this many exist (0: no cap).
	Idle time.Duration `yaml:"idle,omitempty" json:"idle,omitempty"`
	Max  int           `yaml:"max,omitempty" json:"max,omitempty"`
}

// All is URL and URLs together.
func (r SandboxRunner) All() []string {
	if r.URL == "" {
		return r.URLs
	}
	return append([]string{r.URL}, r.URLs...)
}

// SandboxKubernetes is sandbox.kubernetes: where and from what the
// sandboxes of backend kubernetes are made.
type SandboxKubernetes struct {
	// Namespace holds the sandboxes' Pods (or claims).
	Namespace string `yaml:"namespace,omitempty" json:"namespace,omitempty"`
	// Template names a Pod template (or an agent-sandbox SandboxTemplate).
	Template string `yaml:"template,omitempty" json:"template,omitempty"`
	// Image is the runner image of the sandboxes' Pods.
	Image string `yaml:"image,omitempty" json:"image,omitempty"`
	// SecretEnv names the environment variable holding the runners'
	// secret ("" : DefaultRunnerSecretEnv).
	SecretEnv string `yaml:"secret_env,omitempty" json:"secret_env,omitempty"`
	// Idle deletes a sandbox with no call for this long (0: never); Max
	// refuses a new sandbox while this many exist (0: no cap).
	Idle time.Duration `yaml:"idle,omitempty" json:"idle,omitempty"`
	Max  int           `yaml:"max,omitempty" json:"max,omitempty"`
}

// Sandbox backends.
const (
	BackendLocal      = "local"
	BackendRunner     = "runner"
	BackendKubernetes = "kubernetes"
)

// DefaultWorkspace is the workspace of a remote sandbox when the policy
// names none.
const DefaultWorkspace = "/workspace"

// DefaultRunnerSecretEnv is the variable of the runners' secret when the
// policy names none (toolgate runner's --token-env default).
const DefaultRunnerSecretEnv = "TOOLGATE_RUNNER_SECRET"

// Remote reports whether the tools run in remote sandboxes (a backend
// other than local).
func (s Sandbox) Remote() bool { return s.Backend != "" && s.Backend != BackendLocal }

// WorkspaceDir is Workspace, DefaultWorkspace when it is empty.
func (s Sandbox) WorkspaceDir() string {
	if s.Workspace == "" {
		return DefaultWorkspace
	}
	return s.Workspace
}

// SecretEnv is the variable holding the runners' secret.
func (s Sandbox) SecretEnv() string {
	env := ""
	switch {
	case s.Runner != nil && s.Backend == BackendRunner:
		env = s.Runner.SecretEnv
	case s.Kubernetes != nil && s.Backend == BackendKubernetes:
		env = s.Kubernetes.SecretEnv
	}
	if env == "" {
		return DefaultRunnerSecretEnv
	}
	return env
}

// Reaping is the idle time and the cap of the backend in use (zero: none).
func (s Sandbox) Reaping() (idle time.Duration, max int) {
	switch {
	case s.Backend == BackendRunner && s.Runner != nil:
		return s.Runner.Idle, s.Runner.Max
	case s.Backend == BackendKubernetes && s.Kubernetes != nil:
		return s.Kubernetes.Idle, s.Kubernetes.Max
	}
	return 0, 0
}

// CommandsOff reports whether the policy turns the command tools off.
func (s Sandbox) CommandsOff() bool { return s.Commands != nil && !*s.Commands }

// RequiredLevel is Require, "full" when it is empty.
func (s Sandbox) RequiredLevel() string {
	if s.Require == "" {
		return "full"
	}
	return s.Require
}

// Secrets is the secrets redaction section of a policy file.
type Secrets struct {
	// NoDefaults turns the built-in patterns (DefaultSecrets) off.
	NoDefaults bool `yaml:"no_defaults,omitempty" json:"no_defaults,omitempty"`
	// Patterns are extra kinds of secret, redacted from results and from
	// the audit log.
	Patterns []SecretPattern `yaml:"patterns,omitempty" json:"patterns,omitempty"`
}

// All returns the patterns in force: the defaults unless turned off, then
// the policy's own (for NewRedactor).
func (s Secrets) All() []SecretPattern {
	var out []SecretPattern
	if !s.NoDefaults {
		out = append(out, DefaultSecrets()...)
	}
	return append(out, s.Patterns...)
}

// HTTP is the http section of a policy file: how serve --http and proxy
// --http answer.
type HTTP struct {
	// Stateless answers every request on its own, with no Mcp-Session-Id,
	// so that any replica behind a load balancer answers any request (as
	// --stateless). Elicitation needs a session: calls that ask a person
	// then go to the approvals page (console.approvals, approvals.http).
	Stateless bool `yaml:"stateless,omitempty" json:"stateless,omitempty"`
}
