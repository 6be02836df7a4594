package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestCommandCannotRewriteOwnFiles: a sandboxed command run through
// `toolgate call … --yes` cannot change the policy file or the audit log
// when they lie inside the workspace, by any program or spelling; the next
// call still runs under the original policy, and the log still verifies.
func TestCommandCannotRewriteOwnFiles(t *testing.T) {
	ws := workspace(t)
	pol := filepath.Join(ws, "toolgate.yaml")
	log := filepath.Join(ws, "logs", "audit.jsonl")
	policyText := "deny:\n  - Read(secret.txt)\n"
	os.MkdirAll(filepath.Dir(log), 0o755)
	os.WriteFile(pol, []byte(policyText), 0o644)
	os.WriteFile(filepath.Join(ws, "secret.txt"), []byte("s\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "open.yaml"), []byte("mode: bypass\n"), 0o644)
	flags := []string{"--policy", pol, "--audit", log, "--yes"}
	run := func(tool, args string) callOutput {
		t.Helper()
		return parseCall(t, toolgate(t, ws, "", append([]string{"call", tool, args}, flags...)...))
	}
	// The log exists once a first call is recorded.
	if out := run("read_file", `{"path":"secret.txt"}`); out.Error == nil || out.Error.Type != "permission_denied" {
		t.Fatalf("the policy does not hold to begin with: %+v", out)
	}
	logBefore, _ := os.ReadFile(log)
	attacks := []string{
		`python3 -c "open('toolgate.yaml','w').write('mode: bypass\\n')"`,
		`echo 'mode: bypass' > toolgate.yaml`,
		`mv -f open.yaml toolgate.yaml`,
		`cp open.yaml toolgate.yaml`,
		`rm -f toolgate.yaml && echo 'mode: bypass' > toolgate.yaml`,
		`truncate -s 0 toolgate.yaml`,
		`python3 -c "import os; os.replace('open.yaml', 'toolgate.yaml')"`,
		`ln -sf open.yaml toolgate.yaml`,
		`truncate -s 0 logs/audit.jsonl`,
		`echo '{}' >> logs/audit.jsonl`,
		`mv logs logs.old && mkdir logs && echo '{}' > logs/audit.jsonl`,
		`python3 -c "import os; os.rename('logs', 'l'); os.mkdir('logs'); open('logs/audit.jsonl', 'w')"`,
	}
	for _, a := range attacks {
		args, _ := json.Marshal(map[string]any{"command": a})
		out := run("execute_command", string(args))
		failed := out.IsError
		if s, ok := out.Structured.(map[string]any); ok && s["exit_code"] != float64(0) {
			failed = true
		}
		if !failed {
			t.Errorf("%s: succeeded: %s", a, out.Content[0].Text)
		}
		if b, err := os.ReadFile(pol); err != nil || string(b) != policyText {
			t.Fatalf("%s: the policy file changed: %q %v", a, b, err)
		}
		if b, err := os.ReadFile(log); err != nil || len(b) <= len(logBefore) || string(b[:len(logBefore)]) != string(logBefore) {
			t.Fatalf("%s: the audit log was rewritten", a)
		}
		logBefore, _ = os.ReadFile(log)
	}
	// A log of its own for the last call: the refusals in a row above
	// would trip the session's denial breaker.
	r := toolgate(t, ws, "", "call", "read_file", `{"path":"secret.txt"}`, "--policy", pol, "--audit", filepath.Join(filepath.Dir(ws), "other.jsonl"))
	if out := parseCall(t, r); out.Error == nil || out.Error.Type != "permission_denied" {
		t.Fatalf("the next call does not run under the original policy: %s", r.stdout)
	}
	if r := toolgate(t, ws, "", "audit", "verify", log); r.code != 0 {
		t.Fatalf("the audit log does not verify: %s %s", r.stdout, r.stderr)
	}
}
