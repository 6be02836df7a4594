package cli

import (
	"fmt"
	"net"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/policy"
)

// checkHTTPAddr refuses a --http address that is not HOST:PORT, and a
// non-loopback one unless the policy authenticates callers (its auth
// block) or --allow-remote says something in front does.
func checkHTTPAddr(addr string, allowRemote bool, pol *policy.Policy, what string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return usageErr("--http %q: want HOST:PORT, e.g. 127.0.0.1:8765", addr)
	}
	if !mcpserver.IsLoopback(addr) && !allowRemote && pol.Auth == nil {
		return usageErr("--http %s is not a loopback address and the policy has no auth block: anyone who can reach %s could run the tools; add an auth block to the policy (see docs/auth.md), use 127.0.0.1:PORT (or [::1]:PORT), or pass --allow-remote if a proxy in front authenticates clients", addr, what)
	}
	return nil
}

// authenticator returns the verifier of the policy's auth block, nil
// without one.
func authenticator(pol *policy.Policy) (*auth.Authenticator, error) {
	if pol.Auth == nil {
		return nil, nil
	}
	a, err := auth.New(*pol.Auth, auth.Options{})
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return a, nil
}

// authNote says how HTTP callers are authenticated, for the start-up line.
func authNote(a *auth.Authenticator) string {
	if a == nil {
		return "no authentication"
	}
	return fmt.Sprintf("callers authenticated for %s; resource metadata at %s", a.Metadata().Resource, a.ResourceMetadataURL())
}
