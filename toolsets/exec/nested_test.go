package exec

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// TestNestedConfigGuarded: the configuration files a program reads in a
// folder directly below the workspace's top (a package's .npmrc, a virtual
// environment's pip.conf: policy.NestedConfigPaths) cannot be changed,
// planted or removed by a command, in place or by renaming or replacing
// their folder (W7: only the top was guarded, so a command could give the
// host's npm a script-shell, or pip another index): the call is a
// sandbox_violation naming the file, and what the command left is undone.
// No folder is pinned: a package or a virtual environment can be renamed
// or removed as a whole.
func TestNestedConfigGuarded(t *testing.T) {
	files := map[string]string{
		"pkg/package.json": "{}\n", "pkg/.npmrc": "ignore-scripts=true\n",
		"app/package.json": "{}\n",
		".venv/pyvenv.cfg": "home = /usr/bin\n", ".venv/pip.conf": "[global]\nindex-url = https://pypi.corp.example/simple\n",
		"env/pyvenv.cfg": "home = /usr/bin\n",
	}
	attacks := []struct {
		name, command, path string
	}{
		{"in place", "echo script-shell=./x >> pkg/.npmrc", "pkg/.npmrc"},
		{"replaced", "echo script-shell=./x > n && mv n pkg/.npmrc", "pkg/.npmrc"},
		{"folder renamed", "mv pkg pkg-old && mkdir pkg && cp pkg-old/package.json pkg/ && echo script-shell=./x > pkg/.npmrc", "pkg/.npmrc"},
		{"planted", "echo script-shell=./x > app/.npmrc", "app/.npmrc"},
		{"planted folder", "mkdir app/.npmrc", "app/.npmrc"},
		{"folder a link", "mv app app-real && mkdir evil && echo script-shell=./x > evil/.npmrc && ln -s evil app", "app/.npmrc"},
		{"a link", "ln -sf /etc/hosts .venv/pip.conf", ".venv/pip.conf"},
		{"removed", "rm .venv/pip.conf", ".venv/pip.conf"},
		{"venv planted", "printf '[global]\\nindex-url = http://evil.example/\\n' > env/pip.conf", "env/pip.conf"},
		{"python", "python3 -c \"open('.venv/pip.conf', 'w').write('[global]\\nindex-url = http://evil.example/\\n')\"", ".venv/pip.conf"},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			ws := t.TempDir()
			writeFiles(t, ws, files)
			r := call(t, toolMap(t, Options{Root: ws})["execute_command"], tool.WithApproval(context.Background()),
				map[string]any{"command": a.command + " && echo kept > ok.txt"})
			if r.Error == nil || r.Error.Type != tool.SandboxViolation {
				t.Fatalf("want a sandbox_violation: %s", r.Text())
			}
			if paths, _ := r.Error.Details["paths"].([]string); !slices.Contains(paths, a.path) {
				t.Errorf("%s is not named: %v", a.path, paths)
			}
			for rel, c := range files {
				if a.name == "folder a link" && filepath.Dir(rel) == "app" {
					rel = filepath.Join("app-real", filepath.Base(rel))
				}
				if b, err := os.ReadFile(filepath.Join(ws, rel)); err != nil || string(b) != c {
					t.Errorf("%s holds %q (%v), want %q", rel, b, err, c)
				}
			}
			for _, rel := range []string{"app/.npmrc", "env/pip.conf", "env/pip.ini"} {
				if _, err := os.Lstat(filepath.Join(ws, rel)); err == nil {
					t.Errorf("%s was left", rel)
				}
			}
			if fi, err := os.Lstat(filepath.Join(ws, ".venv/pip.conf")); err != nil || fi.Mode().Perm() != 0o644 {
				t.Errorf(".venv/pip.conf: %v %v, want a regular file of mode 0644", fi, err)
			}
			if _, err := os.Stat(filepath.Join(ws, "ok.txt")); err != nil {
				t.Errorf("the rest of what the command wrote is gone: %v", err)
			}
		})
	}

	// A package or a virtual environment renamed, removed or made again as
	// a whole, and the other files of the folders, are the command's.
	ws := t.TempDir()
	writeFiles(t, ws, files)
	r := call(t, toolMap(t, Options{Root: ws})["execute_command"], tool.WithApproval(context.Background()),
		map[string]any{"command": "echo x > pkg/index.js && mkdir pkg/node_modules && mv app app2 && rm -rf .venv && cat pkg/.npmrc"})
	if r.Error != nil {
		t.Fatalf("an ordinary command failed: %s", r.Text())
	}
}
