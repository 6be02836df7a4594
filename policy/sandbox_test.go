package policy

import (
	"strings"
	"testing"
	"time"
)

func TestSandboxBlock(t *testing.T) {
	good := []struct {
		yaml   string
		remote bool
		env    string
	}{
		{"sandbox: {require: reduced}", false, DefaultRunnerSecretEnv},
		{"sandbox: {backend: local}", false, DefaultRunnerSecretEnv},
		{"sandbox: {backend: runner, runner: {url: 'http://127.0.0.1:8790'}}", true, DefaultRunnerSecretEnv},
		{"sandbox: {backend: runner, runner: {urls: ['http://a:1', 'https://b:2/'], secret_env: RS, idle: 30m, max: 3}, workspace: /work}", true, "RS"},
		{"sandbox: {backend: kubernetes, kubernetes: {namespace: sb, template: toolgate-sandbox, idle: 30m, max: 200}}", true, DefaultRunnerSecretEnv},
		{"sandbox: {backend: runner, runner: {url: 'http://x'}, network: none}", true, DefaultRunnerSecretEnv},
	}
	for _, c := range good {
		p, err := Parse([]byte(c.yaml))
		if err != nil {
			t.Errorf("%s: %v", c.yaml, err)
			continue
		}
		if p.Sandbox.Remote() != c.remote || p.Sandbox.SecretEnv() != c.env {
			t.Errorf("%s: remote %v, secret env %q", c.yaml, p.Sandbox.Remote(), p.Sandbox.SecretEnv())
		}
	}
	p, _ := Parse([]byte(good[3].yaml))
	if idle, max := p.Sandbox.Reaping(); idle != 30*time.Minute || max != 3 || p.Sandbox.WorkspaceDir() != "/work" {
		t.Errorf("reaping %v %d, workspace %q", idle, max, p.Sandbox.WorkspaceDir())
	}
	bad := []struct{ yaml, want string }{
		{"sandbox: {backend: docker}", `sandbox.backend "docker": want local, runner or kubernetes`},
		{"sandbox: {backend: runner}", "needs sandbox.runner.url"},
		{"sandbox: {backend: runner, runner: {url: 'ftp://x'}}", "not a runner's base URL"},
		{"sandbox: {backend: runner, runner: {url: 'http://x/sandboxes'}}", "not a runner's base URL"},
		{"sandbox: {backend: runner, runner: {url: 'http://u:p@x'}}", "not a runner's base URL"},
		{"sandbox: {backend: runner, runner: {url: 'http://x', urls: ['http://x']}}", "named twice"},
		{"sandbox: {backend: runner, runner: {url: 'http://x', secret_env: 'A-B'}}", "not an environment variable name"},
		{"sandbox: {backend: runner, runner: {url: 'http://x', max: -1}}", "must not be negative"},
		{"sandbox: {runner: {url: 'http://x'}}", "sandbox.runner is for backend: runner (sandbox.backend is local, the default)"},
		{"sandbox: {backend: runner, runner: {url: 'http://x'}, kubernetes: {namespace: a}}", "sandbox.kubernetes is for backend: kubernetes"},
		{"sandbox: {backend: kubernetes, kubernetes: {template: t}}", "needs sandbox.kubernetes.namespace"},
		{"sandbox: {backend: runner, runner: {url: 'http://x'}, workspace: relative}", "want a clean absolute folder"},
		{"sandbox: {backend: runner, runner: {url: 'http://x'}, workspace: /}", "want a clean absolute folder"},
		{"sandbox: {workspace: /workspace}", "needs backend runner or kubernetes"},
		{"sandbox: {require: none}", "want full or reduced"},
		{"sandbox: {backend: runner, runner: {url: 'http://x'}, network: open}", `sandbox.network "open": want none`},
		{"sandbox: {network: none}", "sandbox.network is what the commands of a remote sandbox reach: it needs backend runner or kubernetes"},
		{"sandbox: {backend: runner, runner: {url: 'http://x', tokens: 3}}", "tokens"},
	}
	for _, c := range bad {
		_, err := Parse([]byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.yaml, err, c.want)
		}
	}
}
