package cli

import (
	"slices"

	"github.com/toolgate/toolgate/sandbox/egress"
)

// network is the way out of the built-in tools, from one allow-list (the
// --allow-domain flags and the policy's allow rules' domains): the policy
// http_request dials through, and the egress proxy commands reach, served
// in this process (no port is opened). The policy's deny rules' domains
// are refused by both, and its ask rules' by the proxy too, which cannot
// ask. With no domain allowed there is no proxy: commands have no network.
type network struct {
	web   *egress.Policy
	proxy *egress.Proxy // nil: commands have no network
}

// domainRules are the domains of the flags and the policy's rules.
type domainRules struct{ allow, deny, ask []string }

func newNetwork(d domainRules) (*network, error) {
	web, err := egress.NewPolicy(egress.PolicyConfig{Allow: d.allow, Deny: d.deny})
	if err != nil {
		return nil, usageErr("%v", err)
	}
	n := &network{web: web}
	if len(d.allow) == 0 {
		return n, nil
	}
	cmds, err := egress.NewPolicy(egress.PolicyConfig{Allow: d.allow, Deny: slices.Concat(d.deny, d.ask)})
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if n.proxy, err = egress.NewProxy(egress.ProxyConfig{Policy: cmds}); err != nil {
		return nil, err
	}
	return n, nil
}

// Close ends the connections the proxy still serves.
func (n *network) Close() error {
	if n == nil || n.proxy == nil {
		return nil
	}
	return n.proxy.Close()
}
