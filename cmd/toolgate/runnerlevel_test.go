package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunnerSandboxLevel: a runner where user namespaces are refused (a
// user namespace whose max_user_namespaces is 0) measures reduced at
// start, says so on stderr and in /readyz, and answers execute_command with
// sandbox_violation under the default --require full (the command does not
// run); with --require reduced it runs it, without a user namespace.
func TestRunnerSandboxLevel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := func(require string) (string, []string) {
		var lines []string
		cmd := exec.Command("unshare", "-Ur", "sh", "-c", `echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"`, "sh",
			bin, "runner", "--listen", "127.0.0.1:0", "--dir", filepath.Join(t.TempDir(), "s"), "--token-env", "TEST_RUNNER_SECRET", "--require", require)
		base, _ := startRunnerCmd(t, cmd, &lines)
		return base, lines
	}
	base, lines := start("full")
	if len(lines) == 0 || !strings.Contains(lines[0], "runner sandbox level reduced (require full)") || !strings.Contains(lines[0], "max_user_namespaces") {
		t.Errorf("the runner's first lines %q: want its level, what is missing and what gives it", lines)
	}
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	var ready struct {
		Status  string
		Sandbox struct {
			Level   string
			Missing []string
		}
	}
	json.NewDecoder(resp.Body).Decode(&ready)
	resp.Body.Close()
	if resp.StatusCode != 200 || ready.Sandbox.Level != "reduced" || !strings.Contains(strings.Join(ready.Sandbox.Missing, ","), "user namespace") {
		t.Errorf("/readyz: %d %+v, want ready at reduced, the user namespace missing", resp.StatusCode, ready)
	}
	a := sandboxSession(t, ctx, base, "conv-a")
	text, failed := callText(t, ctx, a, "execute_command", map[string]any{"command": "echo ran > ran.txt; echo ran"})
	if !failed || !strings.Contains(text, "sandbox_violation") && !strings.Contains(text, "weaker than the policy requires") {
		t.Errorf("require full: %s (failed %v), want sandbox_violation", text, failed)
	}
	if text, failed := callText(t, ctx, a, "read_file", map[string]any{"path": "ran.txt"}); !failed {
		t.Errorf("require full: the command ran (ran.txt: %s)", text)
	}

	base, _ = start("reduced")
	b := sandboxSession(t, ctx, base, "conv-b")
	text, failed = callText(t, ctx, b, "execute_command", map[string]any{"command": "echo ran; readlink /proc/self/ns/user"})
	if failed || !strings.Contains(text, "ran") || strings.Contains(text, `"user"`) {
		t.Errorf("require reduced: %s (failed %v), want it run without a user namespace of its own", text, failed)
	}
}
