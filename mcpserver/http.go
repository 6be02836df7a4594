package mcpserver

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configure Handler.
type HTTPOptions struct {
	// Loopback says the handler is served on a loopback address: only
	// loopback Host and Origin names are accepted (DNS-rebinding guard).
	// Otherwise an Origin, when present, must match the Host.
	Loopback bool
	// MaxRequestBytes caps a request body; default 4 MiB.
	MaxRequestBytes int64
	// SessionTimeout closes sessions idle for this long; 0: 30 minutes;
	// < 0: never.
	SessionTimeout time.Duration
	// Stateless answers every POST on its own, with no Mcp-Session-Id:
	// any replica can answer any request. The server cannot send requests
	// to the client then (no elicitation, no roots/list), and a call
	// counts under the conversation the client names (ConversationMeta).
	Stateless bool
}

// Handler returns the streamable HTTP handler of s (mount it at /mcp). It
// keeps sessions (Mcp-Session-Id) unless o.Stateless, answers with SSE
// streams (a call answered before anything else was sent: with its answer
// as application/json, go-sdk patch 18), and guards against DNS rebinding
// and oversized requests.
func (s *Server) Handler(o HTTPOptions) http.Handler {
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = 4 << 20
	}
	switch {
	case o.SessionTimeout == 0:
		o.SessionTimeout = 30 * time.Minute
	case o.SessionTimeout < 0:
		o.SessionTimeout = 0
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: o.MaxRequestBytes,
		SessionTimeout:      o.SessionTimeout,
		Stateless:           o.Stateless,
		Logger:              s.log,
	})
	return guard(h, o.Loopback)
}

// guard refuses requests whose Host or Origin could come from a page of
// another site (DNS rebinding, cross-site requests).
func guard(next http.Handler, loopback bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var origin string // r.Header.Get("Origin"), by its canonical key
		if v := r.Header["Origin"]; len(v) > 0 {
			origin = v[0]
		}
		if loopback {
			if !loopbackHost(r.Host) {
				http.Error(w, "Forbidden: the Host header must name this machine (localhost, 127.0.0.1 or [::1]); refusing a possible DNS-rebinding request", http.StatusForbidden)
				return
			}
			if origin != "" && !loopbackOrigin(origin) {
				http.Error(w, "Forbidden: requests from a web page of another origin are refused", http.StatusForbidden)
				return
			}
		} else if origin != "" {
			u, err := url.Parse(origin)
			if err != nil || !strings.EqualFold(u.Host, r.Host) {
				http.Error(w, "Forbidden: the Origin does not match the Host; cross-origin requests are refused", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header ("name" or "name:port") names
// this machine.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return loopbackHost(u.Host)
}

// IsLoopback reports whether a listen address (host:port) is on a loopback
// interface. An empty host or a wildcard (0.0.0.0, ::) is not.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	return loopbackHost(host)
}
