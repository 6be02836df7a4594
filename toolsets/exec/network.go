package exec

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/egress"
	"github.com/toolgate/toolgate/tool"
)

// EgressFailure is a connection the egress proxy refused, or could not
// make, while a command ran.
type EgressFailure struct {
	Host   string `json:"host"`
	Port   int    `json:"port,omitempty"`
	Reason string `json:"reason"`         // the proxy's reason: not_listed, private_address, dns_failed…
	Rule   string `json:"rule,omitempty"` // the allow-list entry that admitted the host, if one did
	Detail string `json:"detail,omitempty"`
}

// maxEgressFailures bounds the failures kept of one command (a client
// retrying in a loop repeats the same few).
const maxEgressFailures = 20

// egressLog collects the failed connections of one command.
type egressLog struct {
	mu   sync.Mutex
	list []EgressFailure
}

func (l *egressLog) add(d egress.Decision) {
	if d.Allowed {
		return
	}
	f := EgressFailure{Host: d.Host, Port: d.Port, Reason: string(d.Reason), Rule: d.Rule, Detail: d.Detail}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, g := range l.list {
		if g.Host == f.Host && g.Port == f.Port && g.Reason == f.Reason {
			return
		}
	}
	if len(l.list) < maxEgressFailures {
		l.list = append(l.list, f)
	}
}

func (l *egressLog) failures() []EgressFailure {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]EgressFailure(nil), l.list...)
}

// network is one command's network: none without Options.Egress, else
// connections to the egress proxy made in this process, whose failures go
// to the returned log.
func (s *set) network() (sandbox.Network, *egressLog) {
	p := s.opts.Egress
	if p == nil {
		return sandbox.Network{}, nil
	}
	log := &egressLog{}
	return sandbox.Network{Dial: func(ctx context.Context) (net.Conn, error) {
		return p.Dial(egress.WithOnDecision(ctx, log.add))
	}}, log
}

// maxListedHosts bounds the allow-list shown in descriptions and errors.
const maxListedHosts = 20

// allowedWords lists the allow-list for a model.
func allowedWords(allowed []string) string {
	if len(allowed) == 0 {
		return "none"
	}
	if len(allowed) > maxListedHosts {
		return strings.Join(allowed[:maxListedHosts], ", ") + fmt.Sprintf(" and %d more", len(allowed)-maxListedHosts)
	}
	return strings.Join(allowed, ", ")
}

// networkWords tells the model what the network of a command is.
func networkWords(p *egress.Proxy) string {
	if p == nil {
		return "off"
	}
	return "reachable only through an HTTP(S) proxy (HTTP_PROXY and HTTPS_PROXY are set; there is no other route), " +
		"to these hosts only: " + allowedWords(p.Policy().Allowed()) +
		" (internal, loopback and cloud-metadata addresses are refused whatever the name)"
}

// egressError is the error for the connections that failed while a command
// ran (nil when none did): a refusal by the allow-list or the address
// checks is permission_denied, a connection cut by the proxy's limits a
// sandbox_violation, and a name that did not resolve or a server that did
// not answer is unavailable, as http_request reports them. The first of
// the gravest kind is named; Details lists them all.
func egressError(fs []EgressFailure, allowed []string) *tool.Error {
	var first *EgressFailure
	rank := 0
	for i := range fs {
		if r := failureRank(egress.Reason(fs[i].Reason)); r > rank {
			first, rank = &fs[i], r
		}
	}
	if first == nil {
		return nil
	}
	f := *first
	host := f.Host
	if host == "" {
		host = "the proxy"
	}
	list := allowedWords(allowed)
	var e *tool.Error
	switch egress.Reason(f.Reason) {
	case egress.NotListed:
		e = tool.Errorf(tool.PermissionDenied, "connection to %s refused: not on the allow list (allowed: %s)", host, list).
			WithSuggestion("if the command needs %s, ask the operator to allow that domain (--allow-domain %s, or an allow rule in the policy); "+
				"there is no other way out of the sandbox, so do not retry another spelling, address or route", host, host).
			WithDetail("rule_to_add", host)
	case egress.Denied:
		e = tool.Errorf(tool.PermissionDenied, "connection to %s refused: the policy denies it (rule %q)", host, f.Rule).
			WithSuggestion("the operator keeps this host out on purpose; do the task without it, and do not try another route: there is none")
	case egress.PortNotAllowed:
		e = tool.Errorf(tool.PermissionDenied, "connection to %s:%d refused: %s", host, f.Port, f.Detail).
			WithSuggestion("use the standard port, or ask the operator to add \"%s:%d\" to the allow list", host, f.Port).
			WithDetail("rule_to_add", fmt.Sprintf("%s:%d", host, f.Port))
	case egress.IPLiteral:
		e = tool.Errorf(tool.PermissionDenied, "connection to %s refused: an IP address as host is refused unless the allow list names it (allowed: %s)", host, list).
			WithSuggestion("use the site's domain name, one on the allow list")
	case egress.PrivateAddress, egress.MetadataAddress:
		by := ""
		if f.Rule != "" {
			by = fmt.Sprintf(" (the name is allowed by %q, the address is not)", f.Rule)
		}
		e = tool.Errorf(tool.PermissionDenied, "connection to %s refused: %s%s; internal, loopback and cloud-metadata addresses are refused after resolution, whatever the allow list says", host, f.Detail, by).
			WithSuggestion("only public Internet addresses can be reached; do not retry with another name or spelling of the address")
	case egress.LimitExceeded, egress.TooManyConns:
		e = tool.Errorf(tool.SandboxViolation, "the egress proxy cut the connection to %s: %s", host, f.Detail).
			WithSuggestion("download less at once, or in smaller parts").WithDetail("limit", "network")
	case egress.DNSFailed:
		e = tool.Errorf(tool.Unavailable, "the name %s could not be resolved (the egress proxy looks names up): %s", host, f.Detail).
			WithSuggestion("check the spelling of the domain; if it is right, DNS or the network is down: retry later").WithRetry(0)
	case egress.DialFailed:
		e = tool.Errorf(tool.Unavailable, "could not connect to %s:%d: %s", host, f.Port, f.Detail).
			WithSuggestion("the server is down or refuses connections; retry later").WithRetry(0)
	default: // sni_mismatch, sni_missing, not_tls, method_not_allowed, bad_request, invalid_host
		e = tool.Errorf(tool.PermissionDenied, "connection to %s refused by the egress proxy (%s): %s", host, f.Reason, f.Detail).
			WithSuggestion("use HTTP or HTTPS through the proxy in HTTP_PROXY and HTTPS_PROXY, to a host on the allow list, with TLS naming that host")
	}
	e.WithDetail("domain", f.Host).WithDetail("egress_reason", f.Reason).WithDetail("allowed", allowed).WithDetail("egress_failures", fs)
	if f.Port != 0 {
		e.WithDetail("port", f.Port)
	}
	if f.Rule != "" {
		e.WithDetail("rule", f.Rule)
	}
	return e
}

// failureRank orders failures by gravity: refusals, then limits, then the
// network's failures.
func failureRank(r egress.Reason) int {
	switch r {
	case egress.Allowed:
		return 0
	case egress.DNSFailed, egress.DialFailed:
		return 1
	case egress.LimitExceeded, egress.TooManyConns:
		return 2
	}
	return 3
}

// writeEgress adds the failed connections to the text a model reads.
func writeEgress(b *strings.Builder, fs []EgressFailure) {
	if len(fs) == 0 {
		return
	}
	b.WriteString("--- connections the egress proxy refused or could not make ---\n")
	for _, f := range fs {
		fmt.Fprintf(b, "%s:%d %s", f.Host, f.Port, f.Reason)
		if f.Detail != "" {
			b.WriteString(": " + f.Detail)
		}
		b.WriteByte('\n')
	}
}
