package auth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// ClientCredentials are the OAuth 2.0 client credentials (RFC 6749 §4.4)
// toolgate uses for one upstream server: its own identity there, never the
// caller's.
type ClientCredentials struct {
	TokenURL string `yaml:"token_url" json:"token_url"`
	ClientID string `yaml:"client_id" json:"client_id"`
	// The secret is read from a file (its content, without the final
	// newline) or an environment variable, never written in the config.
	ClientSecretFile string   `yaml:"client_secret_file,omitempty" json:"client_secret_file,omitempty"`
	ClientSecretEnv  string   `yaml:"client_secret_env,omitempty" json:"client_secret_env,omitempty"`
	Scopes           []string `yaml:"scopes,omitempty" json:"scopes,omitempty"`
	// Resource, when set, is sent as the RFC 8707 resource parameter (the
	// upstream's URL), so that the token names it as its audience.
	Resource string `yaml:"resource,omitempty" json:"resource,omitempty"`
}

// Client returns an HTTP client that sends a client-credentials token with
// every request: fetched on first use from TokenURL through base (nil:
// http.DefaultClient), cached, and fetched again shortly before it
// expires.
func (c ClientCredentials) Client(base *http.Client) (*http.Client, error) {
	u, err := url.Parse(c.TokenURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopbackHost(u.Hostname()))) {
		return nil, fmt.Errorf("auth: token_url %q: want an https URL (plain http only on a loopback address)", c.TokenURL)
	}
	if c.ClientID == "" {
		return nil, errors.New("auth: client credentials need a client_id")
	}
	secret, err := c.secret()
	if err != nil {
		return nil, err
	}
	cc := &clientcredentials.Config{ClientID: c.ClientID, ClientSecret: secret, TokenURL: c.TokenURL, Scopes: c.Scopes}
	if c.Resource != "" {
		cc.EndpointParams = url.Values{"resource": {c.Resource}}
	}
	if base == nil {
		base = http.DefaultClient
	}
	fetcher := *base // a token endpoint that hangs must not hang every call
	if fetcher.Timeout == 0 {
		fetcher.Timeout = 30 * time.Second
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &fetcher)
	out := *base
	out.Transport = &oauth2.Transport{Source: cc.TokenSource(ctx), Base: base.Transport}
	return &out, nil
}

func (c ClientCredentials) secret() (string, error) {
	switch {
	case (c.ClientSecretFile == "") == (c.ClientSecretEnv == ""):
		return "", errors.New("auth: client credentials need exactly one of client_secret_file and client_secret_env")
	case c.ClientSecretFile != "":
		b, err := os.ReadFile(c.ClientSecretFile)
		if err != nil {
			return "", fmt.Errorf("auth: client_secret_file: %w", err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	s, ok := os.LookupEnv(c.ClientSecretEnv)
	if !ok || s == "" {
		return "", fmt.Errorf("auth: client_secret_env: the variable %s is not set", c.ClientSecretEnv)
	}
	return s, nil
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
