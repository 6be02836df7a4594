package web

import (
	"crypto/tls"
	"time"

	"github.com/toolgate/toolgate/sandbox/egress"
)

// Options configure the web tools.
type Options struct {
	// Policy decides which hosts may be reached and dials them. Required:
	// share it with the sandbox's egress proxy so that one allow-list holds.
	Policy *egress.Policy
	// GetOnly allows only GET and HEAD requests without a body.
	GetOnly bool
	// CacheDir keeps the last response of each successful GET, served when
	// the network later fails; "" turns the fallback off.
	CacheDir string
	// MaxCacheBytes caps the cache folder; the oldest entries go first.
	// Default 64 MiB.
	MaxCacheBytes int64
	// MaxResponseBytes caps a response body (after decompression); default
	// 2 MiB.
	MaxResponseBytes int64
	// MaxRequestBytes caps a request body; default 1 MiB.
	MaxRequestBytes int
	// Timeout caps a whole request, redirects and body included; default 30 s.
	Timeout time.Duration
	// MaxRedirects caps the redirects followed; default 5. Negative: none.
	MaxRedirects int
	// UserAgent is sent unless the call sets its own; default "toolgate".
	UserAgent string
	// TLSConfig, when set, configures TLS (e.g. RootCAs of a private CA).
	TLSConfig *tls.Config
}

func (o Options) withDefaults() Options {
	if o.MaxCacheBytes <= 0 {
		o.MaxCacheBytes = 64 << 20
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = 2 << 20
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = 1 << 20
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.MaxRedirects == 0 {
		o.MaxRedirects = 5
	}
	if o.MaxRedirects < 0 {
		o.MaxRedirects = 0
	}
	if o.UserAgent == "" {
		o.UserAgent = "toolgate"
	}
	return o
}
