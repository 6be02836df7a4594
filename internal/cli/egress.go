package cli

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/sandbox/egress"
)

// network is the way out of the built-in tools, from one allow-list (the
// --allow-domain flags and the policy's allow rules' domains): the policy
// http_request dials through, and the egress proxy commands reach, served
// in this process (no port is opened). The policy's deny rules' domains
// are refused by both, and its ask rules' by the proxy too, which cannot
// ask. With no domain allowed (or none that those rules leave) there is no
// proxy: commands have no network.
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
	deny := slices.Concat(d.deny, d.ask)
	cmds, err := egress.NewPolicy(egress.PolicyConfig{Allow: d.allow, Deny: deny})
	if err != nil {
		return nil, usageErr("%v", err)
	}
	// An allowed domain that the deny and ask rules refuse whole is not
	// offered to commands: the command tools' description lists what they
	// can reach, and with nothing left they have no network at all.
	reach := reachable(cmds, d.allow)
	if len(reach) == 0 {
		return n, nil
	}
	if len(reach) < len(d.allow) {
		if cmds, err = egress.NewPolicy(egress.PolicyConfig{Allow: reach, Deny: deny}); err != nil {
			return nil, usageErr("%v", err)
		}
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

// reachable returns the entries of allow that p does not refuse outright:
// the entry's host (for "*.example.com", a name below example.com) on its
// port, or on 80 or 443, passes p's deny list.
func reachable(p *egress.Policy, allow []string) []string {
	var out []string
	for _, a := range allow {
		host, ports := a, []int{80, 443}
		if h, ps, err := net.SplitHostPort(a); err == nil {
			if n, err := strconv.Atoi(ps); err == nil {
				host, ports = h, []int{n}
			}
		}
		if rest, ok := strings.CutPrefix(host, "*."); ok {
			host = "toolgate-probe." + rest
		}
		for _, port := range ports {
			var e *egress.Error
			if _, _, err := p.CheckHost(host, port); !errors.As(err, &e) || e.Reason != egress.Denied {
				out = append(out, a)
				break
			}
		}
	}
	return out
}
