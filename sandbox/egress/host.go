package egress

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// host is a destination host name after normalisation: either a lower-case
// ASCII DNS name (A-labels, no trailing dot) or an IP address.
type host struct {
	name string     // the DNS name; empty for an IP literal
	ip   netip.Addr // the address, for an IP literal
}

func (h host) isIP() bool { return h.ip.IsValid() }

// String is the host as it goes on the wire (an IPv6 literal unbracketed).
func (h host) String() string {
	if h.isIP() {
		return h.ip.String()
	}
	return h.name
}

// maxHostLen is the longest DNS name (RFC 1035), without the trailing dot.
const maxHostLen = 253

// idnaProfile maps a host the way a browser's URL parser does (UTS #46:
// case folding, width folding, ideographic full stops) and checks the STD3
// rules (letters, digits and hyphens) and the DNS lengths.
var idnaProfile = idna.New(idna.MapForLookup(), idna.StrictDomainName(true),
	idna.VerifyDNSLength(true), idna.BidiRule(), idna.CheckJoiners(true), idna.Transitional(false))

// parseHost normalises a host as written in a URL, a CONNECT request or an
// allow-list entry: brackets around an IPv6 literal are removed, one trailing
// dot is dropped, a name is mapped to its lower-case A-label form (IDNA), and
// anything that a resolver would read as an IPv4 address (2130706433,
// 0x7f.1, 0177.0.0.1, 127.1) is recognised as one. It refuses what is not a
// host: empty names, control characters, zones, user information, over-long
// names, and names ending in a number that is not an IPv4 address.
func parseHost(s string) (host, error) {
	if s == "" {
		return host{}, fmt.Errorf("empty host")
	}
	if len(s) > 4*maxHostLen {
		return host{}, fmt.Errorf("host of %d bytes is too long", len(s))
	}
	if !utf8.ValidString(s) {
		return host{}, fmt.Errorf("host %q is not valid UTF-8", s)
	}
	for _, r := range s {
		switch {
		case r < 0x21 || r == 0x7f:
			return host{}, fmt.Errorf("host %q contains a control character or space", s)
		case strings.ContainsRune(`/\@?#%"<>^{|}`+"`", r):
			return host{}, fmt.Errorf("host %q contains %q", s, r)
		}
	}
	if strings.HasPrefix(s, "[") {
		if !strings.HasSuffix(s, "]") {
			return host{}, fmt.Errorf("host %q: unbalanced bracket", s)
		}
		ip, err := netip.ParseAddr(s[1 : len(s)-1])
		if err != nil || !ip.Is6() {
			return host{}, fmt.Errorf("host %q: not an IPv6 address", s)
		}
		return host{ip: ip}, nil
	}
	if strings.ContainsAny(s, "[]") {
		return host{}, fmt.Errorf("host %q contains a bracket", s)
	}
	if strings.Contains(s, ":") {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return host{}, fmt.Errorf("host %q: not an IPv6 address", s)
		}
		return host{ip: ip}, nil
	}
	name := strings.TrimSuffix(s, ".")
	if name == "" || strings.HasSuffix(name, ".") || strings.HasPrefix(name, ".") || strings.Contains(name, "..") {
		return host{}, fmt.Errorf("host %q has an empty label", s)
	}
	ascii, err := idnaProfile.ToASCII(name)
	if err != nil {
		return host{}, fmt.Errorf("host %q is not a valid domain name: %w", s, err)
	}
	ascii = strings.ToLower(ascii)
	// The A-label form must be a fixed point: what is checked is what a
	// resolver, a TLS library or a second check would read.
	if again, err := idnaProfile.ToASCII(ascii); err != nil || again != ascii {
		return host{}, fmt.Errorf("host %q is not a valid domain name", s)
	}
	if ascii == "" || len(ascii) > maxHostLen {
		return host{}, fmt.Errorf("host %q is not a valid domain name", s)
	}
	// A name whose last label is a number is an IPv4 address or nothing
	// (the WHATWG URL rule): never a name to look up.
	labels := strings.Split(ascii, ".")
	if numeric(labels[len(labels)-1]) {
		ip, ok := parseIPv4Loose(labels)
		if !ok {
			return host{}, fmt.Errorf("host %q ends in a number but is not an IPv4 address", s)
		}
		return host{ip: ip}, nil
	}
	for _, l := range labels {
		if len(l) == 0 || len(l) > 63 {
			return host{}, fmt.Errorf("host %q has a label of %d bytes", s, len(l))
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return host{}, fmt.Errorf("host %q contains %q", s, c)
			}
		}
	}
	return host{name: ascii}, nil
}

// numeric reports whether a label is a number as inet_aton reads one:
// decimal digits, or 0x followed by hex digits (possibly none).
func numeric(l string) bool {
	if l == "" {
		return false
	}
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		for i := 2; i < len(l); i++ {
			if !isHex(l[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// parseIPv4Loose reads 1 to 4 numeric parts as inet_aton does: each part is
// decimal, octal (leading 0) or hex (0x); the last part fills the remaining
// bytes (a, a.b, a.b.c, a.b.c.d).
func parseIPv4Loose(parts []string) (netip.Addr, bool) {
	if len(parts) < 1 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		if !numeric(p) {
			return netip.Addr{}, false
		}
		base, digits := 10, p
		switch {
		case len(p) >= 2 && (p[1] == 'x' || p[1] == 'X'):
			base, digits = 16, p[2:]
			if digits == "" {
				digits = "0"
			}
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*uint(i))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*uint(5-len(vals))) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}
