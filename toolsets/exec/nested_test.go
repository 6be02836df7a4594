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
			violates(t, ws, a.command, a.path)
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

// TestWorkspaceConfigGuarded: the .npmrc of a package folder the
// workspace declares (package.json workspaces, pnpm-workspace.yaml),
// however deep, is guarded as one directly below the top is: planted,
// changed, or reached by replacing a folder on its way with a link, the
// call is a sandbox_violation and the change is undone. A deep package
// folder the workspace does not declare is not guarded, as before.
func TestWorkspaceConfigGuarded(t *testing.T) {
	files := map[string]string{
		"package.json":              `{"name": "mono", "private": true, "workspaces": ["packages/*"]}`,
		"pnpm-workspace.yaml":       "packages:\n  - apps/**\n",
		"packages/app/package.json": "{}", "apps/group/web/package.json": "{}",
		"apps/group/web/.npmrc":     "ignore-scripts=true\n",
		"lib/deep/pkg/package.json": "{}",
	}
	setup := func(t *testing.T) string {
		ws := t.TempDir()
		writeFiles(t, ws, files)
		return ws
	}
	for _, a := range []struct{ name, command, path string }{
		{"planted", "echo registry=http://evil.example/ > packages/app/.npmrc", "packages/app/.npmrc"},
		{"changed", "echo script-shell=./x >> apps/group/web/.npmrc", "apps/group/web/.npmrc"},
		{"removed", "rm apps/group/web/.npmrc", "apps/group/web/.npmrc"},
		{"folder above a link", "mv packages p2 && mkdir -p evil/app && echo script-shell=./x > evil/app/.npmrc && ln -s evil packages", "packages/app/.npmrc"},
		{"node", "node -e \"require('fs').writeFileSync('apps/group/web/.npmrc', 'script-shell=./x')\"", "apps/group/web/.npmrc"},
	} {
		t.Run(a.name, func(t *testing.T) {
			ws := setup(t)
			violates(t, ws, a.command, a.path)
			if _, err := os.Lstat(filepath.Join(ws, "packages/app/.npmrc")); err == nil {
				t.Error("packages/app/.npmrc was left")
			}
			if b, err := os.ReadFile(filepath.Join(ws, "apps/group/web/.npmrc")); string(b) != files["apps/group/web/.npmrc"] {
				t.Errorf("apps/group/web/.npmrc holds %q (%v)", b, err)
			}
			if fi, err := os.Lstat(filepath.Join(ws, "packages")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				t.Error("the link made in place of packages was left")
			}
		})
	}

	// Not declared, or the command's own: as before.
	ws := setup(t)
	r := call(t, toolMap(t, Options{Root: ws})["execute_command"], tool.WithApproval(context.Background()),
		map[string]any{"command": "echo x=1 > lib/deep/pkg/.npmrc && mkdir -p packages/new && echo x=1 > packages/new/.npmrc"})
	if r.Error != nil || r.Structured.(Output).ExitCode != 0 {
		t.Fatalf("an undeclared folder's .npmrc: %s", r.Text())
	}
	for _, rel := range []string{"lib/deep/pkg/.npmrc", "packages/new/.npmrc"} {
		if _, err := os.Stat(filepath.Join(ws, rel)); err != nil {
			t.Errorf("%s: %v", rel, err)
		}
	}
}

// TestWorkspaceLinkGuarded: a declared package folder that is a link to a
// folder inside the workspace is guarded in the folder it leads to, and
// the link stays as it was: the .npmrc changed or planted through the
// link is put back or removed; the link pointed elsewhere, or replaced by
// a folder of the command's with its own .npmrc, is a sandbox_violation
// naming the link, and the link is made again. The link removed (the
// package gone) is the command's.
func TestWorkspaceLinkGuarded(t *testing.T) {
	files := map[string]string{
		"package.json":          `{"name": "mono", "private": true, "workspaces": ["packages/*"]}`,
		"lib/shared/.npmrc":     "ignore-scripts=true\n",
		"lib/bare/package.json": "{}", "lib/shared/package.json": "{}",
		"evil/package.json": "{}", "evil/.npmrc": "script-shell=./x\n",
	}
	setup := func(t *testing.T) string {
		ws := t.TempDir()
		writeFiles(t, ws, files)
		for link, target := range map[string]string{"packages/shared": "../lib/shared", "packages/bare": "../lib/bare"} {
			if err := os.MkdirAll(filepath.Join(ws, "packages"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
				t.Fatal(err)
			}
		}
		return ws
	}
	for _, a := range []struct{ name, command, path string }{
		{"changed through the link", "echo script-shell=./x >> packages/shared/.npmrc", "lib/shared/.npmrc"},
		{"planted through the link", "echo registry=http://evil.example/ > packages/bare/.npmrc", "lib/bare/.npmrc"},
		{"retargeted", "ln -sfn ../evil packages/shared", "packages/shared"},
		{"replaced by a folder", "rm packages/shared && cp -r evil packages/shared", "packages/shared"},
		{"replaced by a file", "rm packages/bare && echo x > packages/bare", "packages/bare"},
		{"folder above a link", "mv packages p2 && mkdir -p e/shared && cp evil/.npmrc e/shared/ && ln -s e packages", "packages/shared"},
	} {
		t.Run(a.name, func(t *testing.T) {
			ws := setup(t)
			violates(t, ws, a.command, a.path)
			if b, err := os.ReadFile(filepath.Join(ws, "lib/shared/.npmrc")); string(b) != files["lib/shared/.npmrc"] {
				t.Errorf("lib/shared/.npmrc holds %q (%v)", b, err)
			}
			if _, err := os.Lstat(filepath.Join(ws, "lib/bare/.npmrc")); err == nil {
				t.Error("lib/bare/.npmrc was left")
			}
			if a.name != "folder above a link" {
				for link, target := range map[string]string{"packages/shared": "../lib/shared", "packages/bare": "../lib/bare"} {
					if got, err := os.Readlink(filepath.Join(ws, link)); got != target {
						t.Errorf("%s -> %q (%v), want the link to %s back", link, got, err, target)
					}
				}
			} else if fi, err := os.Lstat(filepath.Join(ws, "packages")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				t.Error("the link made in place of packages was left")
			}
		})
	}

	ws := setup(t)
	r := call(t, toolMap(t, Options{Root: ws})["execute_command"], tool.WithApproval(context.Background()),
		map[string]any{"command": "cat packages/shared/.npmrc && echo x > packages/shared/index.js && rm packages/bare"})
	if r.Error != nil || r.Structured.(Output).ExitCode != 0 {
		t.Fatalf("an ordinary command through the link, the link removed: %s", r.Text())
	}
	if _, err := os.Lstat(filepath.Join(ws, "packages/bare")); err == nil {
		t.Error("the link the command removed was made again")
	}
}

// TestTopLinkGuarded: a folder at the top that is a link inside the
// workspace is guarded where it leads (npm run in it reads the .npmrc
// there), the link kept; a package whose package.json is a link out of
// the workspace is a package all the same.
func TestTopLinkGuarded(t *testing.T) {
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"package.json": "{}"})
	setup := func(t *testing.T) string {
		ws := t.TempDir()
		writeFiles(t, ws, map[string]string{"lib/app/package.json": "{}", "evil/package.json": "{}", "marked/README": ""})
		for link, target := range map[string]string{"app": "lib/app", "marked/package.json": filepath.Join(outside, "package.json")} {
			if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
				t.Fatal(err)
			}
		}
		return ws
	}
	for _, a := range []struct{ name, command, path string }{
		{"planted through the link", "echo registry=http://evil.example/ > app/.npmrc", "lib/app/.npmrc"},
		{"retargeted", "ln -sfn evil app", "app"},
		{"marker a link out", "echo registry=http://evil.example/ > marked/.npmrc", "marked/.npmrc"},
	} {
		t.Run(a.name, func(t *testing.T) {
			ws := setup(t)
			violates(t, ws, a.command, a.path)
			for _, p := range []string{"lib/app/.npmrc", "marked/.npmrc"} {
				if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
					t.Errorf("%s was left", p)
				}
			}
			if got, err := os.Readlink(filepath.Join(ws, "app")); got != "lib/app" {
				t.Errorf("app -> %q (%v), want the link to lib/app back", got, err)
			}
		})
	}
}

// TestWorkspaceDeclarationRefused: a workspace whose declaration cannot be
// expanded (malformed, a pattern leaving the workspace, braces, a package
// folder that is a link out of the workspace) runs no command: a conflict
// naming the file (or the link) and saying what to fix, not a crash and
// not a command run with its packages unguarded.
func TestWorkspaceDeclarationRefused(t *testing.T) {
	outside := t.TempDir()
	for _, c := range []struct{ file, decl, link string }{
		{"package.json", `{"workspaces": ["packages/*"`, ""},
		{"pnpm-workspace.yaml", "packages:\n  - 'packages/*\n", ""},
		{"package.json", `{"workspaces": ["../*"]}`, ""},
		{"pnpm-workspace.yaml", "packages: ['/tmp/*']\n", ""},
		{"lerna.json", `{"packages": ["packages/{a,b}"]}`, ""},
		{"package.json", `{"workspaces": ["packages/*"]}`, outside},
		{"package.json", `{"workspaces": ["packages/*"]}`, "../../x"},
	} {
		ws := t.TempDir()
		writeFiles(t, ws, map[string]string{c.file: c.decl, "packages/a/package.json": "{}"})
		want := c.file
		if c.link != "" {
			if err := os.Symlink(c.link, filepath.Join(ws, "packages", "ln")); err != nil {
				t.Fatal(err)
			}
			want = "packages/ln"
		}
		r := call(t, toolMap(t, Options{Root: ws})["execute_command"], tool.WithApproval(context.Background()),
			map[string]any{"command": "echo x > ran.txt"})
		if r.Error == nil || r.Error.Type != tool.Conflict || r.Error.Details["path"] != want || r.Error.Suggestion == "" {
			t.Errorf("%s %s %s: %s", c.file, c.decl, c.link, r.Text())
		}
		if _, err := os.Lstat(filepath.Join(ws, "ran.txt")); err == nil {
			t.Errorf("%s %s: the command ran", c.file, c.decl)
		}
	}
}

// violates runs command in ws, then a write of ok.txt, and fails t unless
// the call is a sandbox_violation naming path and the write after the
// command stayed (only the guarded files are undone).
func violates(t *testing.T, ws, command, path string) {
	t.Helper()
	r := call(t, toolMap(t, Options{Root: ws})["execute_command"], tool.WithApproval(context.Background()),
		map[string]any{"command": command + " && echo kept > ok.txt"})
	if r.Error == nil || r.Error.Type != tool.SandboxViolation {
		t.Fatalf("want a sandbox_violation: %s", r.Text())
	}
	if paths, _ := r.Error.Details["paths"].([]string); !slices.Contains(paths, path) {
		t.Errorf("%s is not named: %v", path, paths)
	}
	if _, err := os.Stat(filepath.Join(ws, "ok.txt")); err != nil {
		t.Errorf("the rest of what the command wrote is gone: %v", err)
	}
}
