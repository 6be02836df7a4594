package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/toolgate/toolgate/sandbox/egress"
)

// maxJWKSBytes caps a fetched key set.
const maxJWKSBytes = 1 << 20

// keySet is the verification keys of one issuer, from a file or a URL.
type keySet struct {
	url    string
	client *http.Client
	now    func() time.Time
	minGap time.Duration // between two fetches
	maxAge time.Duration // a fetched set older than this is fetched again

	fetchMu sync.Mutex // held while fetching

	mu      sync.Mutex // guards the fields below
	keys    []jose.JSONWebKey
	fetched time.Time // of the set held (zero: none yet)
	tried   time.Time // of the last fetch attempt
	err     error     // of the last fetch attempt
}

// loadKeys reads a key set file once.
func loadKeys(file string) (*keySet, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("auth: jwks_file: %w", err)
	}
	keys, err := parseKeys(data)
	if err != nil {
		return nil, fmt.Errorf("auth: jwks_file %s: %w", file, err)
	}
	return &keySet{keys: keys}, nil
}

// parseKeys reads a JWKS, keeping the public part of the keys usable for
// RS256, ES256 or EdDSA; symmetric keys are dropped (never HMAC).
func parseKeys(data []byte) ([]jose.JSONWebKey, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	var out []jose.JSONWebKey
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if !k.IsPublic() {
			k = k.Public()
		}
		if !k.Valid() || keyAlg(k.Key) == "" {
			continue
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, errors.New("the JWKS holds no RSA (2048 bits or more), P-256 or Ed25519 signing key")
	}
	return out, nil
}

// keyAlg is the one algorithm a public key may verify ("" none).
func keyAlg(k any) jose.SignatureAlgorithm {
	switch k := k.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() >= 2048 {
			return jose.RS256
		}
	case *ecdsa.PublicKey:
		if k.Curve == elliptic.P256() {
			return jose.ES256
		}
	case ed25519.PublicKey:
		return jose.EdDSA
	}
	return ""
}

// candidates returns the keys that may have signed a token with this kid
// and alg. An unknown kid (or a stale set) makes a fetched set be fetched
// again, at most once every minGap and one fetch at a time; tokens of
// known keys never wait for a fetch.
func (s *keySet) candidates(ctx context.Context, kid string, alg jose.SignatureAlgorithm) ([]jose.JSONWebKey, error) {
	keys, due, err := s.lookup(kid, alg)
	if !due {
		return keys, err
	}
	if len(keys) > 0 { // only stale: refresh unless a fetch is under way
		if !s.fetchMu.TryLock() {
			return keys, nil
		}
	} else {
		s.fetchMu.Lock()
	}
	defer s.fetchMu.Unlock()
	if keys, due, err = s.lookup(kid, alg); !due { // fetched meanwhile
		return keys, err
	}
	s.mu.Lock()
	s.tried = s.now()
	s.mu.Unlock()
	fetched, err := s.fetch(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
	if err == nil {
		s.keys, s.fetched = fetched, s.tried
	}
	if s.fetched.IsZero() {
		return nil, s.err
	}
	return match(s.keys, kid, alg), nil
}

// lookup returns the keys held for kid and alg, and whether a fetch is
// due: the set is stale or lacks such a key, and none was tried within
// minGap.
func (s *keySet) lookup(kid string, alg jose.SignatureAlgorithm) ([]jose.JSONWebKey, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := match(s.keys, kid, alg)
	if s.url == "" {
		return keys, false, nil
	}
	now := s.now()
	stale := s.fetched.IsZero() || now.Sub(s.fetched) >= s.maxAge
	if (stale || len(keys) == 0) && (s.tried.IsZero() || now.Sub(s.tried) >= s.minGap) {
		return keys, true, nil
	}
	if s.fetched.IsZero() {
		return nil, false, s.err
	}
	return keys, false, nil
}

// match returns the keys of set with this kid (any, when the token names
// none) whose type fits alg and whose own alg, when given, is alg.
func match(set []jose.JSONWebKey, kid string, alg jose.SignatureAlgorithm) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range set {
		if (kid != "" && k.KeyID != kid) || keyAlg(k.Key) != alg || (k.Algorithm != "" && k.Algorithm != string(alg)) {
			continue
		}
		out = append(out, k)
	}
	return out
}

func (s *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the JWKS: %s answered %s", s.url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetching the JWKS: %w", err)
	}
	if len(data) > maxJWKSBytes {
		return nil, fmt.Errorf("fetching the JWKS: larger than %d bytes", maxJWKSBytes)
	}
	keys, err := parseKeys(data)
	if err != nil {
		return nil, fmt.Errorf("the JWKS at %s: %w", s.url, err)
	}
	return keys, nil
}

// privateRanges are the non-public ranges jwt.allow_private_network opens
// (loopback is always open; cloud metadata addresses never are).
var privateRanges = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("fe80::/10"),
}

var loopbackRanges = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// jwksClient is an HTTP client that reaches only the JWKS URL's host and
// port, on a public address or loopback (or a private one when allowed),
// and follows no redirect.
func jwksClient(raw string, allowPrivate bool) (*http.Client, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("port %q: %w", p, err)
		}
	}
	addrs := loopbackRanges
	if allowPrivate {
		addrs = append(append([]netip.Prefix{}, loopbackRanges...), privateRanges...)
	}
	cfg := egress.PolicyConfig{Allow: []string{u.Hostname()}, Ports: []int{port}, AllowAddrs: addrs}
	if u.Scheme == "http" {
		cfg.Dial = loopbackOnly
	}
	pol, err := egress.NewPolicy(cfg)
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Transport: &http.Transport{DialContext: pol.DialContext, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: 10 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("the JWKS URL redirects; give the final URL")
		},
	}, nil
}

// loopbackOnly dials an address that passed the egress checks if it is a
// loopback one: plain http never leaves the machine.
func loopbackOnly(ctx context.Context, network, addr string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return nil, fmt.Errorf("plain http reaches only loopback addresses, not %s; use https", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}
