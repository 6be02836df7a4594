package cli

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/trust"
)

// resultCheck is the check of every tool's result (the engine runs it
// after the tool, before the budget), from the policy's trust.results and
// trust.results_tools.
func resultCheck(t policy.Trust, log *slog.Logger) (*trust.ResultCheck, error) {
	modeFor, err := t.ResultModeFor()
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if log == nil {
		log = slog.Default()
	}
	return &trust.ResultCheck{
		Mode:    trust.ResultMode(t.ResultMode()),
		ModeFor: func(name string) trust.ResultMode { return trust.ResultMode(modeFor(name)) },
		Logger:  log,
	}, nil
}

// trustWrap returns what the gateway puts around each upstream tool, from
// the policy's trust block: the guardrail webhook (trust.webhook) asked
// about each call and its result; nil without one. The result check
// (resultCheck) reads what reaches the model after it, the webhook's
// answer included: the engine runs it for every tool.
func trustWrap(t policy.Trust, log *slog.Logger) (func(upstream, remote string, tl tool.Tool) tool.Tool, error) {
	w := t.Webhook
	if w == nil {
		return nil, nil
	}
	hook := &trust.Webhook{URL: w.URL, Timeout: w.Timeout, AllowOnError: w.OnError == policy.OnErrorAllow, Logger: log}
	if len(w.Headers) > 0 {
		hook.Headers = map[string]string{}
		for k, v := range w.Headers {
			hook.Headers[k] = os.ExpandEnv(v)
		}
	}
	env := w.SecretEnv
	if env == "" {
		env = trust.WebhookSecretEnv
	}
	switch s := os.Getenv(env); {
	case s != "":
		secret, err := trust.WebhookSecret(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", env, err)
		}
		hook.Secret = secret
	case w.SecretEnv != "":
		return nil, fmt.Errorf("trust.webhook.secret_env names %s, which is not set", env)
	}
	return hook.Wrap, nil
}
