package egress

import (
	"net/netip"
)

// addrClass names why an address may not be dialled ("" when it may).
type addrClass string

const (
	classPublic      addrClass = ""
	classMetadata    addrClass = "cloud metadata"
	classLoopback    addrClass = "loopback"
	classPrivate     addrClass = "private"
	classLinkLocal   addrClass = "link-local"
	classSharedCGNAT addrClass = "carrier-grade NAT (100.64.0.0/10)"
	classMulticast   addrClass = "multicast"
	classUnspecified addrClass = "unspecified"
	classReserved    addrClass = "reserved or special-purpose"
)

// metadataAddrs are the instance-metadata and host-agent endpoints of cloud
// providers. They are refused even when an AllowAddrs prefix covers them.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle…
	netip.MustParseAddr("169.254.170.2"),   // AWS ECS task metadata
	netip.MustParseAddr("169.254.169.123"), // AWS time sync
	netip.MustParseAddr("169.254.169.250"), // AWS VPC DNS proxy (some regions)
	netip.MustParseAddr("169.254.169.253"), // AWS VPC DNS
	netip.MustParseAddr("169.254.0.23"),    // Tencent Cloud
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("168.63.129.16"),   // Azure WireServer (a public-range address)
	netip.MustParseAddr("192.0.0.192"),     // Oracle Cloud (classic)
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IMDS over IPv6
	netip.MustParseAddr("fd00:ec2::23"),    // AWS ECS over IPv6
	netip.MustParseAddr("fd20:ce::254"),    // GCP metadata over IPv6
}

// metadataNames are host names of metadata services; they are refused
// before any lookup, whatever the allow-list says.
var metadataNames = map[string]bool{
	"metadata":                     true,
	"metadata.google.internal":     true,
	"metadata.goog":                true,
	"instance-data":                true,
	"instance-data.ec2.internal":   true,
	"metadata.azure.com":           true,
	"metadata.tencentyun.com":      true,
	"metadata.platformequinix.com": true,
}

type classPrefix struct {
	p     netip.Prefix
	class addrClass
}

// refused lists every range that is not the public Internet (IANA special-
// purpose registries, RFC 6890 and successors).
var refused = []classPrefix{
	{netip.MustParsePrefix("0.0.0.0/8"), classUnspecified},
	{netip.MustParsePrefix("10.0.0.0/8"), classPrivate},
	{netip.MustParsePrefix("100.64.0.0/10"), classSharedCGNAT},
	{netip.MustParsePrefix("127.0.0.0/8"), classLoopback},
	{netip.MustParsePrefix("169.254.0.0/16"), classLinkLocal},
	{netip.MustParsePrefix("172.16.0.0/12"), classPrivate},
	{netip.MustParsePrefix("192.0.0.0/24"), classReserved},
	{netip.MustParsePrefix("192.0.2.0/24"), classReserved},
	{netip.MustParsePrefix("192.88.99.0/24"), classReserved},
	{netip.MustParsePrefix("192.168.0.0/16"), classPrivate},
	{netip.MustParsePrefix("198.18.0.0/15"), classReserved},
	{netip.MustParsePrefix("198.51.100.0/24"), classReserved},
	{netip.MustParsePrefix("203.0.113.0/24"), classReserved},
	{netip.MustParsePrefix("224.0.0.0/4"), classMulticast},
	{netip.MustParsePrefix("240.0.0.0/4"), classReserved}, // includes 255.255.255.255
	{netip.MustParsePrefix("::/128"), classUnspecified},
	{netip.MustParsePrefix("::1/128"), classLoopback},
	{netip.MustParsePrefix("::/96"), classReserved}, // IPv4-compatible (deprecated)
	{netip.MustParsePrefix("100::/64"), classReserved},
	{netip.MustParsePrefix("2001::/23"), classReserved}, // Teredo, benchmarking, ORCHID…
	{netip.MustParsePrefix("2001:db8::/32"), classReserved},
	{netip.MustParsePrefix("3fff::/20"), classReserved},
	{netip.MustParsePrefix("5f00::/16"), classReserved},
	{netip.MustParsePrefix("fc00::/7"), classPrivate},
	{netip.MustParsePrefix("fe80::/10"), classLinkLocal},
	{netip.MustParsePrefix("fec0::/10"), classPrivate},
	{netip.MustParsePrefix("ff00::/8"), classMulticast},
}

var (
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local     = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour      = netip.MustParsePrefix("2002::/16")
)

// classify says why ip may not be dialled, looking through the IPv6 forms
// that carry an IPv4 address (IPv4-mapped, NAT64, 6to4) to the address they
// lead to. allow lists prefixes that are nevertheless permitted (metadata
// addresses never are). The returned address is the one classified.
func classify(ip netip.Addr, allow []netip.Prefix) (netip.Addr, addrClass) {
	ip = ip.WithZone("")
	for {
		inner, ok := embeddedIPv4(ip)
		if !ok {
			break
		}
		if c := classifyOne(ip, allow); c == classMetadata {
			return ip, c
		}
		ip = inner
	}
	return ip, classifyOne(ip, allow)
}

func classifyOne(ip netip.Addr, allow []netip.Prefix) addrClass {
	for _, m := range metadataAddrs {
		if ip == m {
			return classMetadata
		}
	}
	for _, p := range allow {
		if p.Contains(ip) {
			return classPublic
		}
	}
	for _, r := range refused {
		if r.p.Contains(ip) {
			return r.class
		}
	}
	return classPublic
}

// embeddedIPv4 returns the IPv4 address an IPv6 address leads to, if any.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	if !ip.Is6() {
		return netip.Addr{}, false
	}
	if ip.Is4In6() {
		return ip.Unmap(), true
	}
	b := ip.As16()
	switch {
	case nat64WellKnown.Contains(ip):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case nat64Local.Contains(ip):
		// RFC 6052 with a /48 prefix: the IPv4 address sits in bytes 6-7 and 9-10.
		return netip.AddrFrom4([4]byte{b[6], b[7], b[9], b[10]}), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}
