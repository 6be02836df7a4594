package exec

import (
	"context"
	"fmt"
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

func configNames() []string {
	var names []string
	for _, c := range policy.ConfigPaths() {
		names = append(names, c.Name)
	}
	return names
}

func writeFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for rel, c := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMissingConfigPathsCreated: a command that creates a config path that
// did not exist (no mount could cover it) — as a file, a folder, a link,
// by renaming a file onto it, from Python, or by swapping the folder above
// it — ends in a sandbox_violation naming each one, and what it created is
// removed; the rest of what it wrote stays, and so do the folders that
// were there before (.github/workflows).
func TestMissingConfigPathsCreated(t *testing.T) {
	// The config paths inside .github/workflows stay out: that folder
	// exists here, and as a CI definition it is read-only (TestCIReadOnly).
	names := slices.DeleteFunc(configNames(), func(n string) bool { return strings.HasPrefix(n, ".github/workflows/") })
	list := strings.Join(names, " ")
	// A command that names .npmrc as an argument is asked first (it holds
	// registry tokens): Python's list leaves it out.
	pyList := strings.Join(slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == ".npmrc" }), " ")
	cases := map[string]string{
		"file":   `for n in ` + list + `; do mkdir -p "$(dirname "$n")"; echo x > "$n"; done`,
		"folder": `for n in ` + list + `; do mkdir -p "$n" && echo x > "$n/settings.json"; done`,
		"link":   `for n in ` + list + `; do mkdir -p "$(dirname "$n")"; ln -s "$PWD/payload.txt" "$n"; done`,
		"rename": `i=0; for n in ` + list + `; do i=$((i+1)); cp payload.txt p$i; mkdir -p "$(dirname "$n")"; mv p$i "$n"; done`,
		"python": `python3 -c '
import os, sys
for n in sys.argv[1:]:
    os.makedirs(os.path.dirname(n) or ".", exist_ok=True)
    open(n, "w").write("{}")
' ` + pyList,
		"swap the parent": `mv .github .gh_old 2>/dev/null; mkdir -p .github && echo obey > .github/copilot-instructions.md; ` +
			`mkdir -p .config/fish && echo x > .config/fish/config.fish`,
	}
	for name, script := range cases {
		t.Run(name, func(t *testing.T) {
			ws := t.TempDir()
			writeFiles(t, ws, map[string]string{"payload.txt": "obey me\n", ".github/workflows/ci.yml": "on: push\n"})
			r := call(t, toolMap(t, Options{Root: ws})["execute_command"], context.Background(),
				map[string]any{"command": script + "\necho kept > ok.txt", "timeout": 60})
			if r.Error == nil || r.Error.Type != tool.SandboxViolation {
				t.Fatalf("want a sandbox_violation: %s", r.Text())
			}
			paths, _ := r.Error.Details["paths"].([]string)
			want := names
			if name == "python" {
				want = strings.Fields(pyList)
			}
			if name == "swap the parent" {
				want = []string{".config/fish", ".github/copilot-instructions.md"}
			}
			for _, n := range want {
				if !slices.Contains(paths, n) {
					t.Errorf("%s is not named: %v", n, paths)
				}
				if _, err := os.Lstat(filepath.Join(ws, n)); err == nil {
					t.Errorf("%s was left behind", n)
				}
			}
			if !strings.Contains(r.Error.Message, "removed again") {
				t.Errorf("message: %s", r.Error.Message)
			}
			for _, keep := range []string{"ok.txt", "payload.txt", ".github/workflows/ci.yml"} {
				if _, err := os.Stat(filepath.Join(ws, keep)); err != nil {
					t.Errorf("%s is gone: %v", keep, err)
				}
			}
			if _, err := os.Stat(filepath.Join(ws, ".config")); err == nil {
				t.Errorf(".config, made by the command for its entries only, was left")
			}
		})
	}

	// A command that writes elsewhere, or reads the config paths, is fine.
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{".github/workflows/ci.yml": "on: push\n", "AGENTS.md": "be nice\n"})
	r := call(t, toolMap(t, Options{Root: ws})["execute_command"], context.Background(),
		map[string]any{"command": "cat AGENTS.md > copy.md && mkdir -p .github/ISSUE_TEMPLATE docs/.github && echo x > .github/ISSUE_TEMPLATE/bug.md && echo y > docs/AGENTS.txt"})
	if r.Error != nil {
		t.Fatalf("an ordinary command failed: %s", r.Text())
	}
}

// TestOwnFilesReadOnly: toolgate's own files inside the workspace
// (Options.Protect: a policy file, an audit log in a folder, a state
// folder) cannot be written, truncated, replaced, removed or swapped by
// renaming their folder, by any program; a missing one a command creates
// is removed; one that cannot be mounted keeps every command from running.
func TestOwnFilesReadOnly(t *testing.T) {
	ws := t.TempDir()
	files := map[string]string{
		"toolgate.yaml":     "mode: default\n",
		"logs/audit.jsonl":  "{\"seq\":1}\n",
		"state/results.db":  "db",
		"evil.yaml":         "mode: bypass\n",
		"logs/other.txt":    "other\n",
		"state/sub/keep.db": "k",
	}
	writeFiles(t, ws, files)
	protect := []string{filepath.Join(ws, "toolgate.yaml"), filepath.Join(ws, "logs", "audit.jsonl"), filepath.Join(ws, "state"), filepath.Join(ws, "later.jsonl")}
	tools := toolMap(t, Options{Root: ws, Protect: protect})
	attacks := []map[string]any{
		{"command": "echo 'mode: bypass' > toolgate.yaml"},
		{"command": "echo 'mode: bypass' >> toolgate.yaml"},
		{"command": "f=toolgate; cp evil.yaml $f.yaml"},
		{"command": "mv -f evil.yaml toolgate.yaml"},
		{"command": "rm -f toolgate.yaml; echo 'mode: bypass' > toolgate.yaml"},
		{"command": "truncate -s 0 toolgate.yaml logs/audit.jsonl"},
		{"command": "sed -i s/default/bypass/ toolgate.yaml"},
		{"command": "ln -sf evil.yaml toolgate.yaml"},
		{"command": "printf '{}\\n' >> logs/audit.jsonl"},
		{"command": ": > logs/audit.jsonl"},
		{"command": "mv logs logs.old && mkdir logs && echo '{}' > logs/audit.jsonl"},
		{"command": "rm -rf state; mkdir state; echo x > state/results.db"},
		{"command": "echo x > state/results.db; echo y > state/new.db; mv state state.old"},
		{"argv": []string{"python3", "-c", "open('toolgate.yaml','w').write('mode: bypass\\n')"}},
		{"argv": []string{"python3", "-c", "import os; os.replace('evil.yaml', 'toolgate.yaml')"}},
		{"argv": []string{"python3", "-c", "import os; os.rename('logs', 'l2'); os.makedirs('logs'); open('logs/audit.jsonl','w')"}},
		{"argv": []string{"node", "-e", "require('fs').writeFileSync('toolgate.yaml', 'mode: bypass\\n')"}},
	}
	for _, a := range attacks {
		r := call(t, tools["execute_command"], context.Background(), a)
		if r.Error == nil && r.Structured.(Output).ExitCode == 0 {
			t.Errorf("%v: ran without a failure: %s", a, r.Text())
		}
		for rel, c := range files {
			if rel == "evil.yaml" || rel == "logs/other.txt" {
				continue
			}
			if b, err := os.ReadFile(filepath.Join(ws, rel)); err != nil || string(b) != c {
				t.Fatalf("%v: %s changed: %q %v", a, rel, b, err)
			}
		}
		if fi, err := os.Lstat(filepath.Join(ws, "toolgate.yaml")); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("%v: toolgate.yaml replaced", a)
		}
	}
	// The folder around a file stays writable.
	r := call(t, tools["execute_command"], context.Background(), map[string]any{"command": "echo more >> logs/other.txt && cat toolgate.yaml"})
	if r.Error != nil || !strings.Contains(r.Structured.(Output).Stdout, "mode: default") {
		t.Fatalf("reading toolgate's file, writing beside it: %s", r.Text())
	}
	// A missing one (an audit log not written yet) may not be planted.
	r = call(t, tools["execute_command"], context.Background(), map[string]any{"command": "ln -s /etc/passwd later.jsonl"})
	if r.Error == nil || r.Error.Type != tool.SandboxViolation || r.Error.Details["path"] != "later.jsonl" {
		t.Fatalf("planting a missing own file: %s", r.Text())
	}
	if _, err := os.Lstat(filepath.Join(ws, "later.jsonl")); err == nil {
		t.Fatal("the planted link was left")
	}

	// Fail closed: an own path that is neither a file nor a folder.
	fifo := filepath.Join(ws, "audit.fifo")
	if err := mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	r = call(t, toolMap(t, Options{Root: ws, Protect: []string{fifo}})["execute_command"], context.Background(), map[string]any{"command": "touch ran"})
	if r.Error == nil || r.Error.Type != tool.Unavailable || !strings.Contains(r.Error.Message, "audit.fifo") {
		t.Fatalf("an unprotectable own file: %s", r.Text())
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("the command ran")
	}
}

// TestReadOnlyMessageOnSuccess: a command that exits 0 is a
// sandbox_violation for a "read-only file system" message only when the
// path it names is outside the workspace or a guarded entry; a test suite
// or a log quoting such a message about its own files is a success.
func TestReadOnlyMessageOnSuccess(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{".git/config": "[core]\n", "sub/x": ""})
	tools := toolMap(t, Options{Root: ws})
	for _, c := range []struct {
		command, cwd string
		violation    bool
	}{
		{"echo \"OSError: [Errno 30] Read-only file system: 'fixtures/ro/x'\" >&2", "", false},
		{"echo 'write error: Read-only file system' >&2", "", false},
		{"echo \"Error: EROFS: read-only file system, open 'tmp/data.json'\" >&2", "", false},
		{"echo 'test_erofs: touch: cannot touch " + ws + "/sub/x: Read-only file system (expected)' >&2", "", false},
		{"echo 'ok: Read-only file system is handled' >&2", "", false},
		{"echo x > /etc/x; echo done", "", true},
		{"touch /usr/local/x; true", "", true},
		{"echo x > .git/config; true", "", true},
		{"echo x > ../.git/config; true", "sub", true},
		{"echo x > " + ws + "/.git/config; true", "", true},
		{"python3 -c \"open('.git/HEAD2','w')\"; true", "", true},
		{"touch ../../../../../../../../outside.txt; true", "", true},
	} {
		args := map[string]any{"command": c.command}
		if c.cwd != "" {
			args["cwd"] = c.cwd
		}
		r := call(t, tools["execute_command"], context.Background(), args)
		if got := r.Error != nil && r.Error.Type == tool.SandboxViolation; got != c.violation {
			t.Errorf("%s: violation %v, want %v: %s", c.command, got, c.violation, r.Text())
		}
		if !c.violation && (r.Error != nil || r.Structured.(Output).ExitCode != 0) {
			t.Errorf("%s: %s", c.command, r.Text())
		}
	}
}

// TestRefusedWrite: the classification alone, over the message forms of
// TestReadOnlyPath.
func TestRefusedWrite(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{".vscode/settings.json": "{}", "src/a.go": ""})
	g, err := newGuard(ws, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		line, dir string
		want      bool
	}{
		{"touch: cannot touch '/etc/x': Read-only file system", "", true},
		{"OSError: [Errno 30] Read-only file system: '/usr/lib/x'", "", true},
		{"Error: EROFS: read-only file system, open '.vscode/settings.json'", "", true},
		{"Error: EROFS: read-only file system, open '../.vscode/settings.json'", "src", true},
		{"sh: 1: cannot create " + ws + "/.vscode/tasks.json: Read-only file system", "", true},
		{"touch: cannot touch '../x': Read-only file system", "", true},
		{"touch: cannot touch 'src/a.go': Read-only file system", "", false},
		{"Error: EROFS: read-only file system, open 'a.go'", "src", false},
		{"sh: 1: cannot create " + ws + "/src/a.go: Read-only file system", "", false},
		{"write error: Read-only file system", "", false},
		{"a test about EROFS: read-only file system", "", false},
		{"no such message", "", false},
	} {
		if got := refusedWrite([]byte("x\n"+c.line+"\n"), ws, filepath.Join(g.root, c.dir), g); got != c.want {
			t.Errorf("%q in %q: %v, want %v", c.line, c.dir, got, c.want)
		}
	}
}

// BenchmarkGuard: what guarding costs a command besides its mounts:
// looking at the config paths before, and at the missing ones after.
func BenchmarkGuard(b *testing.B) {
	ws := b.TempDir()
	for _, d := range []string{".git/hooks", ".github/workflows", ".vscode"} {
		os.MkdirAll(filepath.Join(ws, d), 0o755)
	}
	protect := []string{filepath.Join(ws, "toolgate.yaml"), filepath.Join(ws, "audit.jsonl")}
	for b.Loop() {
		g, err := newGuard(ws, protect, nil)
		if err != nil {
			b.Fatal(err)
		}
		g.check()
	}
}

// TestLinkedConfigPath: a config path that is a link to a folder of the
// workspace (.vscode -> ide) protects that folder instead; replacing the
// link is a violation.
func TestLinkedConfigPath(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"ide/tasks.json": "{}", "other/tasks.json": "{\"evil\":1}"})
	if err := os.Symlink("ide", filepath.Join(ws, ".vscode")); err != nil {
		t.Fatal(err)
	}
	tools := toolMap(t, Options{Root: ws})
	for _, c := range []string{"echo x > .vscode/tasks.json", "echo x > ide/tasks.json", "echo x > .vscode/new.json", "rm -f ide/tasks.json"} {
		r := call(t, tools["execute_command"], context.Background(), map[string]any{"command": c})
		if r.Error == nil && r.Structured.(Output).ExitCode == 0 {
			t.Errorf("%s: ran: %s", c, r.Text())
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "ide", "tasks.json")); string(b) != "{}" {
		t.Fatalf("the link's target changed: %q", b)
	}
	r := call(t, tools["execute_command"], context.Background(), map[string]any{"command": "rm .vscode && ln -s other .vscode"})
	if r.Error == nil || r.Error.Type != tool.SandboxViolation || r.Error.Details["path"] != ".vscode" {
		t.Fatalf("replacing the link: %s", r.Text())
	}
}

// BenchmarkGuardTree: what guarding costs a command in real trees (this
// repository, Go's source tree) and in a monorepo declaring 40 packages
// (package.json workspaces), the nested configuration included.
func BenchmarkGuardTree(b *testing.B) {
	mono := b.TempDir()
	files := map[string]string{"package.json": `{"workspaces": ["packages/*", "apps/*"]}`}
	for i := range 20 {
		files[fmt.Sprintf("packages/p%d/package.json", i)] = "{}"
		files[fmt.Sprintf("apps/a%d/package.json", i)] = "{}"
	}
	writeFiles(b, mono, files)
	for _, c := range []struct{ name, root string }{
		{"repo", "../.."},
		{"goroot", build.Default.GOROOT},
		{"monorepo", mono},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				g, err := newGuard(c.root, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				g.check()
			}
		})
	}
}
