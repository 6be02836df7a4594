package exec

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// TestProtectedPathsReadOnly: a command cannot plant a git hook or change
// git's config through any spelling the command check misses (a variable,
// a program), yet it still reads them, and the rest of the workspace stays
// writable. A link named .git is not mounted (it could point outside).
func TestProtectedPathsReadOnly(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{".git/hooks", ".vscode"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644)
	tools := toolMap(t, Options{Root: ws})
	for _, c := range []map[string]any{
		{"command": "d=.git; echo id > $d/hooks/pre-commit"},
		{"command": "d=.git; echo '[core] fsmonitor = id' >> $d/config"},
		{"command": "v=.vscode; echo '{}' > $v/tasks.json"},
	} {
		r := call(t, tools["execute_command"], context.Background(), c)
		if r.Error == nil && r.Structured.(Output).ExitCode == 0 {
			t.Errorf("%v ran: %s", c["command"], r.Text())
		}
	}
	r := call(t, tools["run_code"], context.Background(), map[string]any{"language": "python", "code": "open('.g'+'it/hooks/post-checkout', 'w').write('id')"})
	if r.Error == nil && r.Structured.(Output).ExitCode == 0 {
		t.Errorf("python wrote a hook: %s", r.Text())
	}
	for _, p := range []string{".git/hooks/pre-commit", ".git/hooks/post-checkout", ".vscode/tasks.json"} {
		if _, err := os.Stat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s was created", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); string(b) != "[core]\n" {
		t.Errorf(".git/config changed: %q", b)
	}
	r = call(t, tools["execute_command"], context.Background(), map[string]any{"command": "cat .git/config > copy.txt && echo ok"})
	if r.Error != nil || r.Structured.(Output).ExitCode != 0 {
		t.Fatalf("reading .git and writing the workspace: %s", r.Text())
	}

	// A symbolic link is never mounted: it would bring its target in.
	link := t.TempDir()
	os.Symlink(t.TempDir(), filepath.Join(link, ".git"))
	if got := protectedMounts(link); len(got) != 0 {
		t.Errorf("protectedMounts followed a link: %v", got)
	}
}

// TestTimeoutOverflow: a timeout too large for time.Duration is refused,
// not wrapped around to a negative (unlimited) one.
func TestTimeoutOverflow(t *testing.T) {
	tools := toolMap(t, Options{Root: t.TempDir()})
	for _, to := range []float64{1e308, 1e10} {
		r := call(t, tools["execute_command"], context.Background(), map[string]any{"command": "true", "timeout": to})
		if r.Error == nil || r.Error.Type != tool.InvalidArguments {
			t.Errorf("timeout %g: %s", to, r.Text())
		}
	}
}

// TestFileSizeLimitIsAnError: a write cut at the file size limit is a
// sandbox_violation, also when a shell reports it (exit 153).
func TestFileSizeLimitIsAnError(t *testing.T) {
	ws := t.TempDir()
	tools := toolMap(t, Options{Root: ws})
	r := call(t, tools["execute_command"], context.Background(), map[string]any{"command": "head -c 300000000 /dev/zero > big.bin"})
	if r.Error == nil || r.Error.Type != tool.SandboxViolation || r.Error.Details["limit"] != "file_size" {
		t.Fatalf("want a file_size sandbox_violation: %s", r.Text())
	}
}
