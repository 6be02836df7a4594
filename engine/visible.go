package engine

import (
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// Visible reports whether the caller of call may be shown the tool def
// describes. A caller authenticated by a credential (tool.Call.Auth of
// kind jwt or api_key) is not shown a tool the policy would refuse it
// whatever the arguments (policy.Policy.Hides); calling such a tool is
// answered exactly as calling a tool that does not exist. Local callers
// see every tool, and a refusal says why.
func (e *Engine) Visible(def tool.Definition, call tool.Call) bool {
	return !authenticated(call) || !e.policy.Hides(def, call)
}

// VisibleNames returns the names of the enabled tools call's caller may
// be shown, in registration order.
func (e *Engine) VisibleNames(call tool.Call) []string {
	if !authenticated(call) {
		return e.opts.Registry.Names()
	}
	var out []string
	for _, def := range e.opts.Registry.List(registry.Filter{}) {
		if !e.policy.Hides(def, call) {
			out = append(out, def.Name)
		}
	}
	return out
}

func authenticated(call tool.Call) bool {
	return call.Auth != nil && (call.Auth.Kind == tool.CredentialJWT || call.Auth.Kind == tool.CredentialAPIKey)
}
