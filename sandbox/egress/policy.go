package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Resolver looks host names up. *net.Resolver satisfies it; tests give a
// resolver that asks their own DNS server.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// PolicyConfig configures a Policy.
type PolicyConfig struct {
	// Allow is the allow-list; nothing else may be reached. An entry is
	//   - a host name, matched exactly: "pkgs.example.org";
	//   - a wildcard "*.github.com", matching any name that ends in
	//     ".github.com" at a dot boundary (a.github.com, a.b.github.com) but
	//     not github.com itself (list it too), nor badgithub.com, nor
	//     github.com.evil.net; the part after "*." needs two labels at least;
	//   - an IP address, "1.1.1.1" or "2606:4700::1111" ("[…]" also accepted),
	//     matched exactly (IPv4-mapped forms included): IP-literal hosts are
	//     refused unless listed;
	// optionally followed by ":port" (IPv6 in brackets), which limits the
	// entry to that one port instead of Ports. Names are compared after
	// IDNA mapping (case, width, Unicode → punycode) and without a trailing dot.
	Allow []string
	// Deny lists entries refused even where Allow admits them (a policy's
	// deny rules): the same forms as Allow, an entry with a port refusing
	// that port only, and "*" refusing every host.
	Deny []string
	// Ports are the ports an entry without its own port allows; nil means
	// 80 and 443.
	Ports []int
	// AllowAddrs are address ranges that may be dialled although they are
	// not public (loopback, private, link-local…): an internal mirror, or a
	// test server on 127.0.0.1. Cloud metadata addresses stay refused even
	// inside these ranges. Leave it empty in production.
	AllowAddrs []netip.Prefix
	// Private lists exact "host:port" entries (a name, never an address or
	// a wildcard) that may resolve to a private address (10/8, 172.16/12,
	// 192.168/16, fc00::/7, 100.64/10, or a reserved range such as the
	// documentation ones): an internal registry or mirror.
	// Each is allowed as if Allow named it; loopback, link-local and
	// metadata addresses stay refused for it too.
	Private []string
	// Resolver looks names up; nil means net.DefaultResolver. Each
	// connection resolves its host exactly once, and the address checked is
	// the address dialled.
	Resolver Resolver
	// DialTimeout bounds a lookup plus connection; default 10 s.
	DialTimeout time.Duration
	// Dial connects to an address that passed every check ("ip:port", never
	// a name); nil means a net.Dialer. It is a way to choose the route (an
	// interface, a tunnel), or for tests to reach servers on loopback behind
	// public-looking addresses, with loopback still refused for every name.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnDecision, when set, receives every decision (see Decision). It is
	// called synchronously, possibly from many goroutines at once.
	OnDecision func(Decision)
}

// Policy decides which destinations may be reached and dials them, so that
// what was checked is exactly what is used. It is safe for concurrent use.
type Policy struct {
	rules       []rule
	deny        []rule
	ports       []int
	allowAddrs  []netip.Prefix
	private     map[string]bool // "name:port" that may resolve to a private address
	resolver    Resolver
	dialTimeout time.Duration
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	onDecision  func(Decision)
}

type rule struct {
	text     string     // the entry as written
	name     string     // exact name, or the suffix of a wildcard
	wildcard bool       // "*." + name
	any      bool       // "*" (deny-list only): every host
	ip       netip.Addr // an IP entry
	port     int        // 0: the policy's ports
}

// NewPolicy checks c's allow-list and returns the Policy it describes.
func NewPolicy(c PolicyConfig) (*Policy, error) {
	p := &Policy{ports: slices.Clone(c.Ports), allowAddrs: slices.Clone(c.AllowAddrs),
		resolver: c.Resolver, dialTimeout: c.DialTimeout, dial: c.Dial, onDecision: c.OnDecision}
	if p.ports == nil {
		p.ports = []int{80, 443}
	}
	for _, port := range p.ports {
		if port < 1 || port > 65535 {
			return nil, fmt.Errorf("egress: port %d out of range", port)
		}
	}
	for i, a := range p.allowAddrs {
		if !a.IsValid() {
			return nil, fmt.Errorf("egress: AllowAddrs[%d] is not a valid prefix", i)
		}
		p.allowAddrs[i] = a.Masked()
	}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	if p.dialTimeout <= 0 {
		p.dialTimeout = 10 * time.Second
	}
	if p.dial == nil {
		var d net.Dialer
		p.dial = d.DialContext
	}
	for _, e := range c.Allow {
		r, err := parseRule(e, false)
		if err != nil {
			return nil, fmt.Errorf("egress: allow-list entry %q: %w", e, err)
		}
		p.rules = append(p.rules, r)
	}
	for _, e := range c.Private {
		r, err := parseRule(e, false)
		switch {
		case err != nil:
			return nil, fmt.Errorf("egress: private entry %q: %w", e, err)
		case r.port == 0 || r.wildcard || r.ip.IsValid():
			return nil, fmt.Errorf("egress: private entry %q: want an exact host name and port, e.g. registry.corp.example:443", e)
		}
		if p.private == nil {
			p.private = map[string]bool{}
		}
		p.private[net.JoinHostPort(r.name, strconv.Itoa(r.port))] = true
		p.rules = append(p.rules, r)
	}
	for _, e := range c.Deny {
		if e == "*" {
			p.deny = append(p.deny, rule{text: e, any: true})
			continue
		}
		r, err := parseRule(e, true)
		if err != nil {
			return nil, fmt.Errorf("egress: deny-list entry %q: %w", e, err)
		}
		p.deny = append(p.deny, r)
	}
	return p, nil
}

// parseRule reads an allow-list entry, or a deny-list one, whose wildcards
// may be as wide as "*.local": refusing more is never a risk.
func parseRule(e string, deny bool) (rule, error) {
	r := rule{text: e}
	s := e
	// A port: "host:port" or "[v6]:port"; a bare IPv6 address has several colons.
	if i := strings.LastIndexByte(s, ':'); i >= 0 && (strings.Count(s, ":") == 1 || strings.HasPrefix(s, "[") && i > 0 && s[i-1] == ']') {
		port, err := parsePort(s[i+1:])
		if err != nil {
			return r, err
		}
		r.port, s = port, s[:i]
	}
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		h, err := parseHost(rest)
		if err != nil {
			return r, err
		}
		if h.isIP() {
			return r, errors.New("a wildcard applies to names, not addresses")
		}
		if !deny && !strings.Contains(h.name, ".") {
			return r, errors.New("a wildcard needs two labels after \"*.\" at least (\"*.com\" would allow a whole top-level domain)")
		}
		r.name, r.wildcard = h.name, true
		return r, nil
	}
	if strings.Contains(s, "*") {
		return r, errors.New("a wildcard may only be a leading \"*.\"")
	}
	h, err := parseHost(s)
	if err != nil {
		return r, err
	}
	r.name, r.ip = h.name, h.ip.Unmap()
	return r, nil
}

func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || s[0] == '+' || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return n, nil
}

// target is a destination that passed the name checks.
type target struct {
	host host
	port int
	rule string
}

func (t target) hostPort() string { return net.JoinHostPort(t.host.String(), strconv.Itoa(t.port)) }

// Allowed returns the allow-list as configured.
func (p *Policy) Allowed() []string {
	out := make([]string, len(p.rules))
	for i, r := range p.rules {
		out[i] = r.text
	}
	return out
}

// CheckHost applies the name-level checks to host (as written in a URL or a
// CONNECT request, brackets allowed) and port: normalisation, metadata
// names, the allow-list and its ports. It does no lookup. It returns the
// normalised host and the allow-list entry that admits it, or an *Error.
func (p *Policy) CheckHost(hostname string, port int) (normalized, rule string, err error) {
	t, e := p.check(hostname, port)
	if e != nil {
		return "", "", e
	}
	return t.host.String(), t.rule, nil
}

func (p *Policy) check(hostname string, port int) (target, *Error) {
	h, err := parseHost(hostname)
	if err != nil {
		return target{}, &Error{Reason: InvalidHost, Host: hostname, Port: port, Detail: err.Error()}
	}
	t := target{host: h, port: port}
	if port < 1 || port > 65535 {
		return t, &Error{Reason: PortNotAllowed, Host: h.String(), Port: port, Detail: "port out of range"}
	}
	if !h.isIP() && metadataNames[h.name] {
		return t, &Error{Reason: MetadataAddress, Host: h.name, Port: port, Detail: "a cloud metadata service name"}
	}
	if isLocalhost(h) && len(p.loopback()) == 0 {
		return t, &Error{Reason: PrivateAddress, Host: h.name, Port: port, Detail: "a localhost name is loopback (RFC 6761), whatever a resolver answers"}
	}
	for _, r := range p.deny {
		if r.matches(h) && (r.port == 0 || r.port == port) {
			t.rule = r.text
			return t, &Error{Reason: Denied, Host: h.String(), Port: port, Detail: fmt.Sprintf("the deny-list entry %q matches", r.text)}
		}
	}
	listed := false
	for _, r := range p.rules {
		if !r.matches(h) {
			continue
		}
		listed = true
		if r.port == port || r.port == 0 && slices.Contains(p.ports, port) {
			t.rule = r.text
			return t, nil
		}
	}
	switch {
	case listed:
		return t, &Error{Reason: PortNotAllowed, Host: h.String(), Port: port,
			Detail: fmt.Sprintf("the host is allowed on port(s) %s only", p.portsOf(h))}
	case h.isIP():
		return t, &Error{Reason: IPLiteral, Host: h.String(), Port: port,
			Detail: "an IP address as host is refused unless the allow-list names it"}
	}
	return t, &Error{Reason: NotListed, Host: h.String(), Port: port, Detail: "no allow-list entry matches the host"}
}

func (r rule) matches(h host) bool {
	switch {
	case r.any:
		return true
	case h.isIP():
		return r.ip.IsValid() && r.ip == h.ip.Unmap()
	case r.wildcard:
		return len(h.name) > len(r.name)+1 && strings.HasSuffix(h.name, r.name) && h.name[len(h.name)-len(r.name)-1] == '.'
	}
	return r.name != "" && r.name == h.name
}

func (p *Policy) portsOf(h host) string {
	var ports []int
	for _, r := range p.rules {
		switch {
		case !r.matches(h):
		case r.port != 0:
			ports = append(ports, r.port)
		default:
			ports = append(ports, p.ports...)
		}
	}
	slices.Sort(ports)
	var s []string
	for _, port := range slices.Compact(ports) {
		s = append(s, strconv.Itoa(port))
	}
	return strings.Join(s, ", ")
}

// resolve looks t's host up once and checks every address it gets; one
// refused address refuses the whole name. An IP literal is checked as it is.
func (p *Policy) resolve(ctx context.Context, t target) ([]netip.Addr, *Error) {
	var addrs []netip.Addr
	switch {
	case t.host.isIP():
		addrs = []netip.Addr{t.host.ip}
	case isLocalhost(t.host): // allowed only where AllowAddrs opens loopback (check)
		addrs = p.loopback()
	default:
		// The trailing dot makes the name absolute: no search-list expansion
		// ("metadata" → "metadata.google.internal").
		got, err := p.resolver.LookupNetIP(ctx, "ip", t.host.name+".")
		if err != nil {
			return nil, &Error{Reason: DNSFailed, Host: t.host.name, Port: t.port, Err: err}
		}
		if len(got) == 0 {
			return nil, &Error{Reason: DNSFailed, Host: t.host.name, Port: t.port, Detail: "the name has no addresses"}
		}
		addrs = got
	}
	for i, a := range addrs {
		seen, class := classify(a, p.allowAddrs)
		if class == classPrivate || class == classSharedCGNAT || class == classReserved {
			if p.private[net.JoinHostPort(t.host.name, strconv.Itoa(t.port))] {
				class = classPublic // an exact private entry
			}
		}
		if class == classPublic {
			addrs[i] = a.WithZone("")
			continue
		}
		reason, what := PrivateAddress, "a "+string(class)+" address"
		if class == classMetadata {
			reason = MetadataAddress
		}
		detail := fmt.Sprintf("%s resolves to %s (%s)", t.host, a, what)
		if t.host.isIP() {
			detail = fmt.Sprintf("%s is %s", a, what)
		}
		if seen != a {
			detail += fmt.Sprintf(" (it leads to %s)", seen)
		}
		return nil, &Error{Reason: reason, Host: t.host.String(), Port: t.port,
			Addr: net.JoinHostPort(a.String(), strconv.Itoa(t.port)), Detail: detail}
	}
	return addrs, nil
}

// isLocalhost reports whether h is localhost or a name under it, which is
// loopback whatever a resolver says (RFC 6761).
func isLocalhost(h host) bool {
	return !h.isIP() && (h.name == "localhost" || strings.HasSuffix(h.name, ".localhost"))
}

// loopback returns the loopback addresses AllowAddrs opens: what a localhost
// name resolves to, without asking a resolver.
func (p *Policy) loopback() []netip.Addr {
	var out []netip.Addr
	for _, a := range []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()} {
		if slices.ContainsFunc(p.allowAddrs, func(r netip.Prefix) bool { return r.Contains(a) }) {
			out = append(out, a)
		}
	}
	return out
}

// connect checks hostname:port, resolves it once, checks the addresses and
// dials them in order. It returns the connection and the address dialled.
// network is "tcp", "tcp4" or "tcp6".
func (p *Policy) connect(ctx context.Context, network, hostname string, port int) (net.Conn, target, string, *Error) {
	t, e := p.check(hostname, port)
	if e != nil {
		return nil, t, "", e
	}
	return p.connectTarget(ctx, network, t)
}

func (p *Policy) connectTarget(ctx context.Context, network string, t target) (net.Conn, target, string, *Error) {
	addrs, e := p.lookup(ctx, t)
	if e != nil {
		return nil, t, e.Addr, e
	}
	c, addr, e := p.dialAddrs(ctx, network, t, addrs)
	return c, t, addr, e
}

// lookup is resolve bounded by the dial timeout.
func (p *Policy) lookup(ctx context.Context, t target) ([]netip.Addr, *Error) {
	ctx, cancel := context.WithTimeout(ctx, p.dialTimeout)
	defer cancel()
	return p.resolve(ctx, t)
}

// dialAddrs connects to the first of the checked addresses that answers.
func (p *Policy) dialAddrs(ctx context.Context, network string, t target, addrs []netip.Addr) (net.Conn, string, *Error) {
	ctx, cancel := context.WithTimeout(ctx, p.dialTimeout)
	defer cancel()
	var last error
	lastAddr := ""
	for _, a := range addrs {
		if network == "tcp4" && !a.Unmap().Is4() || network == "tcp6" && (!a.Is6() || a.Is4In6()) {
			continue
		}
		ap := netip.AddrPortFrom(a.Unmap(), uint16(t.port))
		c, err := p.dial(ctx, "tcp", ap.String())
		if err == nil {
			return c, ap.String(), nil
		}
		last, lastAddr = err, ap.String()
	}
	if last == nil {
		last = fmt.Errorf("no %s address", network)
	}
	return nil, lastAddr, &Error{Reason: DialFailed, Host: t.host.String(), Port: t.port, Addr: lastAddr, Err: last}
}

// DialContext connects to address ("host:port") if the policy allows it:
// the name checks, one lookup, the address checks, then a connection to the
// checked address itself. It has the signature of net.Dialer.DialContext, so
// an http.Transport can use it. A refusal or failure is an *Error; every
// call reports one Decision.
func (p *Policy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		e := &Error{Reason: BadRequest, Host: address, Detail: "only TCP connections go through the egress policy"}
		p.report(ctx, decisionOf("", e.Host, 0, "", "", e))
		return nil, e
	}
	hostname, portText, err := net.SplitHostPort(address)
	var port int
	if err == nil {
		port, err = parsePort(portText)
	}
	if err != nil {
		e := &Error{Reason: InvalidHost, Host: address, Detail: err.Error()}
		p.report(ctx, decisionOf("", address, 0, "", "", e))
		return nil, e
	}
	c, t, addr, e := p.connect(ctx, network, hostname, port)
	host := t.host.String()
	if host == "" {
		host = hostname
	}
	p.report(ctx, decisionOf("", host, port, addr, t.rule, e))
	if e != nil {
		return nil, e
	}
	return c, nil
}

// report gives d to PolicyConfig.OnDecision and to the function ctx
// carries (WithOnDecision).
func (p *Policy) report(ctx context.Context, d Decision) {
	if p.onDecision != nil {
		p.onDecision(d)
	}
	if f, ok := ctx.Value(onDecisionKey{}).(func(Decision)); ok {
		f(d)
	}
}

// decisionOf builds the Decision for a verdict: allowed when e is nil.
func decisionOf(method, host string, port int, addr, rule string, e *Error) Decision {
	d := Decision{Time: time.Now(), Host: host, Port: port, Addr: addr, Method: method, Rule: rule,
		Allowed: e == nil, Reason: Allowed}
	if e != nil {
		d.Reason, d.Detail = e.Reason, e.Detail
		if e.Err != nil {
			if d.Detail != "" {
				d.Detail += ": "
			}
			d.Detail += e.Err.Error()
		}
	}
	return d
}
