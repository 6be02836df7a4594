package web

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/toolgate/toolgate/sandbox/egress"
	"github.com/toolgate/toolgate/tool"
)

// errTooManyRedirects and errDowngrade stop a redirect chain.
var (
	errTooManyRedirects = errors.New("too many redirects")
	errDowngrade        = errors.New("a redirect from https to http")
	errRedirectScheme   = errors.New("a redirect to a scheme other than http or https")
	errRedirectUser     = errors.New("a redirect to a URL with user information")
)

// failure turns a request error into the model-facing Error. target is the
// URL of the hop that failed, hop its position (0: the URL asked for).
func (s *Set) failure(err error, target string, hop int) *tool.Error {
	where := target
	if hop > 0 {
		where = fmt.Sprintf("%s (redirect %d)", target, hop)
	}
	var ee *egress.Error
	if errors.As(err, &ee) {
		return s.egressFailure(ee, where)
	}
	switch {
	case errors.Is(err, errTooManyRedirects):
		return tool.Errorf(tool.Unavailable, "%s: more than %d redirects", where, s.opts.MaxRedirects).
			WithSuggestion("request the final URL directly, or check the URL for a redirect loop")
	case errors.Is(err, errDowngrade):
		return tool.Errorf(tool.PermissionDenied, "%s: the server redirected from https to http; plain-text redirects are not followed", where).
			WithSuggestion("request the https URL the site should use, or the http URL directly if you accept plain text")
	case errors.Is(err, errRedirectScheme), errors.Is(err, errRedirectUser):
		what := errRedirectScheme
		if errors.Is(err, errRedirectUser) {
			what = errRedirectUser
		}
		return tool.Errorf(tool.PermissionDenied, "%s: %v is not followed", where, what).
			WithSuggestion("only http and https redirects without credentials in the URL are followed")
	case isTimeout(err):
		return tool.Errorf(tool.Timeout, "%s: no complete answer within %s", where, s.opts.Timeout).
			WithSuggestion("retry later, or ask for less (a narrower query, a Range header, HEAD first)").WithRetry(0)
	}
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	if errors.As(err, &certErr) || errors.As(err, &unknownAuth) || errors.As(err, &hostErr) {
		return tool.Errorf(tool.Unavailable, "%s: the server's TLS certificate is not valid: %v", where, err).
			WithSuggestion("the site cannot be reached securely; do not retry the same URL")
	}
	return tool.Errorf(tool.Unavailable, "%s: %v", where, err).
		WithSuggestion("the server could not be reached or broke the connection; retry later").WithRetry(0)
}

func (s *Set) egressFailure(e *egress.Error, where string) *tool.Error {
	var te *tool.Error
	switch e.Reason {
	case egress.NotListed:
		wild := e.Host
		if i := strings.IndexByte(e.Host, '.'); i > 0 && strings.Count(e.Host, ".") >= 2 {
			wild = "*" + e.Host[i:]
		}
		te = tool.Errorf(tool.PermissionDenied, "%s: the domain %s is not on the network allow-list", where, e.Host).
			WithSuggestion("if this domain is needed, ask the operator to add %q (or %q for its subdomains) to the network allow-list; do not try another spelling of the address", e.Host, wild).
			WithDetail("rule_to_add", e.Host)
	case egress.PortNotAllowed:
		te = tool.Errorf(tool.PermissionDenied, "%s: port %d of %s is not allowed (%s)", where, e.Port, e.Host, e.Detail).
			WithSuggestion("use the standard port, or ask the operator to add \"%s:%d\" to the network allow-list", e.Host, e.Port).
			WithDetail("rule_to_add", fmt.Sprintf("%s:%d", e.Host, e.Port))
	case egress.IPLiteral:
		te = tool.Errorf(tool.PermissionDenied, "%s: an IP address (%s) as host is not allowed", where, e.Host).
			WithSuggestion("use the site's domain name; an IP address is reachable only if the operator adds it to the allow-list")
	case egress.PrivateAddress, egress.MetadataAddress:
		te = tool.Errorf(tool.PermissionDenied, "%s: %s; internal addresses are refused as server-side request forgery (SSRF) protection", where, e.Detail).
			WithSuggestion("only public Internet addresses can be reached; internal, loopback and cloud-metadata addresses are refused whatever the name or spelling, so do not retry with another form").
			WithDetail("address", e.Addr)
	case egress.InvalidHost:
		te = tool.Errorf(tool.InvalidArguments, "%s: the host is not valid: %s", where, e.Detail).
			WithSuggestion("give an absolute URL with a domain name, e.g. https://example.com/path")
	case egress.DNSFailed:
		if isTimeout(e.Err) {
			te = tool.Errorf(tool.Timeout, "%s: looking up %s took too long", where, e.Host).WithRetry(0).
				WithSuggestion("retry later")
		} else {
			te = tool.Errorf(tool.Unavailable, "%s: the name %s could not be resolved: %s", where, e.Host, cause(e)).
				WithSuggestion("check the spelling of the domain; if it is right, the network or DNS is down: retry later").WithRetry(0)
		}
	case egress.DialFailed:
		if isTimeout(e.Err) {
			te = tool.Errorf(tool.Timeout, "%s: connecting to %s took too long", where, e.Host).WithRetry(0).
				WithSuggestion("retry later")
		} else {
			te = tool.Errorf(tool.Unavailable, "%s: could not connect to %s:%d: %v", where, e.Host, e.Port, e.Err).
				WithSuggestion("the server is down or refuses connections; retry later").WithRetry(0)
		}
	default:
		te = tool.Errorf(tool.PermissionDenied, "%s: refused by the network policy: %v", where, e)
	}
	return te.WithDetail("egress_reason", string(e.Reason))
}

// cause is the network error under e, or its detail.
func cause(e *egress.Error) string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Detail
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
