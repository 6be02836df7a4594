package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/store"
)

func newAuthCmd(s *streams) *cobra.Command {
	var configFile, policyFile, principal string
	cmd := &cobra.Command{
		Use:   "auth login|status|logout [UPSTREAM] --config FILE",
		Short: "Sign in to the OAuth-protected upstreams of a gateway configuration",
		Long: `An upstream whose server block has an oauth block (docs/auth.md) is reached
with a token of its own authorization server, never with the caller's.

  toolgate auth login UPSTREAM --config FILE   sign in (authorization code + PKCE):
      prints the authorization URL as one line on standard output, waits for
      the browser's redirect on a loopback address, keeps the tokens sealed in
      the state folder (or in Redis with the policy's state.redis), exits 0.
  toolgate auth status [UPSTREAM] --config FILE   who is signed in where, until when
  toolgate auth logout UPSTREAM --config FILE     forget the tokens, revoking them
      where the authorization server offers revocation (RFC 7009)

The sign-in is the local principal's: the one a stdio gateway (toolgate proxy
without --http) and a per_principal: false upstream use. Over HTTP each person
signs in in the console (Tools page).`,
		Example: `  toolgate auth login tracker --config gateway.yaml
  toolgate auth status --config gateway.yaml --json
  toolgate auth logout tracker --config gateway.yaml`,
	}
	cmd.PersistentFlags().StringVar(&configFile, "config", "", "the gateway configuration naming the upstreams (see docs/proxy.example.yaml)")
	cmd.PersistentFlags().StringVar(&principal, "principal", "", "the principal of an HTTP gateway to sign in (a person at the gateway's host); default: the local principal, whose sign-in also lists the upstream's tools")
	cmd.PersistentFlags().StringVar(&policyFile, "policy", "", "policy file: its state.redis keeps the tokens every replica uses")
	upstreams := func(cmd *cobra.Command) ([]*auth.Upstream, error) {
		if configFile == "" {
			return nil, usageErr("--config FILE: the gateway configuration whose upstream to sign in to")
		}
		tokens, closeTokens, err := tokenStore(policyFile)
		if err != nil {
			return nil, err
		}
		cmd.PostRun = func(*cobra.Command, []string) { closeTokens() }
		_, ups, _, err := loadGateway(configFile, func() (auth.TokenStore, error) { return tokens, nil })
		if err != nil {
			return nil, usageErr("%v", err)
		}
		return ups, nil
	}
	find := func(ups []*auth.Upstream, name string) (*auth.Upstream, error) {
		var names []string
		for _, u := range ups {
			if u.Name() == name {
				return u, nil
			}
			names = append(names, u.Name())
		}
		if len(names) == 0 {
			return nil, usageErr("--config %s: no server has an oauth block", configFile)
		}
		return nil, usageErr("no server %q with an oauth block in %s; those with one: %v", name, configFile, names)
	}
	upstream := func(cmd *cobra.Command, name string) (*auth.Upstream, error) {
		ups, err := upstreams(cmd)
		if err != nil {
			return nil, err
		}
		return find(ups, name)
	}

	var timeout time.Duration
	var listen string
	login := &cobra.Command{
		Use:   "login UPSTREAM",
		Short: "Sign in to an upstream: prints the URL to open, waits for the redirect",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			up, err := upstream(cmd, args[0])
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if up.Grant() == auth.GrantClientCredentials {
				return &exitError{exitUsage, fmt.Errorf("upstream %s signs in with client credentials: the gateway fetches its token itself", up.Name())}
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return usageErr("--listen %s: %v", listen, err)
			}
			defer ln.Close()
			redirect := "http://" + ln.Addr().String() + "/callback"
			p, err := up.BeginLogin(ctx, principal, redirect)
			if err != nil {
				return &exitError{exitTool, fmt.Errorf("signing in to %s: %w", up.Name(), err)}
			}
			fmt.Fprintln(s.err, "Open this URL in a browser to sign in to "+up.Name()+" (waiting "+timeout.String()+" for the redirect to "+redirect+"):")
			fmt.Fprintln(s.out, p.URL)
			done := make(chan error, 1)
			srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/callback" {
					http.NotFound(w, r)
					return
				}
				err := p.Finish(ctx, r.URL.Query())
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				if err != nil {
					w.WriteHeader(http.StatusBadRequest)
					fmt.Fprintf(w, "<!doctype html><title>toolgate</title><p>Signing in to %s failed: %s</p>", html.EscapeString(up.Name()), html.EscapeString(err.Error()))
				} else {
					fmt.Fprintf(w, "<!doctype html><title>toolgate</title><p>Signed in to %s. You can close this tab.</p>", html.EscapeString(up.Name()))
				}
				select {
				case done <- err:
				default:
				}
			})}
			go srv.Serve(ln)
			defer func() {
				// The redirect's answer goes out before the server closes.
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				srv.Shutdown(sctx)
			}()
			select {
			case err = <-done:
			case <-ctx.Done():
				err = fmt.Errorf("no redirect came back within %s: run the command again and open the URL it prints", timeout)
			}
			if err != nil {
				return &exitError{exitTool, fmt.Errorf("signing in to %s: %w", up.Name(), err)}
			}
			fmt.Fprintln(s.err, "Signed in to "+up.Name()+".")
			return nil
		},
	}
	login.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the browser's redirect")
	login.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "loopback address of the redirect URI (a fixed port for a pre-registered client's redirect URI)")

	var asJSON bool
	status := &cobra.Command{
		Use:   "status [UPSTREAM]",
		Short: "Say where the local principal is signed in",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ups, err := upstreams(cmd)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				up, err := find(ups, args[0])
				if err != nil {
					return err
				}
				ups = []*auth.Upstream{up}
			}
			enc := json.NewEncoder(s.out)
			for _, up := range ups {
				st, err := up.Status(cmd.Context(), principal)
				if err != nil {
					return &exitError{exitTool, err}
				}
				switch {
				case asJSON:
					enc.Encode(st)
				case !st.SignedIn:
					fmt.Fprintf(s.out, "%s\tnot signed in (%s)\n", st.Upstream, st.Grant)
				default:
					until := "no expiry"
					if !st.Expiry.IsZero() {
						until = "token until " + st.Expiry.Local().Format(time.RFC3339)
					}
					if st.Refreshes {
						until += ", refreshable"
					}
					fmt.Fprintf(s.out, "%s\tsigned in at %s (%s) scopes %v\n", st.Upstream, st.Issuer, until, st.Scopes)
				}
			}
			return nil
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "one JSON object per upstream")

	logout := &cobra.Command{
		Use:   "logout UPSTREAM",
		Short: "Forget the local principal's tokens of an upstream, revoking them where offered",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			up, err := upstream(cmd, args[0])
			if err != nil {
				return err
			}
			revoked, err := up.Logout(cmd.Context(), principal)
			switch {
			case err != nil && !revoked:
				return &exitError{exitTool, fmt.Errorf("signed out of %s, but revoking the tokens failed: %w", up.Name(), err)}
			case revoked:
				fmt.Fprintln(s.err, "Signed out of "+up.Name()+"; its tokens are revoked.")
			default:
				fmt.Fprintln(s.err, "Signed out of "+up.Name()+".")
			}
			return nil
		},
	}
	cmd.AddCommand(login, status, logout)
	return cmd
}

// tokenKeyEnv names the secret that seals the grants: required with
// state.redis (every replica the same), optional otherwise (default: a
// random key in the state folder).
const tokenKeyEnv = "TOOLGATE_TOKEN_KEY"

// replicaSecret is the sealing secret every replica shares: the one the
// policy's approvals.state_key_env names, else $TOOLGATE_TOKEN_KEY (that of
// the upstream sign-ins); nil without either. Each user derives a key of
// its own from it.
func replicaSecret(pol *policy.Policy) []byte {
	if env := pol.Approvals.StateKeyEnv; env != "" {
		if s := os.Getenv(env); s != "" {
			return []byte(s)
		}
	}
	if s := os.Getenv(tokenKeyEnv); s != "" {
		return []byte(s)
	}
	return nil
}

// tokenStore opens where grants are kept: the policy's state.redis, else
// sealed files in the state folder. The function it returns closes it.
func tokenStore(policyFile string) (auth.TokenStore, func(), error) {
	none := func() {}
	var key []byte
	if secret := os.Getenv(tokenKeyEnv); secret != "" {
		var err error
		if key, err = auth.KeyFromSecret(secret); err != nil {
			return nil, none, usageErr("%s: %v", tokenKeyEnv, err)
		}
	}
	if policyFile != "" {
		pol, err := loadPolicy(policyFile)
		if err != nil {
			return nil, none, err
		}
		if pol.State.Redis != nil {
			if key == nil {
				return nil, none, usageErr("the policy's state.redis keeps the upstream sign-ins every replica uses: set %s to a secret of 32 bytes or more, the same on every replica (e.g. openssl rand -hex 32)", tokenKeyEnv)
			}
			rc, err := openState(pol)
			if err != nil {
				return nil, none, err
			}
			s, err := auth.NewSealer(key)
			if err != nil {
				rc.Close()
				return nil, none, err
			}
			return &auth.SealedTokens{Blobs: store.NewRedisBlobs(rc, pol.State.Redis.KeyPrefix()), Sealer: s}, func() { rc.Close() }, nil
		}
	}
	t, err := auth.OpenFileTokens(filepath.Join(stateDir(), "oauth"), key)
	if err != nil {
		return nil, none, &exitError{exitTool, err}
	}
	return t, none, nil
}
