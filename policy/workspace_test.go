package policy_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policy"
)

func writeTree(t *testing.T, root string, files map[string]string) {
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

// workspaceConfigPaths opens root and expands its declarations.
func workspaceConfigPaths(t *testing.T, root string) ([]policy.ConfigPath, error) {
	t.Helper()
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return policy.WorkspaceConfigPathsForTest(r)
}

// workspaceNames returns the names of root's workspace configuration,
// each followed by the links that led to it ("lib/app/.npmrc <- packages/app"),
// and checks that each link's Target is what it reads now.
func workspaceNames(t *testing.T, root string) []string {
	t.Helper()
	list, err := workspaceConfigPaths(t, root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list {
		if c.Reason == "" {
			t.Errorf("%s has no reason", c.Name)
		}
		n := c.Name
		for i, l := range c.Links {
			if i == 0 {
				n += " <-"
			}
			n += " " + l.Name
			if target, err := os.Readlink(filepath.Join(root, l.Name)); err != nil || target != l.Target {
				t.Errorf("%s: link %s has target %q, reads %q (%v)", c.Name, l.Name, l.Target, target, err)
			}
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestWorkspaceConfigPaths: the package folders a workspace declares
// (package.json's workspaces in both forms, pnpm-workspace.yaml, lerna.json),
// at any depth, give their .npmrc, a link to a package folder inside the
// workspace the .npmrc of that folder; a folder not declared, one without a
// package.json, node_modules and a dot folder do not; nor does a pattern
// led by !.
func TestWorkspaceConfigPaths(t *testing.T) {
	packages := map[string]string{
		"packages/app/package.json": "{}", "packages/lib/package.json": "{}", "packages/docs/README.md": "",
		"packages/node_modules/x/package.json": "{}", "packages/.hidden/package.json": "{}",
		"apps/web/package.json": "{}", "apps/group/api/package.json": "{}", "apps/group/api/src/package.json": "{}",
		"tools/cli/package.json": "{}", "deep/a/b/package.json": "{}", "pkg/package.json": "{}",
	}
	want := []string{"apps/group/api/.npmrc", "apps/group/api/src/.npmrc", "apps/web/.npmrc", "packages/app/.npmrc", "packages/lib/.npmrc", "pkg/.npmrc <- packages/in", "tools/cli/.npmrc"}
	for _, c := range []struct{ name, file, decl string }{
		{"npm list", "package.json", `{"name": "mono", "workspaces": ["packages/*", "./apps/**/", "tools/cli", "!packages/lib", "missing/*"]}`},
		{"yarn object", "package.json", `{"workspaces": {"packages": ["packages/*", "apps/**", "tools/cli"], "nohoist": ["**/x"]}}`},
		{"pnpm", "pnpm-workspace.yaml", "packages:\n  - 'packages/*'\n  - apps/**\n  - tools/cli\n  - '!**/test/**'\n"},
		{"lerna", "lerna.json", `{"packages": ["packages/*", "apps/**", "tools/*"]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			writeTree(t, ws, packages)
			writeTree(t, ws, map[string]string{c.file: c.decl})
			if err := os.Symlink("../pkg", filepath.Join(ws, "packages", "in")); err != nil {
				t.Fatal(err)
			}
			if got := workspaceNames(t, ws); !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}

	ws := t.TempDir() // declaring nothing
	writeTree(t, ws, map[string]string{"package.json": `{"name": "x"}`, "packages/app/package.json": "{}"})
	if got := workspaceNames(t, ws); got != nil {
		t.Errorf("nothing declared: %v", got)
	}
	// A virtual environment declared gives its pip.conf, as one level down.
	writeTree(t, ws, map[string]string{"pnpm-workspace.yaml": "packages: [py/.*]\n", "py/.venv/pyvenv.cfg": ""})
	if got := workspaceNames(t, ws); !slices.Equal(got, []string{"py/.venv/pip.conf", "py/.venv/pip.ini"}) {
		t.Errorf("a declared dot folder: %v", got)
	}
}

// TestWorkspaceRefused: a declaration that cannot be parsed, a pattern
// that would leave the workspace or that is not expanded, and patterns
// reaching more than MaxWorkspaceFolders folders are a WorkspaceError
// naming the file (and the pattern), not a partial list.
func TestWorkspaceRefused(t *testing.T) {
	for _, c := range []struct{ file, decl, pattern string }{
		{"package.json", `{"workspaces": ["packages/*"`, ""},
		{"package.json", `{"workspaces": "packages/*"}`, ""},
		{"package.json", `{"workspaces": {"packages": "packages/*"}}`, ""},
		{"package.json", `{"workspaces": [1]}`, ""},
		{"pnpm-workspace.yaml", "packages:\n  - 'packages/*\n  -", ""},
		{"pnpm-workspace.yaml", "packages: {a: b}\n", ""},
		{"lerna.json", `{"packages": "x"}`, ""},
		{"package.json", `{"workspaces": ["../*"]}`, "../*"},
		{"package.json", `{"workspaces": ["packages/../../x"]}`, "packages/../../x"},
		{"pnpm-workspace.yaml", "packages: ['/etc/*']\n", "/etc/*"},
		{"pnpm-workspace.yaml", "packages: ['packages/{a,b}']\n", "packages/{a,b}"},
		{"pnpm-workspace.yaml", "packages: ['packages/@(a|b)']\n", "packages/@(a|b)"},
		{"lerna.json", `{"packages": ["packages\\*"]}`, `packages\*`},
		{"lerna.json", `{"packages": ["packages/[a"]}`, "packages/[a"},
		{"package.json", `{"workspaces": [""]}`, ""},
		{"package.json", `{"workspaces": ["many/*"]}`, "many/*"},
		{"package.json", `{"workspaces": ["many/**"]}`, "many/**"},
	} {
		ws := t.TempDir()
		writeTree(t, ws, map[string]string{c.file: c.decl, "packages/a/package.json": "{}"})
		for i := 0; strings.Contains(c.decl, "many") && i < policy.MaxWorkspaceFolders; i++ {
			if err := os.MkdirAll(filepath.Join(ws, "many", fmt.Sprint(i)), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		list, err := workspaceConfigPaths(t, ws)
		var we *policy.WorkspaceError
		if !errors.As(err, &we) || we.File != c.file || we.Pattern != c.pattern || list != nil {
			t.Errorf("%s %s: %v %v, want a WorkspaceError naming %q", c.file, c.decl, list, err, c.pattern)
			continue
		}
		if !strings.Contains(err.Error(), c.file) {
			t.Errorf("%v does not name %s", err, c.file)
		}
	}
	// MaxWorkspaceFolders folders are expanded: many and those in it.
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{"package.json": `{"workspaces": ["many/*"]}`})
	for i := range policy.MaxWorkspaceFolders - 1 {
		writeTree(t, ws, map[string]string{fmt.Sprintf("many/%d/package.json", i): "{}"})
	}
	if got := workspaceNames(t, ws); len(got) != policy.MaxWorkspaceFolders-1 {
		t.Errorf("%d folders at the bound: %d paths", policy.MaxWorkspaceFolders, len(got))
	}
}

// symlinks makes each link (path relative to root: target).
func symlinks(t *testing.T, root string, links map[string]string) {
	t.Helper()
	for rel, target := range links {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWorkspaceLinks: a declared package folder that is a link, or lies
// behind one, names the configuration of the folder the links lead to
// (no link on its way), with every link crossed; ** matches a link but
// does not go down it (a link to its own folder ends); a dangling link
// and a link to a file are no package. A link leading out of the
// workspace (absolute, or .. above the top), or a loop, is a WorkspaceError
// naming it: npm would read a .npmrc the guard cannot tell.
func TestWorkspaceLinks(t *testing.T) {
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{
		"package.json":         `{"workspaces": ["packages/*", "group/*", "apps/**"]}`,
		"lib/app/package.json": "{}", "lib/web/package.json": "{}", "src/group/one/package.json": "{}",
		"README": "", "apps/x/real/package.json": "{}", "lib/deep/pkg/package.json": "{}",
	})
	symlinks(t, ws, map[string]string{
		"packages/app":   "../lib/app",
		"group":          "src/group",
		"packages/chain": "../hop/web",
		"hop":            "./lib/",
		"apps/x/ln":      "../../lib/deep",
		"apps/loop":      ".",
		"packages/gone":  "../nothing",
		"packages/file":  "../README",
	})
	want := []string{
		"apps/x/real/.npmrc",
		"lib/app/.npmrc <- packages/app",
		"lib/web/.npmrc <- packages/chain hop",
		"src/group/one/.npmrc <- group",
	}
	if got := workspaceNames(t, ws); !slices.Equal(got, want) {
		t.Errorf("got %q,\nwant %q", got, want)
	}

	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"pkg/package.json": "{}"})
	for _, c := range []struct{ link, target, why string }{
		{"packages/out", filepath.Join(outside, "pkg"), "absolute"},
		{"packages/up", "../../" + filepath.Base(outside) + "/pkg", "out of the project"},
		{"packages/back", "../../" + filepath.Base(ws) + "/lib/app", "out of the project"}, // out and in again
		{"packages/self", "self", "more than 40 links"},
		{"hidden/in", "../../x", "out of the project"}, // behind a link a pattern reaches
	} {
		ws := t.TempDir()
		writeTree(t, ws, map[string]string{"package.json": `{"workspaces": ["packages/*", "pk/*"]}`, "lib/app/package.json": "{}"})
		symlinks(t, ws, map[string]string{c.link: c.target, "pk": "hidden"})
		list, err := workspaceConfigPaths(t, ws)
		var we *policy.WorkspaceError
		if !errors.As(err, &we) || we.Link != c.link || we.File != "package.json" || list != nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s -> %s: %v %v, want a WorkspaceError naming the link, %q", c.link, c.target, list, err, c.why)
		}
	}
}

// TestKeepLink: a link is kept only while it reads the target it was
// followed by; one retargeted, replaced by a folder, or removed since is a
// WorkspaceError naming it.
func TestKeepLink(t *testing.T) {
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{"lib/app/package.json": "{}", "evil/package.json": "{}"})
	symlinks(t, ws, map[string]string{"packages/app": "../lib/app"})
	r, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l := policy.Link{Name: "packages/app", Target: "../lib/app"}
	if k, err := policy.KeepLink(r, l); err != nil || k.Info.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link as followed: %v %v", k, err)
	}
	link := filepath.Join(ws, "packages", "app")
	for why, change := range map[string]func() error{
		"retargeted": func() error { os.Remove(link); return os.Symlink("../evil", link) },
		"a folder":   func() error { os.Remove(link); return os.Mkdir(link, 0o755) },
		"removed":    func() error { return os.RemoveAll(link) },
	} {
		if err := change(); err != nil {
			t.Fatal(err)
		}
		var we *policy.WorkspaceError
		if k, err := policy.KeepLink(r, l); !errors.As(err, &we) || we.Link != l.Name || k.Info != nil {
			t.Errorf("%s: %v %v, want a WorkspaceError naming %s", why, k, err, l.Name)
		}
		os.RemoveAll(link)
		os.Symlink(l.Target, link)
	}
}
