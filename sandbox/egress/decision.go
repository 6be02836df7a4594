package egress

import (
	"context"
	"fmt"
	"time"
)

// Reason is the machine-readable cause of a Decision or an Error.
type Reason string

const (
	Allowed          Reason = "allowed"            // the traffic may flow
	InvalidHost      Reason = "invalid_host"       // the host is not a valid name or address
	NotListed        Reason = "not_listed"         // no allow-list entry matches the host
	Denied           Reason = "denied"             // a deny-list entry matches the host
	PortNotAllowed   Reason = "port_not_allowed"   // the host is listed, the port is not
	IPLiteral        Reason = "ip_literal"         // an IP address as host, not on the allow-list
	MetadataAddress  Reason = "metadata_address"   // a cloud metadata name or address
	PrivateAddress   Reason = "private_address"    // loopback, private, link-local, CGNAT, multicast, reserved…
	DNSFailed        Reason = "dns_failed"         // the name did not resolve
	DialFailed       Reason = "dial_failed"        // no checked address accepted a connection
	SNIMismatch      Reason = "sni_mismatch"       // the TLS server name differs from the CONNECT host
	SNIMissing       Reason = "sni_missing"        // the ClientHello names no server
	NotTLS           Reason = "not_tls"            // a CONNECT tunnel that does not start with a TLS ClientHello
	MethodNotAllowed Reason = "method_not_allowed" // GET-only mode, or a method the proxy does not forward
	BadRequest       Reason = "bad_request"        // a malformed or unsupported proxy request
	TooManyConns     Reason = "too_many_connections"
	LimitExceeded    Reason = "limit_exceeded" // a connection was cut: idle time, total time or bytes
)

// Decision is one verdict of the egress policy, reported to
// PolicyConfig.OnDecision so that an audit log can record it. Every request
// the proxy reads, and every dial a Policy makes, yields exactly one
// Decision; a connection later cut by a limit yields one more.
type Decision struct {
	Time    time.Time
	Host    string // the host as normalised (A-label, lower case), or as received when invalid
	Port    int
	Addr    string // the address dialled or refused ("ip:port"), empty when none
	Method  string // the HTTP method (CONNECT for tunnels); empty for Policy.DialContext
	Allowed bool
	Reason  Reason
	Rule    string // the allow-list entry that matched, if any
	Detail  string // a human-readable explanation
}

// Error is a refusal or failure of the egress policy. Callers tell the cases
// apart by Reason; Err is the underlying network error, if any.
type Error struct {
	Reason Reason
	Host   string
	Port   int
	Addr   string // the refused or failed address, when there is one
	Detail string
	Err    error
}

func (e *Error) Error() string {
	target := e.Host
	if e.Port != 0 {
		target = fmt.Sprintf("%s:%d", e.Host, e.Port)
	}
	msg := fmt.Sprintf("egress %s: %s", e.Reason, target)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying network error.
func (e *Error) Unwrap() error { return e.Err }

// Refused reports whether the policy refused the destination, as opposed to
// the network failing to reach an allowed one (DNSFailed, DialFailed).
func (e *Error) Refused() bool { return e.Reason != DNSFailed && e.Reason != DialFailed }

type onDecisionKey struct{}

// WithOnDecision returns a context carrying f: every Decision about a
// connection served with it (Proxy.ServeConn, Proxy.Dial) or dialled with it
// (Policy.DialContext) goes to f too, after PolicyConfig.OnDecision, so that
// a caller learns which decisions were its own (a command's refusals). A
// function ctx already carries is called as well, first. f is called
// synchronously, possibly from many goroutines at once.
func WithOnDecision(ctx context.Context, f func(Decision)) context.Context {
	if prev, ok := ctx.Value(onDecisionKey{}).(func(Decision)); ok {
		g := f
		f = func(d Decision) { prev(d); g(d) }
	}
	return context.WithValue(ctx, onDecisionKey{}, f)
}
