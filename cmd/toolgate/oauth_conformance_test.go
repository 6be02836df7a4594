package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// driverEnv makes the test binary the conformance suite's client under
// test (see TestMain): a person in front of the gateway, who signs in with
// `toolgate auth login` when told to, follows the printed URL with an
// HTTP client (the suite's authorization server answers without asking),
// and calls the upstream's tools through `toolgate proxy`. Its value is
// the toolgate binary.
const driverEnv = "TOOLGATE_TEST_CONFORMANCE_DRIVER"

// oauthScenarios are the suite's client scenarios the gateway runs: every
// auth/* one of 0.1.16 but cross-app access (an enterprise identity
// provider's ID-JAG, a workload identity), and the three plain ones.
var oauthScenarios = []string{
	"initialize", "tools_call", "sse-retry",
	"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
	"auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
	"auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
	"auth/pre-registration", "auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
	"auth/client-credentials-jwt", "auth/client-credentials-basic",
	"auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported",
}

// TestProxyOAuthConformance runs the conformance suite's client scenarios
// (@modelcontextprotocol/conformance, `client --command`) against the
// gateway: discovery, registration (dynamic, pre-registered, Client ID
// Metadata Document), the authorization code flow with PKCE and the
// resource parameter, scope selection and step-up, token endpoint
// authentication, client credentials with a secret and with
// private_key_jwt, and the 2025-03-26 fallbacks.
func TestProxyOAuthConformance(t *testing.T) {
	node, modules := npmTools(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		scenario, out string
		passed        bool
	}
	results := make([]outcome, len(oauthScenarios))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 3)
	for i, sc := range oauthScenarios {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join(modules, ".bin", "conformance"), "client", "--command", self, "--scenario", sc, "--timeout", "60000")
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), driverEnv+"="+bin)
			out, err := cmd.CombinedOutput()
			results[i] = outcome{sc, string(out), err == nil}
		}()
	}
	wg.Wait()
	summary := regexp.MustCompile(`(?m)^(Passed|Failed|Total).*$`)
	for _, r := range results {
		line := strings.Join(summary.FindAllString(r.out, -1), "; ")
		if !r.passed {
			t.Errorf("%s failed through the gateway:\n%s", r.scenario, r.out)
			continue
		}
		t.Logf("%s: passed (%s)", r.scenario, line)
	}
}

// runConformanceDriver is the client under test of one scenario: the
// server URL is the last argument, the scenario and its context in the
// environment.
func runConformanceDriver(toolgateBin string) int {
	serverURL := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var sctx map[string]string
	if c := os.Getenv("MCP_CONFORMANCE_CONTEXT"); c != "" {
		var raw map[string]any
		if err := json.Unmarshal([]byte(c), &raw); err != nil {
			fmt.Fprintln(os.Stderr, "driver: context:", err)
			return 2
		}
		sctx = map[string]string{}
		for k, v := range raw {
			if s, ok := v.(string); ok {
				sctx[k] = s
			}
		}
	}
	if err := drive(toolgateBin, serverURL, scenario, sctx); err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		return 1
	}
	return 0
}

func drive(toolgateBin, serverURL, scenario string, sctx map[string]string) error {
	dir, err := os.MkdirTemp("", "toolgate-driver-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env := append(os.Environ(), "TOOLGATE_STATE="+filepath.Join(dir, "state"), "TOOLGATE_AUDIT="+filepath.Join(dir, "audit.jsonl"))

	// The operator's configuration: what a person would write for this
	// upstream, from what its owner told them (the scenario's context).
	var oauth []string
	authCode := strings.HasPrefix(scenario, "auth/") && !strings.HasPrefix(scenario, "auth/client-credentials")
	switch {
	case strings.HasPrefix(scenario, "auth/client-credentials"):
		oauth = append(oauth, "grant: client_credentials", "client_id: "+sctx["client_id"])
		if pem := sctx["private_key_pem"]; pem != "" {
			if err := os.WriteFile(filepath.Join(dir, "key.pem"), []byte(pem), 0o600); err != nil {
				return err
			}
			oauth = append(oauth, "private_key_file: key.pem", "signing_algorithm: "+sctx["signing_algorithm"])
		} else {
			env = append(env, "UP_SECRET="+sctx["client_secret"])
			oauth = append(oauth, "client_secret_env: UP_SECRET")
		}
	case authCode:
		oauth = append(oauth, "client_id_metadata_url: https://conformance-test.local/client-metadata.json")
		if id := sctx["client_id"]; id != "" {
			env = append(env, "UP_SECRET="+sctx["client_secret"])
			oauth = append(oauth, "client_id: "+id, "client_secret_env: UP_SECRET")
		}
	}
	cfg := fmt.Sprintf("servers:\n  - name: up\n    url: %s\n", serverURL)
	if len(oauth) > 0 {
		cfg += "    oauth:\n      " + strings.Join(oauth, "\n      ") + "\n"
	}
	config := filepath.Join(dir, "gateway.yaml")
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(policy, []byte("allow: [\"up__*\"]\n"), 0o600); err != nil {
		return err
	}

	login := func() error {
		cmd := exec.Command(toolgateBin, "auth", "login", "up", "--config", config, "--timeout", "30s")
		cmd.Env, cmd.Stderr = env, os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			cmd.Wait()
			return fmt.Errorf("auth login printed no URL: %v", err)
		}
		// The person's browser: follow the authorization URL to the
		// loopback redirect.
		resp, err := http.Get(strings.TrimSpace(line))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		go io.Copy(io.Discard, stdout)
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("auth login: %v", err)
		}
		return nil
	}
	if authCode {
		if err := login(); err != nil {
			return err
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	for attempt := 0; ; attempt++ {
		again, err := callThrough(ctx, toolgateBin, env, config, policy)
		if err != nil || !again {
			return err
		}
		if attempt == 3 {
			return fmt.Errorf("still asked to sign in after %d sign-ins", attempt+1)
		}
		fmt.Fprintln(os.Stderr, "driver: the gateway asks for a sign-in; signing in again")
		if err := login(); err != nil {
			return err
		}
	}
}

// callThrough starts the gateway over stdio, lists its tools and calls
// each; again says a call answered auth_required.
func callThrough(ctx context.Context, toolgateBin string, env []string, config, policy string) (again bool, err error) {
	cmd := exec.Command(toolgateBin, "proxy", "--config", config, "--policy", policy)
	cmd.Env, cmd.Stderr = env, os.Stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "conformance-driver", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return false, fmt.Errorf("starting the gateway: %w", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return false, err
	}
	for _, tl := range tools.Tools {
		args := map[string]any{}
		if strings.HasSuffix(tl.Name, "add_numbers") {
			args = map[string]any{"a": 5, "b": 3}
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tl.Name, Arguments: args})
		if err != nil {
			return false, fmt.Errorf("calling %s: %w", tl.Name, err)
		}
		if res.IsError {
			b, _ := json.Marshal(res.StructuredContent)
			if strings.Contains(string(b), `"auth_required"`) {
				return true, nil
			}
			return false, fmt.Errorf("calling %s: %s", tl.Name, b)
		}
	}
	return false, nil
}
