package exec

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policy"
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
	// Nor one reached through a linked folder (.github -> elsewhere).
	elsewhere := t.TempDir()
	os.WriteFile(filepath.Join(elsewhere, "copilot-instructions.md"), []byte("x"), 0o644)
	os.Symlink(elsewhere, filepath.Join(link, ".github"))
	g, err := newGuard(link, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.readOnly) != 0 || len(g.watched) < 2 {
		t.Errorf("a link outside was followed: read-only %v, watched %v", g.readOnly, g.watched)
	}
}

// TestConfigPathsReadOnly: every config path of the policy's list
// (policy.ConfigPaths) that exists at the top of the workspace, as a file
// or as a folder, is read-only inside the sandbox: a command can read it
// but not append to it, create in it, rename or remove it, nor rename or
// remove the folder above it (.github, .config); the rest of the
// workspace, the folder around a nested entry included, stays writable.
func TestConfigPathsReadOnly(t *testing.T) {
	var names []string
	for _, c := range policy.ConfigPaths() {
		names = append(names, c.Name)
	}
	// The folders above the entries with a slash (.github, .config) are
	// mount points: renaming one away, to put another entry in its place,
	// fails (EBUSY), as does removing it.
	var parents []string
	for _, n := range names {
		if d := path.Dir(n); d != "." && !slices.Contains(parents, d) {
			parents = append(parents, d)
		}
	}
	for _, form := range []string{"file", "folder"} {
		t.Run(form, func(t *testing.T) {
			ws := t.TempDir()
			for _, n := range names {
				p := filepath.Join(ws, n)
				if form == "folder" {
					p = filepath.Join(p, "x.txt")
				}
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte("a\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			script := `for n in ` + strings.Join(names, " ") + `; do
  f="$n"; [ -d "$n" ] && f="$n/x.txt"
  [ "$(cat "$f")" = a ] || echo "unreadable $n"
  printf x >> "$f" 2>/dev/null && echo "changed $n"
  [ -d "$n" ] && printf x > "$n/new.txt" 2>/dev/null && echo "created in $n"
  mv "$n" "$n.moved" 2>/dev/null && echo "moved $n"
  rm -f "$f" 2>/dev/null; [ -e "$f" ] || echo "removed $n"
done
for d in ` + strings.Join(parents, " ") + `; do
  mv "$d" "$d.old" 2>/dev/null && echo "renamed $d"
  python3 -c "import os,sys; os.rename(sys.argv[1], sys.argv[1]+'.py'); os.makedirs(sys.argv[1])" "$d" 2>/dev/null && echo "renamed $d"
  rm -rf "$d" 2>/dev/null; [ -d "$d" ] || echo "renamed $d"
done
echo ok > ok.txt && printf x > .github/notes.md && echo done`
			r := call(t, toolMap(t, Options{Root: ws})["execute_command"], Approved(context.Background()), map[string]any{"command": script})
			if r.Error != nil && r.Error.Type != tool.SandboxViolation { // the refused writes are reported as one
				t.Fatal(r.Text())
			}
			o, ok := r.Structured.(Output)
			if !ok {
				t.Fatalf("no output: %s", r.Text())
			}
			out := o.Stdout
			if !strings.HasSuffix(strings.TrimSpace(out), "done") {
				t.Fatalf("the rest of the workspace is not writable:\n%s", r.Text())
			}
			if strings.Contains(out, "renamed ") {
				t.Errorf("a folder above a config path was renamed or removed:\n%s", out)
			}
			for _, n := range names {
				t.Run(n, func(t *testing.T) {
					for _, line := range strings.Split(out, "\n") {
						if strings.HasSuffix(line, " "+n) {
							t.Error(line)
						}
					}
					p := filepath.Join(ws, n)
					if form == "folder" {
						p = filepath.Join(p, "x.txt")
						if _, err := os.Stat(filepath.Join(ws, n, "new.txt")); err == nil {
							t.Error("a file was created in it")
						}
					}
					if b, err := os.ReadFile(p); err != nil || string(b) != "a\n" {
						t.Errorf("changed: %q %v", b, err)
					}
				})
			}
		})
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
