package cli

import (
	"context"
	"log/slog"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/runner"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandboxes"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/toolsets/exec"
	"github.com/toolgate/toolgate/toolsets/fs"
)

// openSandboxes makes the forwarding of the policy's remote sandbox
// backend (sandbox.backend runner or kubernetes): the runners' secret from
// the variable the block names, the mapping in state.redis (rc) or this
// process's memory.
func openSandboxes(pol *policy.Policy, rc *redis.Client, logger *slog.Logger) (*sandboxes.Sandboxes, error) {
	sb := pol.Sandbox
	env := sb.SecretEnv()
	secret := []byte(os.Getenv(env))
	if len(secret) == 0 {
		return nil, usageErr("sandbox.backend %s: no runner secret: set %s to the secret the runners hold (their --token-env), or name another variable in the sandbox block's secret_env", sb.Backend, env)
	}
	if err := runner.CheckSecret(secret); err != nil {
		return nil, usageErr("%s: %v", env, err)
	}
	var backend sandboxes.Backend
	switch sb.Backend {
	case policy.BackendRunner:
		b, err := sandboxes.NewRunners(sb.Runner.All(), secret, nil)
		if err != nil {
			return nil, usageErr("sandbox.runner: %v", err)
		}
		backend = b
	case policy.BackendKubernetes:
		b, err := kubeBackend(context.Background(), sb.Kubernetes, secret)
		if err != nil {
			return nil, err
		}
		backend = b
	default:
		return nil, usageErr("sandbox.backend %s is not built into this toolgate; use local, runner or kubernetes (docs/deploy.md)", sb.Backend)
	}
	state := sandboxes.NewMemoryState()
	if rc != nil {
		state = store.NewRedisSandboxes(rc, pol.State.Redis.KeyPrefix())
	}
	idle, max := sb.Reaping()
	return sandboxes.New(sandboxes.Options{Backend: backend, Secret: secret, State: state, Idle: idle, Max: max, Logger: logger,
		Workspace: sb.WorkspaceDir(), PathParams: policy.PathParams, PatchPaths: policy.PatchPaths})
}

// notCarried refuses a policy that lets commands do what the commands of
// a remote sandbox cannot: the runner is not given the CI definitions the
// policy's allow rules let commands write (its commands may write none),
// nor the domains commands may reach (its commands reach no network). A
// policy is never run with less than it says without the operator
// choosing so. (The lines written to a shell or a REPL, which the runner
// cannot judge by this policy, are refused by the runner: openSandbox.)
func notCarried(pol *policy.Policy, domains []string) error {
	if pol.Sandbox.CommandsOff() {
		return nil
	}
	var ci []string
	for _, p := range policy.CIPaths() {
		if pol.AllowsChange(p.Pattern) {
			ci = append(ci, p.Pattern)
		}
	}
	b := pol.Sandbox.Backend
	if len(ci) > 0 {
		return usageErr("sandbox.backend %s: the policy's allow rules let commands write the CI definitions %s, and a remote sandbox is not given that allowance (its commands may write no CI definition); remove those allow rules (write_file and edit_file, judged here, then ask before changing one), set sandbox.commands: false, or use sandbox.backend: local", b, strings.Join(ci, ", "))
	}
	if len(domains) > 0 && pol.Sandbox.Network != "none" {
		return usageErr("sandbox.backend %s: --allow-domain or the policy's allow rules let commands reach %s, and a remote sandbox is not given them (its commands reach no network); set sandbox.network: none to run with them for http_request alone (it runs here), remove those domains, set sandbox.commands: false, or use sandbox.backend: local", b, strings.Join(domains, ", "))
	}
	return nil
}

// sandboxDefinitions are the definitions of the tools a runner serves in
// each sandbox (the file tools, execute_command, run_code and the process
// tools, built as the runner builds them), made over an empty folder that
// is removed at once: a gateway with a remote backend offers them and
// forwards their calls. Without commands (the policy's sandbox.commands
// false) only the file tools.
func sandboxDefinitions(commands bool) ([]tool.Definition, error) {
	tmp, err := os.MkdirTemp("", "toolgate-definitions-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	roots, err := fs.OpenRoots(tmp)
	if err != nil {
		return nil, err
	}
	defer roots.Close()
	tools, err := fs.Tools(roots, fs.Options{})
	if err != nil {
		return nil, err
	}
	var defs []tool.Definition
	for _, t := range tools {
		defs = append(defs, t.Definition())
	}
	if !commands {
		return defs, nil
	}
	procs := exec.NewProcesses(exec.ProcessLimits{Dir: tmp})
	defer procs.Close()
	cmds, err := exec.Tools(exec.Options{Root: roots.Dirs()[0], Backend: &sandbox.Native{}, Processes: procs})
	if err != nil {
		return nil, err
	}
	for _, t := range cmds {
		defs = append(defs, t.Definition())
	}
	return defs, nil
}
