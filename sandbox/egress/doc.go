// Package egress is the only way out of a toolgate sandbox: a Policy that
// decides which hosts may be reached and dials them, and a Proxy (HTTP
// CONNECT for TLS, plus plain-HTTP forwarding) that enforces it for the
// commands in a sandbox. The web tools dial through the same Policy, so one
// implementation holds every network check.
//
// A destination passes, in order:
//
//  1. Name checks (Policy.CheckHost, no lookup yet): the host is normalised
//     exactly as it will be used — IPv6 brackets and one trailing dot
//     removed, IDNA mapping to lower-case A-labels, and any spelling a
//     resolver would read as IPv4 (2130706433, 0x7f.1, 0177.1) turned into
//     that address; cloud metadata names and localhost (and *.localhost)
//     are refused, and so are hosts a
//     deny-list entry matches (same forms, or "*"); the host must match an
//     allow-list entry (exact names, "*.example.com" wildcards at a dot
//     boundary, IP literals only when listed) on an allowed port (80 and 443
//     unless configured).
//  2. One lookup, through a Resolver, of the name made absolute (no search
//     list). Every address returned is checked, looking through IPv4-mapped,
//     NAT64 and 6to4 forms: loopback, private (RFC 1918, ULA), link-local,
//     CGNAT, multicast, unspecified, reserved and cloud metadata addresses
//     are refused — one bad address refuses the name. AllowAddrs may open
//     chosen ranges (tests, internal mirrors); metadata addresses never.
//  3. A connection to a checked address itself. There is no second lookup,
//     so a name that rebinds between check and use cannot redirect it.
//
// For a CONNECT tunnel the proxy answers 200, reads the TLS ClientHello and
// requires its server name to equal the CONNECT host (missing names are
// refused unless allowed; a tunnel to an IP literal must name none) before
// it dials; a refusal then is a TLS access_denied alert. A plain request
// must be in absolute form (http://host/…); it goes upstream with a
// normalised Host header, without hop-by-hop headers, one request per
// upstream connection, and protocol upgrades are refused.
//
// GET-only mode forwards only GET and HEAD without a body and refuses every
// CONNECT, since a method inside TLS cannot be seen. It keeps an agent from
// changing remote state; it does not stop data leaving in a URL.
//
// Limits: connections at once, idle time, total time and bytes per client
// connection. Every verdict — allowed, refused, failed, or cut by a limit —
// is reported as a Decision to PolicyConfig.OnDecision, for the audit log.
//
// What the proxy cannot see: the HTTP request inside a TLS tunnel. A server
// that hosts many names (a CDN) may route by the encrypted Host header
// ("domain fronting"); allow-list such shared hosts with care.
package egress
