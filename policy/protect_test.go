package policy_test

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policy"
)

// TestConfigPaths checks the list itself and, for every entry, that the
// default policy refuses a write to it, below it and in a nested project,
// in any letter case, with the entry's own reason; that reading it is not
// refused for being a config path; and that a neighbour name is not caught.
func TestConfigPaths(t *testing.T) {
	p := policy.Default()
	seen := map[string]bool{}
	for _, c := range policy.ConfigPaths() {
		t.Run(c.Name, func(t *testing.T) {
			if seen[strings.ToLower(c.Name)] {
				t.Fatal("listed twice")
			}
			seen[strings.ToLower(c.Name)] = true
			if c.Name == "" || strings.ContainsAny(c.Name, `*?[]{}\`) || path.Clean(c.Name) != c.Name || strings.HasPrefix(c.Name, "/") || strings.HasPrefix(c.Name, "..") {
				t.Fatalf("not a plain relative path")
			}
			if c.Reason == "" {
				t.Fatal("no reason")
			}
			for _, target := range []string{
				c.Name, c.Name + "/settings.json", c.Name + "/a/b/c.md",
				"pkg/sub/" + c.Name, "pkg/" + c.Name + "/x", "./" + c.Name, strings.ToUpper(c.Name),
			} {
				d := p.Decide(defWrite, pcall(defWrite, map[string]any{"path": target, "content": "x"}))
				if d.Effect != policy.Deny {
					t.Errorf("writing %s: %s (%s)", target, d.Effect, d.Rule)
				}
				if d := p.Decide(defDel, pcall(defDel, map[string]any{"path": target})); d.Effect != policy.Deny {
					t.Errorf("deleting %s: %s (%s)", target, d.Effect, d.Rule)
				}
				if d := p.Decide(defMove, pcall(defMove, map[string]any{"source": "notes.txt", "destination": target})); d.Effect != policy.Deny {
					t.Errorf("moving onto %s: %s (%s)", target, d.Effect, d.Rule)
				}
				if d := p.Decide(defCmd, pcall(defCmd, map[string]any{"command": "echo x >> '" + target + "'"})); d.Effect != policy.Deny {
					t.Errorf("a command writing %s: %s (%s)", target, d.Effect, d.Rule)
				}
			}
			if d := p.Decide(defWrite, pcall(defWrite, map[string]any{"path": c.Name, "content": "x"})); !strings.HasPrefix(d.Reason, c.Reason) {
				t.Errorf("the reason given is %q, want the entry's %q", d.Reason, c.Reason)
			}
			// Reading is not refused for being a config path (toolgate's own files are read-protected on their own, .envrc as a secret).
			if d := p.Decide(defRead, pcall(defRead, map[string]any{"path": c.Name + "/notes.md"})); d.Effect == policy.Deny && strings.HasPrefix(d.Reason, c.Reason) && c.Name != ".toolgate" {
				t.Errorf("reading is denied as a config path: %s", d.Rule)
			}
			dir, base := path.Split(c.Name)
			for _, near := range []string{dir + "x" + base, dir + "src/x" + base} {
				if d := p.Decide(defWrite, pcall(defWrite, map[string]any{"path": near, "content": "x"})); d.Effect == policy.Deny {
					t.Errorf("the neighbour %s is denied too: %s", near, d.Rule)
				}
			}
		})
	}
	for _, must := range []string{".claude", ".codex", ".cursor", ".gemini", ".vscode", ".idea", ".mcp.json", "AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md", ".envrc", ".husky", ".pre-commit-config.yaml",
		".cargo/config.toml", ".cargo/config", ".hg", ".mvn", ".github/workflows/copilot-setup-steps.yml", ".lazy.lua",
		".npmrc", "pip.conf", "pip.ini", ".pip", ".config/pip"} {
		if !seen[strings.ToLower(must)] {
			t.Errorf("%s is not a config path", must)
		}
	}
}

// TestFilesSection: files.allow_hard_links reaches the policy (off by
// default, in the example too), and a misspelt key is an error.
func TestFilesSection(t *testing.T) {
	p, err := policy.Parse([]byte("files:\n  allow_hard_links: true\n"))
	if err != nil || !p.Files.AllowHardLinks {
		t.Fatalf("%v %+v", err, p)
	}
	if p, err := policy.Load(examplePath); err != nil || p.Files.AllowHardLinks || policy.Default().Files.AllowHardLinks {
		t.Fatalf("on by default: %v", err)
	}
	if _, err := policy.Parse([]byte("files:\n  allow_hardlinks: true\n")); err == nil || !strings.Contains(err.Error(), "allow_hardlinks") {
		t.Fatalf("a misspelt key: %v", err)
	}
}

// TestDefaultDenyIsACopy: the list is built once, and what a caller does
// to the copy it got changes no other caller's.
func TestDefaultDenyIsACopy(t *testing.T) {
	first := policy.DefaultDeny()
	want := fmt.Sprint(first)
	withExcept := -1
	for i := range first {
		first[i].Rule, first[i].Pattern, first[i].Read, first[i].Write = "changed", "changed", false, false
		if len(first[i].Except) > 0 {
			first[i].Except[0] = "changed"
			withExcept = i
		}
	}
	if withExcept < 0 {
		t.Fatal("no default rule has an exception: the test no longer covers Except")
	}
	if got := fmt.Sprint(policy.DefaultDeny()); got != want {
		t.Errorf("a changed copy changed the next:\n got %s\nwant %s", got, want)
	}
	if p := policy.Default(); len(p.Deny) != len(policy.DefaultDeny()) || p.Deny[0] != policy.DefaultDeny()[0].Rule {
		t.Errorf("Default's deny rules %v", p.Deny)
	}
}

// TestNestedConfigPaths checks that the folders below a root are named by
// what they hold (pyvenv.cfg, package.json), not by their names, that a
// folder reached through a link is not looked in, and that every name it
// gives is one of ConfigPaths (one list: the file tools refuse it at any
// depth).
func TestNestedConfigPaths(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"env/pyvenv.cfg", "web/package.json", "plain/pip.conf"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "env"), filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, c := range policy.ConfigPaths() {
		known[c.Name] = true
	}
	var got []string
	for _, c := range nestedConfigPaths(t, root) {
		got = append(got, c.Name)
		if base := path.Base(c.Name); !known[base] {
			t.Errorf("%s: %s is not one of ConfigPaths", c.Name, base)
		}
		if c.Reason == "" {
			t.Errorf("%s has no reason", c.Name)
		}
	}
	slices.Sort(got)
	if want := []string{"env/pip.conf", "env/pip.ini", "web/.npmrc"}; !slices.Equal(got, want) {
		t.Fatalf("NestedConfigPaths = %q, want %q", got, want)
	}
}

// TestNestedConfigPathsLinks: a folder at the top that is a link inside
// the project is looked in where it leads, with the link kept (npm run in
// it reads the .npmrc there); one that leads out is not, and is no error;
// a marker that is a link (to a file outside, or to nothing) makes its
// folder a package all the same.
func TestNestedConfigPathsLinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	writeTree(t, outside, map[string]string{"pkg/package.json": "{}", "package.json": "{}"})
	writeTree(t, root, map[string]string{"lib/app/package.json": "{}", "lib/env/pyvenv.cfg": "", "marked/README": "", "dangling/README": ""})
	symlinks(t, root, map[string]string{
		"app":                   "lib/app",
		"venv":                  "./lib/../lib/env",
		"chain":                 "app",
		"out":                   filepath.Join(outside, "pkg"),
		"up":                    "../" + filepath.Base(outside) + "/pkg",
		"loop":                  "loop",
		"marked/package.json":   filepath.Join(outside, "package.json"),
		"dangling/package.json": "nothing.json",
	})
	var got []string
	for _, c := range nestedConfigPaths(t, root) {
		n := c.Name
		for _, l := range c.Links {
			n += " " + l.Name + "->" + l.Target
		}
		got = append(got, n)
	}
	slices.Sort(got)
	want := []string{
		"dangling/.npmrc",
		"lib/app/.npmrc app->lib/app",
		"lib/app/.npmrc chain->app app->lib/app",
		"lib/env/pip.conf venv->./lib/../lib/env",
		"lib/env/pip.ini venv->./lib/../lib/env",
		"marked/.npmrc",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q,\nwant %q", got, want)
	}
}

// nestedConfigPaths opens root and returns its nested configuration.
func nestedConfigPaths(t *testing.T, root string) []policy.ConfigPath {
	t.Helper()
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	list, err := policy.NestedConfigPaths(r)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// TestNestedConfigPathsSwapped: a folder the discovery looks in (one
// level down, or a declared package) swapped again and again for a link
// to a folder outside the project that holds the marker never gives the
// configuration of that folder: it is read through the project's
// os.Root, which does not follow a link out. Read by path, the look at
// the marker after the folder was listed followed the link out.
func TestNestedConfigPathsSwapped(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	writeTree(t, outside, map[string]string{"venv/pyvenv.cfg": "", "pkg/package.json": "{}"})
	writeTree(t, root, map[string]string{"package.json": `{"workspaces": ["packages/*"]}`, "env/README": "", "packages/app/README": ""})
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	type swap struct{ dir, aside, target string }
	swaps := []swap{
		{filepath.Join(root, "env"), filepath.Join(root, "env.aside"), filepath.Join(outside, "venv")},
		{filepath.Join(root, "packages", "app"), filepath.Join(root, "packages.aside"), filepath.Join(outside, "pkg")},
	}
	stop, done := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		defer func() { done <- n }()
		for {
			for _, s := range swaps { // the folder, then a link out in its place, then the folder again
				if err := os.Rename(s.dir, s.aside); err != nil {
					t.Error(err)
					return
				}
				if err := os.Symlink(s.target, s.dir); err != nil {
					t.Error(err)
					return
				}
				runtime.Gosched()
				if err := os.Remove(s.dir); err != nil {
					t.Error(err)
					return
				}
				if err := os.Rename(s.aside, s.dir); err != nil {
					t.Error(err)
					return
				}
			}
			n++
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	looks, refused := 0, 0
	for ; looks < 3000 && !t.Failed(); looks++ {
		list, err := policy.NestedConfigPaths(r)
		var we *policy.WorkspaceError
		switch {
		case errors.As(err, &we) && we.Link == "packages/app":
			refused++ // the package folder seen as the link: refused, as it leads out
		case err != nil:
			t.Errorf("look %d: %v", looks, err)
		}
		for _, c := range list {
			t.Errorf("look %d: %s, from a folder outside the project", looks, c.Name)
		}
	}
	close(stop)
	if n := <-done; n == 0 {
		t.Fatalf("no swap was made while the %d looks ran", looks)
	}
	t.Logf("%d looks, %d refused for the link", looks, refused)
}
