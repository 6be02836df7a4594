package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"testing"

	"github.com/toolgate/toolgate/sandbox/egress/egresstest"
)

func reasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	if err == nil {
		return Allowed
	}
	return "other: " + Reason(err.Error())
}

func TestWildcardBoundary(t *testing.T) {
	p := mustPolicy(t, PolicyConfig{Allow: []string{"*.example.com", "pkgs.example.org", "*.github.com", "bücher.example", "exact.test."}})
	tests := []struct {
		host string
		want Reason
	}{
		{"a.example.com", Allowed},
		{"a.b.example.com", Allowed},
		{"A.Example.COM", Allowed},
		{"a.example.com.", Allowed},
		{"example.com", NotListed},          // the apex is not covered by the wildcard
		{"badexample.com", NotListed},       // no dot boundary
		{"example.com.evil.net", NotListed}, // suffix lookalike
		{"a.example.com.evil.net", NotListed},
		{"aexample.com", NotListed},
		{".example.com", InvalidHost},
		{"a..example.com", InvalidHost},
		{"a.example.com..", InvalidHost},
		{"pkgs.example.org", Allowed},
		{"PKGS.EXAMPLE.ORG.", Allowed},
		{"www.pkgs.example.org", NotListed}, // exact names are exact
		{"pkgs.example.org.evil.net", NotListed},
		{"github.com", NotListed}, // NE-004
		{"api.github.com", Allowed},
		{"xn--bcher-kva.example", Allowed}, // the rule was written in Unicode
		{"BÜCHER.example", Allowed},
		{"ｂüｃｈｅｒ.example", Allowed}, // full-width letters map to ASCII
		{"exact.test", Allowed},     // the rule had a trailing dot
		{"exact.test.", Allowed},
		{"a_b.example.com", InvalidHost},
		{"a.example.com:80", InvalidHost},
		{"user@a.example.com", InvalidHost},
		{"a.example.com/x", InvalidHost},
		{"a.example.com%00", InvalidHost},
		{"a.example.com\x00", InvalidHost},
		{"a.example.com ", InvalidHost},
		{"", InvalidHost},
		{"metadata.google.internal", MetadataAddress},
		{"METADATA.google.internal.", MetadataAddress},
		{"1.1.1.1", IPLiteral}, // NE-007
		{"2852039166", IPLiteral},
		{"example.123", InvalidHost}, // ends in a number, not an address
		{"1.2.3.4.5", InvalidHost},
		{"4294967296", InvalidHost},
	}
	for _, tc := range tests {
		_, _, err := p.CheckHost(tc.host, 443)
		if got := reasonOf(err); got != tc.want {
			t.Errorf("CheckHost(%q) = %s (%v), want %s", tc.host, got, err, tc.want)
		}
	}
}

func TestPorts(t *testing.T) {
	p := mustPolicy(t, PolicyConfig{Allow: []string{"pkgs.example.org", "mirror.test:8443", "[2001:db8::1]:8080", "1.1.1.1"}})
	tests := []struct {
		host string
		port int
		want Reason
	}{
		{"pkgs.example.org", 443, Allowed},
		{"pkgs.example.org", 80, Allowed},
		{"pkgs.example.org", 8443, PortNotAllowed}, // NE-016
		{"pkgs.example.org", 0, PortNotAllowed},
		{"pkgs.example.org", 70000, PortNotAllowed},
		{"mirror.test", 8443, Allowed},
		{"mirror.test", 443, PortNotAllowed},
		{"[2001:db8::1]", 8080, Allowed},
		{"2001:db8::1", 8080, Allowed},
		{"2001:db8::1", 443, PortNotAllowed},
		{"1.1.1.1", 443, Allowed},
		{"::ffff:1.1.1.1", 443, Allowed}, // the mapped spelling is the same address
		{"1.0.0.1", 443, IPLiteral},
	}
	for _, tc := range tests {
		_, _, err := p.CheckHost(tc.host, tc.port)
		if got := reasonOf(err); got != tc.want {
			t.Errorf("CheckHost(%q, %d) = %s (%v), want %s", tc.host, tc.port, got, err, tc.want)
		}
	}
}

func TestBadRules(t *testing.T) {
	for _, r := range []string{"*", "*.com", "a.*.com", "*example.com", "**.example.com", "*.1.2.3.4",
		"example.com:0", "example.com:99999", "example.com:+80", "example.com:080", "ex ample.com", "", "a/b", "[::1",
		"http://example.com"} {
		if _, err := NewPolicy(PolicyConfig{Allow: []string{r}}); err == nil {
			t.Errorf("NewPolicy accepted the rule %q", r)
		}
	}
	if _, err := NewPolicy(PolicyConfig{Ports: []int{0}}); err == nil {
		t.Error("NewPolicy accepted port 0")
	}
}

// TestIPLiteralSpellings: every way of writing an internal address as a
// host is recognised as that address, refused as an unlisted IP literal,
// and refused again by the address check when it is listed.
func TestIPLiteralSpellings(t *testing.T) {
	spellings := []struct {
		host string
		ip   string
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"[::1]", "::1"},
		{"::1", "::1"},
		{"[::ffff:127.0.0.1]", "127.0.0.1"},
		{"::ffff:7f00:1", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"0X7F.0.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"2852039166", "169.254.169.254"}, // NE-010
		{"0xa9fea9fe", "169.254.169.254"},
		{"[::ffff:169.254.169.254]", "169.254.169.254"},
		{"１２７.０.０.１", "127.0.0.1"}, // full-width digits
		{"0", "0.0.0.0"},
	}
	deny := mustPolicy(t, PolicyConfig{Allow: []string{"example.com"}})
	for _, s := range spellings {
		h, err := parseHost(s.host)
		if err != nil || !h.isIP() || h.ip.Unmap() != netip.MustParseAddr(s.ip) {
			t.Errorf("parseHost(%q) = %v, %v; want the address %s", s.host, h, err, s.ip)
			continue
		}
		if _, _, err := deny.CheckHost(s.host, 80); reasonOf(err) != IPLiteral {
			t.Errorf("CheckHost(%q) = %v, want %s", s.host, err, IPLiteral)
		}
		listed := mustPolicy(t, PolicyConfig{Allow: []string{s.ip}})
		_, err = listed.DialContext(context.Background(), "tcp", joinPort(s.host, 80))
		if got := reasonOf(err); got != PrivateAddress && got != MetadataAddress {
			t.Errorf("dialling the listed %q = %v, want a private or metadata refusal", s.host, err)
		}
	}
}

func joinPort(host string, port int) string {
	if h, err := parseHost(host); err == nil && h.isIP() && h.ip.Is6() && host[0] != '[' {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(port)
}

func TestAddressClasses(t *testing.T) {
	tests := []struct {
		ip    string
		allow []netip.Prefix
		want  addrClass
	}{
		{"93.184.215.14", nil, classPublic},
		{"2606:4700::1111", nil, classPublic},
		{"127.0.0.1", nil, classLoopback},
		{"127.255.255.254", nil, classLoopback},
		{"::1", nil, classLoopback},
		{"::ffff:127.0.0.1", nil, classLoopback},
		{"10.1.2.3", nil, classPrivate},
		{"172.16.0.1", nil, classPrivate},
		{"172.31.255.255", nil, classPrivate},
		{"172.32.0.1", nil, classPublic},
		{"192.168.1.1", nil, classPrivate},
		{"fc00::1", nil, classPrivate},
		{"fd12:3456::1", nil, classPrivate},
		{"169.254.1.1", nil, classLinkLocal},
		{"fe80::1", nil, classLinkLocal},
		{"100.64.0.1", nil, classSharedCGNAT},
		{"100.127.255.255", nil, classSharedCGNAT},
		{"224.0.0.1", nil, classMulticast},
		{"ff02::1", nil, classMulticast},
		{"0.0.0.0", nil, classUnspecified},
		{"::", nil, classUnspecified},
		{"255.255.255.255", nil, classReserved},
		{"192.0.2.1", nil, classReserved},
		{"169.254.169.254", nil, classMetadata},
		{"::ffff:169.254.169.254", nil, classMetadata},
		{"fd00:ec2::254", nil, classMetadata},
		{"100.100.100.200", nil, classMetadata},
		{"168.63.129.16", nil, classMetadata},
		{"64:ff9b::a9fe:a9fe", nil, classMetadata},                   // NAT64 of 169.254.169.254
		{"64:ff9b::7f00:1", nil, classLoopback},                      // NAT64 of 127.0.0.1
		{"64:ff9b::5db8:d70e", nil, classPublic},                     // NAT64 of a public address
		{"2002:7f00:1::1", nil, classLoopback},                       // 6to4 of 127.0.0.1
		{"2002:a9fe:a9fe::1", nil, classMetadata},                    // 6to4 of 169.254.169.254
		{"::7f00:1", nil, classReserved},                             // IPv4-compatible
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", nil, classReserved}, // Teredo
		{"fe80::1%eth0", nil, classLinkLocal},
		{"127.0.0.1", loopback, classPublic},
		{"::ffff:127.0.0.1", loopback, classPublic},
		{"169.254.169.254", []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}, classMetadata},
		{"fd00:ec2::254", []netip.Prefix{netip.MustParsePrefix("fc00::/7")}, classMetadata},
		{"10.0.0.1", loopback, classPrivate},
	}
	for _, tc := range tests {
		_, got := classify(netip.MustParseAddr(tc.ip), tc.allow)
		if got != tc.want {
			t.Errorf("classify(%s, %v) = %q, want %q", tc.ip, tc.allow, got, tc.want)
		}
	}
}

// TestResolvedAddresses: names that resolve (through a real DNS server on
// loopback) to internal addresses are refused before any connection.
func TestResolvedAddresses(t *testing.T) {
	dns := egresstest.NewDNSServer(t)
	dns.Set("meta.test", "169.254.169.254")
	dns.Set("meta6.test", "::ffff:169.254.169.254")
	dns.Set("private.test", "10.1.2.3")
	dns.Set("mixed.test", "93.184.215.14,192.168.0.1")
	dns.Set("loop.test", "127.0.0.1")
	dns.Set("cgnat.test", "100.64.1.1")
	dns.Set("ula.test", "fd00::1")
	dns.Set("empty.test", "")
	var rec recorder
	p := mustPolicy(t, PolicyConfig{Resolver: dns.Resolver(), OnDecision: rec.add,
		Allow: []string{"meta.test", "meta6.test", "private.test", "mixed.test", "loop.test", "cgnat.test", "ula.test", "empty.test", "nxdomain.test"}})
	tests := []struct {
		host string
		want Reason
	}{
		{"meta.test", MetadataAddress},
		{"meta6.test", MetadataAddress},
		{"private.test", PrivateAddress},
		{"mixed.test", PrivateAddress}, // one bad address refuses the name
		{"loop.test", PrivateAddress},
		{"cgnat.test", PrivateAddress},
		{"ula.test", PrivateAddress},
		{"empty.test", DNSFailed},
		{"nxdomain.test", DNSFailed},
	}
	for _, tc := range tests {
		_, err := p.DialContext(context.Background(), "tcp", tc.host+":443")
		if got := reasonOf(err); got != tc.want {
			t.Errorf("dial %s = %v, want %s", tc.host, err, tc.want)
		}
		d := rec.last(t)
		if d.Allowed || d.Reason != tc.want || d.Host != tc.host || d.Port != 443 {
			t.Errorf("decision for %s = %+v", tc.host, d)
		}
		var e *Error
		if errors.As(err, &e) && e.Refused() == (tc.want == DNSFailed) {
			t.Errorf("%s: Refused() = %v", tc.host, e.Refused())
		}
	}
	if n := dns.Asked("meta.test"); n != 1 {
		t.Errorf("meta.test was looked up %d times, want 1", n)
	}
}

// TestDenyList: a deny entry refuses what an allow entry admits, at the
// same name boundaries, on its port only when it names one; "*" refuses
// every host.
func TestDenyList(t *testing.T) {
	p := mustPolicy(t, PolicyConfig{Allow: []string{"example.com", "*.example.com", "1.1.1.1"},
		Deny: []string{"bad.example.com", "*.worse.example.com", "example.com:8080", "1.1.1.1:443"}, Ports: []int{80, 443, 8080}})
	tests := []struct {
		host string
		port int
		want Reason
		rule string
	}{
		{"example.com", 443, Allowed, "example.com"},
		{"good.example.com", 443, Allowed, "*.example.com"},
		{"bad.example.com", 443, Denied, "bad.example.com"},
		{"BAD.Example.COM.", 80, Denied, "bad.example.com"},
		{"a.bad.example.com", 443, Allowed, "*.example.com"}, // an exact entry is that name only
		{"worse.example.com", 443, Allowed, "*.example.com"}, // a wildcard is its subdomains only
		{"x.worse.example.com", 443, Denied, "*.worse.example.com"},
		{"x.y.worse.example.com", 443, Denied, "*.worse.example.com"},
		{"notworse.example.com", 443, Allowed, "*.example.com"},
		{"example.com", 8080, Denied, "example.com:8080"},
		{"a.example.com", 8080, Allowed, "*.example.com"},
		{"1.1.1.1", 80, Allowed, "1.1.1.1"},
		{"1.1.1.1", 443, Denied, "1.1.1.1:443"},
		{"[::ffff:1.1.1.1]", 443, Denied, "1.1.1.1:443"},
		{"16843009", 443, Denied, "1.1.1.1:443"},
	}
	for _, tc := range tests {
		target, e := p.check(tc.host, tc.port)
		got := Allowed
		if e != nil {
			got = e.Reason
		}
		if got != tc.want || target.rule != tc.rule {
			t.Errorf("check(%s, %d) = %s by %q, want %s by %q", tc.host, tc.port, got, target.rule, tc.want, tc.rule)
		}
	}
	tld := mustPolicy(t, PolicyConfig{Allow: []string{"*.example.com", "*.example.local"}, Deny: []string{"*.local"}})
	if _, _, err := tld.CheckHost("a.example.local", 443); reasonOf(err) != Denied {
		t.Errorf("deny *.local let a.example.local through: %v", err)
	}
	if _, _, err := tld.CheckHost("a.example.com", 443); err != nil {
		t.Errorf("deny *.local refused a.example.com: %v", err)
	}
	all := mustPolicy(t, PolicyConfig{Allow: []string{"example.com"}, Deny: []string{"*"}})
	if _, _, err := all.CheckHost("example.com", 443); reasonOf(err) != Denied {
		t.Errorf("deny * let example.com through: %v", err)
	}
	for _, bad := range []string{"a*.example.com", "example.com:0", "", "*.*.com", "*."} {
		if _, err := NewPolicy(PolicyConfig{Deny: []string{bad}}); err == nil {
			t.Errorf("deny entry %q accepted", bad)
		}
	}
}

// TestLocalhostNames: localhost and its subdomains are loopback by
// definition (RFC 6761): refused before any lookup, even when listed.
// TestLocalhostWhereLoopbackIsOpen: where AllowAddrs opens loopback (a
// local identity provider's JWKS), a listed localhost name is loopback
// without asking a resolver, and only the loopback addresses opened.
func TestLocalhostWhereLoopbackIsOpen(t *testing.T) {
	lying := resolverFunc(func(ctx context.Context, network, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil // never asked
	})
	for _, tc := range []struct {
		open []netip.Prefix
		want []netip.Addr
	}{
		{[]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}},
		{[]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, []netip.Addr{netip.MustParseAddr("127.0.0.1")}},
		{[]netip.Prefix{netip.MustParsePrefix("::1/128")}, []netip.Addr{netip.MustParseAddr("::1")}},
	} {
		p := mustPolicy(t, PolicyConfig{Allow: []string{"localhost", "idp.localhost"}, AllowAddrs: tc.open, Resolver: lying})
		for _, h := range []string{"localhost", "idp.localhost"} {
			tg, e := p.check(h, 443)
			if e != nil {
				t.Fatalf("%s with %v open: %v", h, tc.open, e)
			}
			addrs, e := p.resolve(context.Background(), tg)
			if e != nil || !slices.Equal(addrs, tc.want) {
				t.Errorf("%s with %v open: %v %v, want %v", h, tc.open, addrs, e, tc.want)
			}
		}
		if _, e := p.check("other.localhost", 443); reasonOf(e) != NotListed {
			t.Errorf("an unlisted localhost name: %v", e)
		}
	}
	// Private ranges opened do not open loopback.
	p := mustPolicy(t, PolicyConfig{Allow: []string{"localhost"}, AllowAddrs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Resolver: lying})
	if _, e := p.check("localhost", 443); reasonOf(e) != PrivateAddress {
		t.Errorf("localhost with only 10/8 open: %v", e)
	}
}

func TestLocalhostNames(t *testing.T) {
	p := mustPolicy(t, PolicyConfig{Allow: []string{"localhost", "*.b.localhost", "app.localhost", "xn--lcalhost-9za.localhost", "localhost.example.com"}})
	for _, h := range []string{"localhost", "LOCALHOST.", "app.localhost", "a.b.localhost", "xn--lcalhost-9za.localhost"} {
		if _, _, err := p.CheckHost(h, 443); reasonOf(err) != PrivateAddress {
			t.Errorf("CheckHost(%q) = %v, want %s", h, err, PrivateAddress)
		}
	}
	for _, h := range []string{"localhost.example.com"} {
		if _, _, err := p.CheckHost(h, 443); err != nil {
			t.Errorf("CheckHost(%q) = %v, want it allowed", h, err)
		}
	}
}

// resolverFunc is a Resolver of a function.
type resolverFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

func (f resolverFunc) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return f(ctx, network, host)
}

// TestPrivateEntries: an exact private host:port may resolve to a private
// address, on that port only; another name resolving there, a loopback or
// metadata answer for the same name, and entries that are not an exact
// name and port are refused.
func TestPrivateEntries(t *testing.T) {
	dns := egresstest.NewDNSServer(t)
	dns.Set("registry.corp.test", "10.1.2.3")
	dns.Set("other.corp.test", "10.1.2.3")
	dns.Set("mirror.corp.test", "203.0.113.80")
	dns.Set("loopy.corp.test", "127.0.0.1")
	dns.Set("meta.corp.test", "169.254.169.254")
	var dialled []string
	p := mustPolicy(t, PolicyConfig{Resolver: dns.Resolver(), Allow: []string{"other.corp.test"},
		Private: []string{"registry.corp.test:8443", "mirror.corp.test:443", "loopy.corp.test:443", "meta.corp.test:443"},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dialled = append(dialled, addr)
			return nil, errors.New("not dialled in this test")
		}})
	for _, tc := range []struct {
		hostport string
		want     Reason
	}{
		{"registry.corp.test:8443", DialFailed}, // allowed: the test's dialer refuses
		{"registry.corp.test:443", PortNotAllowed},
		{"mirror.corp.test:443", DialFailed}, // a reserved range: allowed too
		{"other.corp.test:443", PrivateAddress},
		{"loopy.corp.test:443", PrivateAddress},
		{"meta.corp.test:443", MetadataAddress},
	} {
		_, err := p.DialContext(context.Background(), "tcp", tc.hostport)
		if got := reasonOf(err); got != tc.want {
			t.Errorf("dial %s = %v, want %s", tc.hostport, err, tc.want)
		}
	}
	if !slices.Equal(dialled, []string{"10.1.2.3:8443", "203.0.113.80:443"}) {
		t.Errorf("dialled %v", dialled)
	}
	for _, bad := range []string{"registry.corp.test", "*.corp.test:443", "10.1.2.3:443", "[fd00::1]:443"} {
		if _, err := NewPolicy(PolicyConfig{Private: []string{bad}}); err == nil {
			t.Errorf("private entry %q accepted", bad)
		}
	}
}
