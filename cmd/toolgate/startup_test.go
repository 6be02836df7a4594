package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneCallKeepsEveryCheck runs `toolgate call` as a process per call,
// the way bench/startup times it, and checks that a start made lean (tool
// schemas compiled on first use, meta-schemas not compiled, lazy regular
// expressions) gave up no check: each call's arguments are validated
// against the tool's schema, the policy (a file's rules, its mode, the
// protected paths, levels) decides, secrets are redacted, and each call
// appends exactly one audit record that names it, with a chain that
// verifies at the end.
func TestOneCallKeepsEveryCheck(t *testing.T) {
	ws := workspace(t)
	files := map[string]string{
		"notes.txt":       "alpha\nbeta\ngamma\n",
		"secret/plan.txt": "the plan\n",
		".env":            "TOKEN=x\n",
		".git/config":     "[core]\n",
		"keys.txt":        "aws AKIAABCDEFGHIJKLMNOP here\ntoken ghp_" + strings.Repeat("a", 36) + "\n",
	}
	for name, body := range files {
		os.MkdirAll(filepath.Join(ws, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pol := filepath.Join(filepath.Dir(ws), "policy.yaml")
	os.WriteFile(pol, []byte("deny:\n  - read_file(secret/**)\n  - list_directory(secret)\n"), 0o644)
	ro := filepath.Join(filepath.Dir(ws), "readonly.yaml")
	os.WriteFile(ro, []byte("mode: read-only\n"), 0o644)
	log := filepath.Join(filepath.Dir(ws), "audit.jsonl")

	tests := []struct {
		name    string
		args    []string
		errType string // "" for success
		outcome string // of the audit record
		want    string // in the output's text, when set
	}{
		// the schema: types, bounds, required, unknown properties, in several tools
		{"valid", []string{"read_file", `{"path":"notes.txt","limit":2}`}, "", "ok", "1|alpha\n2|beta"},
		{"below minimum", []string{"read_file", `{"path":"notes.txt","limit":0}`}, "invalid_arguments", "invalid", ""},
		{"above maximum", []string{"read_file", `{"path":"notes.txt","limit":2001}`}, "invalid_arguments", "invalid", ""},
		{"offset below minimum", []string{"read_file", `{"path":"notes.txt","offset":-3}`}, "invalid_arguments", "invalid", ""},
		{"wrong type", []string{"read_file", `{"path":5}`}, "invalid_arguments", "invalid", ""},
		{"wrong type, nested value", []string{"read_file", `{"path":{"a":"notes.txt"}}`}, "invalid_arguments", "invalid", ""},
		{"missing required", []string{"read_file", `{"limit":3}`}, "invalid_arguments", "invalid", ""},
		{"unknown property", []string{"read_file", `{"path":"notes.txt","pathh":"x"}`}, "invalid_arguments", "invalid", ""},
		{"not an object", []string{"read_file", `["notes.txt"]`}, "invalid_arguments", "invalid", ""},
		{"malformed", []string{"read_file", `{"path":"notes.txt"`}, "invalid_arguments", "invalid", ""},
		{"write without content", []string{"write_file", `{"path":"n.txt"}`}, "invalid_arguments", "invalid", ""},
		{"list with a number", []string{"list_directory", `{"path":7}`}, "invalid_arguments", "invalid", ""},
		{"search without pattern", []string{"search_files", `{}`}, "invalid_arguments", "invalid", ""},
		{"command of the wrong type", []string{"execute_command", `{"command":["true"]}`}, "invalid_arguments", "invalid", ""},
		{"unknown tool", []string{"read_fil", `{"path":"notes.txt"}`}, "unknown_tool", "invalid", ""},
		// the policy: a file's rules, its mode, the protected paths, levels
		{"deny rule", []string{"read_file", `{"path":"secret/plan.txt"}`, "--policy", pol}, "permission_denied", "denied", ""},
		{"deny rule on a folder", []string{"list_directory", `{"path":"secret"}`, "--policy", pol}, "permission_denied", "denied", ""},
		{"other files under the policy", []string{"read_file", `{"path":"notes.txt","limit":1}`, "--policy", pol}, "", "ok", "1|alpha"},
		{"read-only mode", []string{"write_file", `{"path":"n.txt","content":"x"}`, "--policy", ro}, "permission_denied", "denied", ""},
		{"protected secret file", []string{"read_file", `{"path":".env"}`}, "permission_denied", "denied", ""},
		{"protected git config", []string{"write_file", `{"path":".git/config","content":"x"}`, "--yes"}, "permission_denied", "denied", ""},
		{"level 3 without --yes", []string{"delete_file", `{"path":"notes.txt"}`}, "approval_denied", "denied", ""},
		{"escape from the root", []string{"read_file", `{"path":"../policy.yaml"}`}, "permission_denied", "", ""},
		// redaction of secrets in what a tool returns
		{"secrets redacted", []string{"read_file", `{"path":"keys.txt"}`}, "", "ok", "[REDACTED:aws_access_key]"},
	}
	records := 0
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// a session each: the denial breaker would stop the refused calls' session
			r := toolgate(t, ws, "", append([]string{"call", "--session", tc.name}, tc.args...)...)
			out := parseCall(t, r)
			if tc.errType == "" {
				if r.code != 0 || out.IsError {
					t.Fatalf("exit %d, %+v; want success", r.code, out.Error)
				}
			} else if r.code != 1 || out.Error == nil || out.Error.Type != tc.errType {
				t.Fatalf("exit %d, error %+v; want exit 1 and %s", r.code, out.Error, tc.errType)
			}
			text := ""
			for _, c := range out.Content {
				text += c.Text
			}
			if tc.want != "" && !strings.Contains(text, tc.want) {
				t.Errorf("output %q, want %q in it", text, tc.want)
			}
			if strings.Contains(text, "AKIAABCDEFGHIJKLMNOP") || strings.Contains(text, "ghp_aaaa") {
				t.Errorf("a secret reached the output: %q", text)
			}
			recs := auditRecords(t, log)
			if n := records + 1; len(recs) != n {
				records = len(recs)
				t.Fatalf("%d audit records after the call, want %d", len(recs), n)
			}
			records++
			last := recs[len(recs)-1]
			if last["tool"] != tc.args[0] || tc.outcome != "" && last["outcome"] != tc.outcome || last["error_type"] != tc.errType || last["hash"] == "" {
				t.Errorf("audit record %+v; want tool %s, outcome %s, error type %q", last, tc.args[0], tc.outcome, tc.errType)
			}
		})
	}
	if r := toolgate(t, ws, "", "audit", "verify"); r.code != 0 || !strings.Contains(r.stdout, "OK") {
		t.Fatalf("audit verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(b) != files["notes.txt"] {
		t.Error("a refused call changed notes.txt")
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".git/config")); string(b) != files[".git/config"] {
		t.Error("a refused call changed .git/config")
	}
}
