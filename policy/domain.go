package policy

import (
	"fmt"
	"net/url"
	"strings"
)

// domainPattern is the specifier "domain:HOST" of an HTTP rule. HOST is a
// host name compared exactly (case-insensitive, a trailing dot ignored), or
// "*.example.com" for every subdomain of example.com at a dot boundary
// (a.example.com and a.b.example.com, not example.com itself and not
// badexample.com; write two rules for both), or "*" for every host. The
// host is taken from the call's url argument after parsing, so
// "https://example.com@evil.test/" is evil.test.
type domainPattern struct {
	host     string
	wildcard bool // *.host
	any      bool
}

func parseDomainPattern(spec string) (*domainPattern, error) {
	h := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(spec, "domain:")))
	h = strings.TrimSuffix(h, ".")
	switch {
	case h == "*":
		return &domainPattern{any: true}, nil
	case h == "":
		return nil, fmt.Errorf("domain: needs a host name, e.g. domain:example.com or domain:*.example.com")
	case strings.ContainsAny(h, "/:@ ?#"):
		return nil, fmt.Errorf("domain:%s: write the host name alone, without scheme, port or path", h)
	}
	d := &domainPattern{}
	if strings.HasPrefix(h, "*.") {
		d.wildcard, h = true, h[2:]
	}
	if h == "" || strings.ContainsAny(h, "*") || strings.HasPrefix(h, ".") || strings.Contains(h, "..") {
		return nil, fmt.Errorf("domain:%s: a wildcard may only be a whole first label (*.example.com)", spec)
	}
	d.host = h
	return d, nil
}

func (d *domainPattern) match(host string) bool {
	switch {
	case d.any:
		return true
	case d.wildcard:
		return strings.HasSuffix(host, "."+d.host)
	}
	return host == d.host
}

// urlHost returns the host a URL reaches, lower-cased, without port or
// trailing dot. ok is false when the URL has no host the policy can judge.
func urlHost(raw string) (string, bool) {
	s := strings.TrimSpace(raw)
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || strings.ContainsAny(u.Host, "\\") {
		return "", false
	}
	h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if h == "" {
		return "", false
	}
	return h, true
}

// AllowedDomains returns the hosts that the policy's allow rules open to the
// network tools (every domain: specifier of the top-level allow list;
// "*.example.com" for a wildcard), for an egress allow-list. "domain:*" is
// left out: an egress allow-list names hosts.
func (p *Policy) AllowedDomains() []string { return domains(p.Allow, false) }

// DeniedDomains and AskedDomains return the hosts of the policy's deny and
// ask rules' domain: specifiers ("*" for "domain:*"), for an egress
// deny-list: a proxy cannot ask anyone, so it refuses both.
func (p *Policy) DeniedDomains() []string { return domains(p.Deny, true) }

func (p *Policy) AskedDomains() []string { return domains(p.Ask, true) }

// domains lists the hosts of the domain: specifiers of rules, with "*" for
// "domain:*" when any is set. A rule without "domain:" in its text has no
// such specifier and is not compiled (the default deny list's paths would
// be, for every command that starts).
func domains(rules []string, any bool) []string {
	var out []string
	for _, text := range rules {
		if !strings.Contains(text, "domain:") {
			continue
		}
		r, err := compileRule(text)
		switch {
		case err != nil || r.dom == nil || r.dom.any && !any:
		case r.dom.any:
			out = append(out, "*")
		case r.dom.wildcard:
			out = append(out, "*."+r.dom.host)
		default:
			out = append(out, r.dom.host)
		}
	}
	return out
}
