package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/runner"
)

const runnerSecret = "runner-secret-4f1c9a7e2b6d8035"

var runnerRE = regexp.MustCompile(`runner serving MCP at (http://\S+)/sandboxes/`)

// startRunner starts `toolgate runner` on loopback with workspaces in dir;
// the secret is also in another variable of its environment, which the
// runner does not remove, so that a command inheriting the runner's
// environment would show it. stop ends it (and waits).
func startRunner(t *testing.T, dir string) (base string, stop func()) {
	t.Helper()
	return startRunnerAt(t, "127.0.0.1:0", dir)
}

// startRunnerAt is startRunner listening on addr.
func startRunnerAt(t *testing.T, addr, dir string) (base string, stop func()) {
	t.Helper()
	return startRunnerCmd(t, exec.Command(bin, "runner", "--listen", addr, "--dir", dir, "--token-env", "TEST_RUNNER_SECRET"), nil)
}

// startRunnerCmd starts cmd, a toolgate runner (or a program that execs
// one) reading the secret from TEST_RUNNER_SECRET, and waits for its
// address; the lines it writes to stderr before it go to before.
func startRunnerCmd(t *testing.T, cmd *exec.Cmd, before *[]string) (base string, stop func()) {
	t.Helper()
	cmd.Env = append(os.Environ(), "TEST_RUNNER_SECRET="+runnerSecret, "TEST_RUNNER_CANARY="+runnerSecret)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cmd.Process.Signal(os.Interrupt)
			cmd.Wait()
		}
	}
	t.Cleanup(stop)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		announced := false
		for sc.Scan() {
			if m := runnerRE.FindStringSubmatch(sc.Text()); m != nil && !announced {
				announced = true
				found <- m[1]
			} else if before != nil && !announced {
				*before = append(*before, sc.Text())
			}
		}
	}()
	select {
	case base = <-found:
	case <-time.After(60 * time.Second):
		t.Fatal("toolgate runner did not announce its address")
	}
	return base, stop
}

// bearer adds a fixed Authorization header.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// sandboxSession makes sandbox id (PUT) and connects a go-sdk client to
// it with its token.
func sandboxSession(t *testing.T, ctx context.Context, base, id string) *mcp.ClientSession {
	t.Helper()
	req, _ := http.NewRequest("PUT", base+"/sandboxes/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+runner.Token([]byte(runnerSecret), id))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("PUT sandbox %s: %v %v", id, resp, err)
	}
	resp.Body.Close()
	c := mcp.NewClient(&mcp.Implementation{Name: "runner-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/sandboxes/" + id + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{runner.Token([]byte(runnerSecret), id)}}}, nil)
	if err != nil {
		t.Fatalf("connecting to sandbox %s: %v", id, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callText calls a tool and returns its text and whether it failed.
func callText(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.StructuredContent != nil {
		j, _ := json.Marshal(res.StructuredContent)
		b.Write(j)
	}
	return b.String(), res.IsError
}

// TestRunnerRefusesWithoutSecret: no secret (or a short one), no runner;
// nor with a --require that is no level.
func TestRunnerRefusesWithoutSecret(t *testing.T) {
	dir := t.TempDir()
	r := toolgate(t, dir, "", "runner", "--listen", "127.0.0.1:0", "--dir", filepath.Join(dir, "s"), "--token-env", "TEST_RUNNER_UNSET")
	if r.code != 2 || !strings.Contains(r.stderr, "set TEST_RUNNER_UNSET") {
		t.Errorf("without the secret: exit %d, stderr %q; want 2 naming the variable to set", r.code, r.stderr)
	}
	cmd := exec.Command(bin, "runner", "--listen", "127.0.0.1:0", "--dir", filepath.Join(dir, "s"), "--token-env", "TEST_RUNNER_SHORT")
	cmd.Env = append(os.Environ(), "TEST_RUNNER_SHORT=short")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "at least 16 bytes") {
		t.Errorf("with a short secret: %v, %q; want exit 2 asking for 16 bytes", err, out)
	}
	cmd = exec.Command(bin, "runner", "--listen", "127.0.0.1:0", "--dir", filepath.Join(dir, "s"), "--token-env", "TEST_RUNNER_SECRET", "--require", "none")
	cmd.Env = append(os.Environ(), "TEST_RUNNER_SECRET="+runnerSecret)
	out, err = cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "want full or reduced") {
		t.Errorf("--require none: %v, %q; want exit 2 naming full or reduced", err, out)
	}
}

// TestRunnerSandboxes: a file written through one sandbox's session is
// read back and seen by execute_command there; the environment of a
// command holds nothing of the runner's secret; another sandbox sees none
// of it, and its token opens nothing of the first; a runner restarted on
// the same folder keeps the workspace.
func TestRunnerSandboxes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sandboxes")
	base, stop := startRunner(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	a := sandboxSession(t, ctx, base, "conv-a")
	listed, err := a.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range listed.Tools {
		names[tl.Name] = true
	}
	for _, want := range []string{"read_file", "write_file", "execute_command", "run_code", "start_process", "read_process"} {
		if !names[want] {
			t.Errorf("sandbox tools %v lack %s", names, want)
		}
	}
	if names["http_request"] {
		t.Errorf("a runner serves http_request (the web stays with the gateway)")
	}
	if text, failed := callText(t, ctx, a, "write_file", map[string]any{"path": "notes.txt", "content": "hello from a\n"}); failed {
		t.Fatalf("write_file: %s", text)
	}
	if text, failed := callText(t, ctx, a, "read_file", map[string]any{"path": "notes.txt"}); failed || !strings.Contains(text, "hello from a") {
		t.Fatalf("read_file: %s (failed %v)", text, failed)
	}
	if text, failed := callText(t, ctx, a, "execute_command", map[string]any{"command": "cat notes.txt"}); failed || !strings.Contains(text, "hello from a") {
		t.Fatalf("execute_command cat: %s (failed %v)", text, failed)
	}
	text, failed := callText(t, ctx, a, "execute_command", map[string]any{"command": "env"})
	if failed || !strings.Contains(text, "PATH=") {
		t.Fatalf("execute_command env: %s (failed %v)", text, failed)
	}
	if strings.Contains(text, runnerSecret) || strings.Contains(text, "TEST_RUNNER") {
		t.Errorf("a command's environment holds the runner's secret: %s", text)
	}
	if _, err := os.Stat(filepath.Join(dir, "conv-a", "notes.txt")); err != nil {
		t.Errorf("the workspace is not DIR/ID: %v", err)
	}

	b := sandboxSession(t, ctx, base, "conv-b")
	if text, failed := callText(t, ctx, b, "read_file", map[string]any{"path": "notes.txt"}); !failed {
		t.Errorf("sandbox b read a's file: %s", text)
	}
	abs := filepath.Join(dir, "conv-a", "notes.txt")
	if text, _ := callText(t, ctx, b, "read_file", map[string]any{"path": abs}); strings.Contains(text, "hello from a") {
		t.Errorf("sandbox b read a's file by its absolute path: %s", text)
	}
	if text, _ := callText(t, ctx, b, "execute_command", map[string]any{"command": "cat " + abs + "; ls ..; cat ../conv-a/notes.txt"}); strings.Contains(text, "hello from a") {
		t.Errorf("a command of sandbox b read a's file: %s", text)
	}
	// b's token on a's path.
	req, _ := http.NewRequest("POST", base+"/sandboxes/conv-a/mcp", strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+runner.Token([]byte(runnerSecret), "conv-b"))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("b's token on a's path: %v %v, want 401", resp, err)
	}

	a.Close()
	stop()
	base, _ = startRunner(t, dir)
	a = sandboxSession(t, ctx, base, "conv-a")
	if text, failed := callText(t, ctx, a, "read_file", map[string]any{"path": "notes.txt"}); failed || !strings.Contains(text, "hello from a") {
		t.Errorf("after a restart on the same --dir: %s (failed %v)", text, failed)
	}
}

// TestRunnerTokens: without a token, with a wrong one or another
// sandbox's, every path is 401 (unknown ones too); the token in hex and
// in base64url opens its sandbox; the probes need none.
func TestRunnerTokens(t *testing.T) {
	base, _ := startRunner(t, filepath.Join(t.TempDir(), "sandboxes"))
	mac, _ := hex.DecodeString(runner.Token([]byte(runnerSecret), "conv-a"))
	do := func(method, path, auth string) int {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(initializeBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/sandboxes/conv-a/mcp", "/sandboxes/conv-a/other", "/sandboxes/conv-a", "/", "/mcp", "/nope",
		"/sandboxes/../mcp", "/sandboxes/conv-a/../conv-b/mcp", "/sandboxes/.%2e/mcp", "/healthz/x", "/sandboxes//mcp", "/sandboxes", "/sandboxes/*", "/sandboxes/*/mcp"} {
		for _, auth := range []string{"", "Bearer ", "Bearer wrong", "Bearer " + runner.Token([]byte(runnerSecret), "conv-b"),
			"Bearer " + runner.Token([]byte("another-secret-of-16+"), "conv-a"), "Basic " + runner.Token([]byte(runnerSecret), "conv-a")} {
			for _, method := range []string{"POST", "GET", "DELETE"} {
				if code := do(method, path, auth); code != http.StatusUnauthorized {
					t.Errorf("%s %s with %q: %d, want 401", method, path, auth, code)
				}
			}
		}
	}
	if code := do("POST", "/sandboxes/conv-a/mcp", "Bearer "+runner.Token([]byte(runnerSecret), "conv-a")); code != http.StatusNotFound {
		t.Errorf("a sandbox not made yet: %d, want 404", code)
	}
	if code := do("PUT", "/sandboxes/conv-a", "Bearer "+runner.Token([]byte(runnerSecret), "conv-a")); code != http.StatusCreated {
		t.Errorf("PUT /sandboxes/conv-a: %d, want 201", code)
	}
	for _, tok := range []string{runner.Token([]byte(runnerSecret), "conv-a"), base64.RawURLEncoding.EncodeToString(mac)} {
		if code := do("POST", "/sandboxes/conv-a/mcp", "Bearer "+tok); code != http.StatusOK {
			t.Errorf("initialize with the token %q: %d, want 200", tok, code)
		}
	}
	if code := do("GET", "/sandboxes/conv-a/other", "Bearer "+runner.Token([]byte(runnerSecret), "conv-a")); code != http.StatusNotFound {
		t.Errorf("an unknown path with the right token: %d, want 404", code)
	}
	if code := do("GET", "/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ready struct {
		Status  string `json:"status"`
		Sandbox struct {
			Level, Backend string
		} `json:"sandbox"`
	}
	json.NewDecoder(resp.Body).Decode(&ready)
	if resp.StatusCode != 200 || ready.Status != "ready" || ready.Sandbox.Level != "full" || ready.Sandbox.Backend != "native" {
		t.Errorf("/readyz: %d %+v; want ready with the local sandbox full by native", resp.StatusCode, ready)
	}
}
