//go:build linux

package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/audit"
)

// TestSandboxLevelRequire: toolgate run as root of a user namespace in
// which no further one may be made (max_user_namespaces 0, as some nodes
// set) measures the reduced level; under the default sandbox.require
// (full) execute_command answers sandbox_violation naming the user
// namespace and the setting that gives it, and runs nothing; under
// require: reduced it runs, and its protections do not list user.
func TestSandboxLevelRequire(t *testing.T) {
	ws := workspace(t)
	reduced := filepath.Join(filepath.Dir(ws), "reduced.yaml")
	if err := os.WriteFile(reduced, []byte("sandbox:\n  require: reduced\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	call := func(args ...string) callOutput {
		t.Helper()
		cmd := exec.Command("unshare", append([]string{"-Ur", "sh", "-c", `echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"`, "sh",
			bin, "call", "execute_command", `{"command":"echo ran > ran.txt; echo ran"}`, "--yes", "--audit", "off"}, args...)...)
		cmd.Dir = ws
		out, _ := cmd.Output()
		return parseCall(t, result{stdout: string(out)})
	}
	got := call()
	if got.Error == nil || got.Error.Type != "sandbox_violation" || !strings.Contains(got.Error.Message, "user namespace") ||
		!strings.Contains(got.Error.Message, "max_user_namespaces") || !strings.Contains(got.Error.Message, "sandbox.mode=userns") {
		t.Fatalf("require full: %+v %+v, want sandbox_violation naming the user namespace and what gives it", got.Error, got.Content)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran.txt")); err == nil {
		t.Fatal("require full: the command ran")
	}
	got = call("--policy", reduced)
	var st struct {
		ExitCode    int    `json:"exit_code"`
		Stdout      string `json:"stdout"`
		Protections struct {
			Namespaces []string `json:"namespaces"`
		} `json:"protections"`
	}
	b, _ := json.Marshal(got.Structured)
	json.Unmarshal(b, &st)
	if got.IsError || st.ExitCode != 0 || st.Stdout != "ran\n" || slices.Contains(st.Protections.Namespaces, "user") || !slices.Contains(st.Protections.Namespaces, "mount") {
		t.Fatalf("require reduced: %+v %s", got.Error, b)
	}
}

// TestSandboxLevelMaskedProc: toolgate run where /proc is masked (a user
// and mount namespace with /proc/sys bound read-only over itself, as a
// container runtime does), so that neither the native sandbox nor
// bubblewrap can mount a fresh /proc, measures reduced, by the reduced
// sandbox: under the default require full execute_command answers
// sandbox_violation naming the mount namespace and the chart value, and
// runs nothing; under require: reduced it runs, with no namespace of its
// own, Landlock, seccomp, no_new_privs and no capability.
func TestSandboxLevelMaskedProc(t *testing.T) {
	ws := workspace(t)
	reduced := filepath.Join(filepath.Dir(ws), "reduced.yaml")
	if err := os.WriteFile(reduced, []byte("sandbox:\n  require: reduced\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	call := func(args ...string) callOutput {
		t.Helper()
		cmd := exec.Command("unshare", append([]string{"-Urm", "sh", "-c", `mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys && exec "$@"`, "sh",
			bin, "call", "execute_command", `{"command":"echo ran > ran.txt; echo ran"}`, "--yes", "--audit", "off"}, args...)...)
		cmd.Dir = ws
		out, _ := cmd.Output()
		return parseCall(t, result{stdout: string(out)})
	}
	got := call()
	if got.Error == nil || got.Error.Type != "sandbox_violation" || !strings.Contains(got.Error.Message, "gives reduced") ||
		!strings.Contains(got.Error.Message, "mount namespace") || !strings.Contains(got.Error.Message, "procMount: Unmasked") {
		t.Fatalf("require full: %+v %+v, want sandbox_violation at reduced naming the mount namespace and what gives it", got.Error, got.Content)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran.txt")); err == nil {
		t.Fatal("require full: the command ran")
	}
	got = call("--policy", reduced)
	var st struct {
		ExitCode    int    `json:"exit_code"`
		Stdout      string `json:"stdout"`
		Backend     string `json:"backend"`
		Protections struct {
			Namespaces   []string `json:"namespaces"`
			Landlock     string   `json:"landlock"`
			Seccomp      bool     `json:"seccomp"`
			NoNewPrivs   bool     `json:"no_new_privs"`
			Capabilities string   `json:"capabilities"`
		} `json:"protections"`
	}
	b, _ := json.Marshal(got.Structured)
	json.Unmarshal(b, &st)
	p := st.Protections
	if got.IsError || st.ExitCode != 0 || st.Stdout != "ran\n" || st.Backend != "reduced" || len(p.Namespaces) != 0 || !strings.HasPrefix(p.Landlock, "v") ||
		!p.Seccomp || !p.NoNewPrivs || p.Capabilities != "none" {
		t.Fatalf("require reduced: %+v %s", got.Error, b)
	}
	if data, err := os.ReadFile(filepath.Join(ws, "ran.txt")); err != nil || string(data) != "ran\n" {
		t.Fatalf("require reduced: the workspace's file %q, %v", data, err)
	}
}

// TestSandboxLevelReported: serve measures the level at start and says it
// in /readyz and in one audit record of the pseudo-tool "sandbox".
func TestSandboxLevelReported(t *testing.T) {
	root, auditLog := serveWorkspace(t)
	u := strings.TrimSuffix(startHTTP(t, "serve", "--root", root, "--audit", auditLog, "--http", "127.0.0.1:0"), "/mcp")
	resp, err := http.Get(u + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status  string
		Sandbox struct {
			Level, Backend string
			Missing        []string
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "ready" || body.Sandbox.Level != "full" || body.Sandbox.Backend != "native" {
		t.Fatalf("/readyz: %v %+v, want ready with the sandbox full by native", err, body)
	}
	data, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Tool == "sandbox" {
			n++
			if r.Outcome != "full" || r.Mode != "commands run" || !strings.Contains(r.Rule, "require full") {
				t.Errorf("audit record %+v", r)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d sandbox records in the audit log, want 1", n)
	}
}
