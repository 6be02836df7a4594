package cli

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/trust"
)

// TestNpxSpecs: the package specs npx installs, as npx takes them.
func TestNpxSpecs(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"}, []string{"@modelcontextprotocol/server-everything@2026.8.31"}},
		{[]string{"--yes", "--", "pkg@1", "--flag"}, []string{"pkg@1"}},
		{[]string{"exec", "--yes", "pkg@1"}, []string{"pkg@1"}},
		{[]string{"-y", "-p", "a@1", "--package=b@2", "cmd"}, []string{"a@1", "b@2"}},
		{[]string{"-y", "./local"}, nil},
		{[]string{"-y", "file:../x.tgz"}, nil},
	} {
		if got, err := npxSpecs(c.args); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("npxSpecs(%q) = %q %v, want %q", c.args, got, err, c.want)
		}
	}
	// An option not known to take no value: its value would be taken for
	// the package (review 3: --loglevel silent gave "silent").
	for _, c := range []struct {
		args   []string
		option string
	}{
		{[]string{"--loglevel", "silent", "@scope/server@1.2.3"}, "--loglevel"},
		{[]string{"--cache", "/x", "pkg@1"}, "--cache"},
		{[]string{"-y", "--prefix=/x", "pkg@1"}, "--prefix=/x"},
		// A shell command can install and run any package (review 6,
		// W1); no package named is no pin.
		{[]string{"-c", "npx -y evil-server"}, "-c"},
		{[]string{"--call", "evil-server"}, "--call"},
		{[]string{"-p", "good", "-c", "npx evil"}, "-c"},
		{[]string{"-y"}, "no package"},
	} {
		if got, err := npxSpecs(c.args); err == nil || !strings.Contains(err.Error(), c.option) {
			t.Errorf("npxSpecs(%q) = %q %v, want an error naming %s", c.args, got, err, c.option)
		}
	}
}

// TestNpxDir: the install folder is the one npx names; the digits below
// are what npm's libnpmexec computes (node -e "crypto.createHash('sha512')
// .update(spec).digest('hex').slice(0,16)").
func TestNpxDir(t *testing.T) {
	for spec, want := range map[string]string{
		"@modelcontextprotocol/server-everything":           "5b2dd62b9d0bddd4",
		"@modelcontextprotocol/server-everything@2026.1.26": "3d5f786ad9fb11c0",
	} {
		if got := npxDir("/c", []string{spec}); got != filepath.Join("/c", "_npx", want) {
			t.Errorf("npxDir(%s) = %s, want _npx/%s", spec, got, want)
		}
	}
}

// TestHashTree: the hash covers every file's content and each link's
// target, and never follows a link; a link that leads out of the tree
// (but to a read-only system folder), directly or through another link,
// makes the tree unpinnable.
func TestHashTree(t *testing.T) {
	dir := t.TempDir()
	tree := filepath.Join(dir, "node_modules")
	os.MkdirAll(filepath.Join(tree, "pkg", "dist"), 0o755)
	os.WriteFile(filepath.Join(tree, "pkg", "dist", "index.js"), []byte("run()\n"), 0o644)
	os.Symlink("dist/index.js", filepath.Join(tree, "pkg", "linked.js"))
	os.Symlink("/usr/bin/env", filepath.Join(tree, "pkg", "python")) // a venv's python → /usr/bin/python3
	os.Symlink("python", filepath.Join(tree, "pkg", "python3"))      // a link to a link to a system file
	os.Symlink(".", filepath.Join(tree, "pkg", "here"))
	sum := func() string {
		t.Helper()
		s, err := hashTree(tree)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := sum()
	os.WriteFile(filepath.Join(tree, "pkg", "dist", "index.js"), []byte("run(evil)\n"), 0o644)
	edited := sum()
	if edited == first {
		t.Errorf("an edited file left the hash as it was")
	}
	os.Remove(filepath.Join(tree, "pkg", "linked.js"))
	os.Symlink("dist/other.js", filepath.Join(tree, "pkg", "linked.js"))
	if sum() == edited {
		t.Errorf("a link pointed elsewhere left the hash as it was")
	}
	os.WriteFile(filepath.Join(dir, "writable.js"), []byte("one\n"), 0o644)
	for _, target := range []string{
		"../../writable.js",               // out, directly
		filepath.Join(dir, "writable.js"), // out, absolute
		"here/../../writable.js",          // lexically inside, out through here → .
		"/etc/passwd",                     // absolute, not a system folder shown read-only
	} {
		l := filepath.Join(tree, "pkg", "out.js")
		os.Remove(l)
		os.Symlink(target, l)
		if s, err := hashTree(tree); err == nil {
			t.Errorf("a link to %s (out of the tree) was hashed as its target text: %s", target, s)
		}
		os.Remove(l)
	}
	sum()
}

// npmResolved is what the pin records of npx's install for args in cache
// (the install's folder, and its resolution; "" and nil: none).
func npmResolved(cache, command string, args []string) (string, *trust.Resolved) {
	dir, packages := npmInstalled(cache, command, args)
	if dir == "" {
		return "", nil
	}
	return dir, resolution(dir, packages)
}

// TestNpmResolvedLinkOut: an install whose tree holds a link out of it is
// still found (it is shown read-only and offline), but its resolution
// differs at each look, so that the pin never takes it.
func TestNpmResolvedLinkOut(t *testing.T) {
	cache := t.TempDir()
	args := []string{"-y", "@scope/server@1.2.3"}
	dir := npxDir(cache, []string{"@scope/server@1.2.3"})
	p := filepath.Join(dir, "node_modules", "@scope", "server")
	os.MkdirAll(p, 0o755)
	os.WriteFile(filepath.Join(p, "package.json"), []byte(`{"name":"@scope/server","version":"1.2.3"}`), 0o644)
	os.WriteFile(filepath.Join(cache, "x.js"), []byte("evil()\n"), 0o644)
	os.Symlink("../../../../x.js", filepath.Join(p, "index.js"))
	tree, r1 := npmResolved(cache, "npx", args)
	_, r2 := npmResolved(cache, "npx", args)
	if tree != filepath.Join(dir, "node_modules") || r1 == nil || r2 == nil {
		t.Fatalf("npmResolved = %s %+v: want the tree, and a resolution", tree, r1)
	}
	if r1.Tree == r2.Tree || !strings.HasPrefix(r1.Tree, trust.Unpinnable) {
		t.Errorf("a tree with a link out of it resolved to %q then %q: want unpinnable, differing", r1.Tree, r2.Tree)
	}
	old := trust.Identity{Resolved: r1}
	if c := old.Change(trust.Identity{Resolved: r2}); !strings.Contains(c, "cannot be pinned") || !strings.Contains(c, "leads out") {
		t.Errorf("the change reads %q", c)
	}
}

// TestNpmResolvedIgnoresDecoys: what is pinned is read from npx's own
// folder for the spec, not from another install folder beside it.
func TestNpmResolvedIgnoresDecoys(t *testing.T) {
	cache := t.TempDir()
	args := []string{"-y", "@scope/server@1.2.3", "stdio"}
	install := func(dir, version string) {
		p := filepath.Join(dir, "node_modules", "@scope", "server")
		os.MkdirAll(p, 0o755)
		os.WriteFile(filepath.Join(p, "package.json"), []byte(`{"name":"@scope/server","version":"`+version+`"}`), 0o644)
		os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"dependencies":{"@scope/server":"`+version+`"},"_npx":{"packages":["@scope/server@1.2.3"]}}`), 0o644)
		os.WriteFile(filepath.Join(dir, "package-lock.json"), []byte(`{"packages":{"node_modules/@scope/server":{"version":"`+version+`"}}}`), 0o644)
	}
	install(filepath.Join(cache, "_npx", "0000000000000000"), "6.6.6")
	if dir, r := npmResolved(cache, "npx", args); r != nil || dir != "" {
		t.Fatalf("a decoy alone was taken for npx's install: %s %+v", dir, r)
	}
	real := npxDir(cache, []string{"@scope/server@1.2.3"})
	install(real, "1.2.3")
	dir, r := npmResolved(cache, "npx", args)
	if r == nil || r.Packages["@scope/server"] != "1.2.3" || dir != filepath.Join(real, "node_modules") {
		t.Fatalf("npmResolved = %s %+v, want npx's folder and 1.2.3", dir, r)
	}
}

// TestLauncherResolution: the install found as the gateway starts is
// hashed once, and that hash is the first listing's (a fresh look gives
// the same); a later listing looks again, so a file of the install
// edited since, or a link pointed elsewhere, changes the tree's hash; an
// install that appears only after the start (npx -y's first run) is
// found and hashed at the listing.
func TestLauncherResolution(t *testing.T) {
	cache := t.TempDir()
	args := []string{"-y", "@scope/server@1.2.3", "stdio"}
	l := launcherOf("npx")
	if dir, _ := l.installed(cache, "npx", args); dir != "" {
		t.Fatalf("nothing installed yet, but installed = %s", dir)
	}
	later := launcherResolution(l, cache, "npx", args, "", nil)
	p := filepath.Join(npxDir(cache, []string{"@scope/server@1.2.3"}), "node_modules", "@scope", "server")
	os.MkdirAll(p, 0o755)
	os.WriteFile(filepath.Join(p, "package.json"), []byte(`{"name":"@scope/server","version":"1.2.3"}`), 0o644)
	os.WriteFile(filepath.Join(p, "index.js"), []byte("serve()\n"), 0o644)
	os.Symlink("index.js", filepath.Join(p, "main.js"))
	if r := later(); r == nil || r.Packages["@scope/server"] != "1.2.3" || r.Tree == "" || strings.HasPrefix(r.Tree, trust.Unpinnable) {
		t.Fatalf("an install made after the start resolved to %+v", r)
	}

	dir, packages := l.installed(cache, "npx", args)
	if dir != filepath.Join(npxDir(cache, []string{"@scope/server@1.2.3"}), "node_modules") || packages["@scope/server"] != "1.2.3" {
		t.Fatalf("installed = %s %v", dir, packages)
	}
	resolved := launcherResolution(l, cache, "npx", args, dir, packages)
	first := resolved()
	if _, fresh := npmResolved(cache, "npx", args); first == nil || fresh == nil || first.Tree != fresh.Tree || !maps.Equal(first.Packages, fresh.Packages) {
		t.Fatalf("the first listing's resolution %+v differs from a fresh look %+v", first, fresh)
	}
	if again := resolved(); again == nil || again.Tree != first.Tree {
		t.Fatalf("a second look at the same install resolved to %+v, want %s", again, first.Tree)
	}
	os.WriteFile(filepath.Join(p, "index.js"), []byte("serve(); steal()\n"), 0o644)
	edited := resolved()
	if edited == nil || edited.Tree == first.Tree {
		t.Errorf("an edited file of the install left its hash as it was: %+v", edited)
	}
	os.Remove(filepath.Join(p, "main.js"))
	os.Symlink("package.json", filepath.Join(p, "main.js"))
	if relinked := resolved(); relinked == nil || relinked.Tree == edited.Tree {
		t.Errorf("a link pointed elsewhere left the install's hash as it was: %+v", relinked)
	}
	os.Symlink("../../../../elsewhere.js", filepath.Join(p, "out.js"))
	if r := resolved(); r == nil || !strings.HasPrefix(r.Tree, trust.Unpinnable) {
		t.Errorf("an install with a link out of it resolved to %+v, want unpinnable", r)
	}
	old := trust.Identity{Resolved: first}
	if c := old.Change(trust.Identity{Resolved: edited}); c == "" {
		t.Errorf("the pin saw no change between %s and %s", first.Tree, edited.Tree)
	}
}

// TestPipxVenv: the environment folder is the one pipx run names; the
// digits below are what pipx 1.1's own _get_temporary_venv_path returns
// for the same arguments (Debian 12's pipx, on /usr/bin/python3).
func TestPipxVenv(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--spec", "/w/pyecho_mcp-1.0.0-py3-none-any.whl", "--pip-args=--no-index", "pyecho-mcp"}, "f5c3904f6534754"},
		{[]string{"run", "--python", "/usr/bin/python3", "-i", "https://idx.example/simple", "--system-site-packages", "mcp-server-fetch", "--flag"}, "28fd88b630fe8f3"},
		{[]string{"run", "--no-cache", "mcp-server-fetch"}, ""},
		{[]string{"install", "mcp-server-fetch"}, ""},
	} {
		want := c.want
		if want != "" {
			want = filepath.Join("/c", ".cache", want)
		}
		if got := pipxVenv("/c", "pipx", c.args); got != want {
			t.Errorf("pipxVenv(%q) = %q, want %q", c.args, got, want)
		}
	}
}

// TestPipxUnknownPythonFailsClosed: where toolgate cannot tell which
// Python a pipx runs on (not on PATH, an env -S first line it does not
// read, a binary), it cannot name pipx's folder: a pipx run without an
// absolute --python is refused at load, and one that got past (its pipx
// changed since) is pinned as unpinnable (quarantined), never run
// unpinned with its index granted, though a venv lies in the cache.
func TestPipxUnknownPythonFailsClosed(t *testing.T) {
	cache := t.TempDir()
	venv := filepath.Join(cache, ".cache", "0123456789abcde", "lib", "python3.12", "site-packages", "pkg-1.0.dist-info")
	os.MkdirAll(venv, 0o755)
	os.WriteFile(filepath.Join(venv, "METADATA"), []byte("Name: pkg\nVersion: 1.0\n\n"), 0o644)
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "pipx-env-s"), []byte("#!/usr/bin/env -S python3 -I\n"), 0o755)
	os.WriteFile(filepath.Join(bin, "pipx-bin"), []byte("\x7fELF\x02\x01\x01"), 0o755)
	l := launcherOf("pipx")
	args := []string{"run", "pkg"}
	for _, command := range []string{"/nonexistent/pipx", filepath.Join(bin, "pipx-env-s"), filepath.Join(bin, "pipx-bin")} {
		if err := l.check(command, args); err == nil || !strings.Contains(err.Error(), "--python") {
			t.Errorf("%s: check %v, want a refusal asking for --python", command, err)
		}
		if p := l.pinned(cache, command, args); p == nil || !strings.HasPrefix(p.Tree, trust.Unpinnable) {
			t.Errorf("%s: pinned %+v, want unpinnable", command, p)
		}
	}
	if err := l.check(filepath.Join(bin, "pipx-bin"), []string{"run", "--python", "/usr/bin/python3", "pkg"}); err != nil {
		t.Errorf("with an absolute --python: %v", err)
	}
}

// TestPipxOnlyRun: pipx takes options before its command (-q, -v,
// --global: pipx -q run pkg runs pkg), which toolgate would not read as a
// run: anything but pipx run … is refused at load, and pinned unpinnable
// should it get past, never taken for "installs nothing" (review 6, W1).
func TestPipxOnlyRun(t *testing.T) {
	l := launcherOf("pipx")
	cache := t.TempDir()
	for _, args := range [][]string{{"-q", "run", "pkg"}, {"--verbose", "run", "--no-cache", "pkg"}, {"--global", "run", "pkg"}, {"install", "pkg"}, {}} {
		if err := l.check("pipx", args); err == nil || !strings.Contains(err.Error(), "pipx run") {
			t.Errorf("%q: check %v, want a refusal naming pipx run", args, err)
		}
		if p := l.pinned(cache, "pipx", args); p == nil || !strings.HasPrefix(p.Tree, trust.Unpinnable) {
			t.Errorf("%q: pinned %+v, want unpinnable", args, p)
		}
	}
}

// TestNpmRegistryKept: npm's registry is what npm says; once npm has
// named the same files twice, the answer is given from the state folder
// without running npm (a changed kept answer shows it), until anything npm
// reads changes: the user's npmrc, a project's .npmrc and package.json in
// a folder above the working one, an npm_config_ variable.
func TestNpmRegistryKept(t *testing.T) {
	state, home := t.TempDir(), t.TempDir()
	t.Setenv("TOOLGATE_STATE", state)
	t.Setenv("HOME", home)
	project := filepath.Join(t.TempDir(), "project")
	work := filepath.Join(project, "sub")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	registry := func() string {
		t.Helper()
		r, err := npmRegistry(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	store := filepath.Join(state, "npm-registry.json")
	mark := func() { // the kept answer changed: only a kept answer says so
		t.Helper()
		var seen npmSeen
		b, err := os.ReadFile(store)
		if err != nil || json.Unmarshal(b, &seen) != nil || seen.Inputs == "" {
			t.Fatalf("no answer kept: %s %v", b, err)
		}
		seen.Registry = "http://kept.example.test/"
		b, _ = json.Marshal(seen)
		write(store, string(b))
	}
	steady := func(want string) {
		t.Helper()
		for range 2 {
			if r := registry(); r != want {
				t.Fatalf("registry %q, want %q (npm's)", r, want)
			}
		}
		mark()
		if r := registry(); r != "http://kept.example.test/" {
			t.Fatalf("registry %q: npm ran again though nothing it reads changed", r)
		}
	}
	write(filepath.Join(home, ".npmrc"), "registry=http://one.example.test:4873/\n")
	steady("http://one.example.test:4873/")
	write(filepath.Join(home, ".npmrc"), "registry=http://two.example.test:4873/\n")
	steady("http://two.example.test:4873/")
	write(filepath.Join(project, "package.json"), `{"name":"p"}`)
	write(filepath.Join(project, ".npmrc"), "registry=http://three.example.test:4873/\n")
	steady("http://three.example.test:4873/")
	t.Setenv("npm_config_registry", "http://four.example.test:4873/")
	steady("http://four.example.test:4873/")
}

// TestUpstreamFoldersBelow: an upstream's name names one folder strictly
// below its parent (".", "..", a path are refused, by the configuration
// and where a folder is made of it), and npm's kept registry lies in no
// folder a box is given: not in any upstream's launcher cache, whatever
// its name.
func TestUpstreamFoldersBelow(t *testing.T) {
	state := t.TempDir()
	t.Setenv("TOOLGATE_STATE", state)
	t.Setenv("HOME", t.TempDir())
	l := launcherOf("npx")
	for _, name := range []string{"..", ".", "a/b", "", "a\x00b", strings.Repeat("a", 256)} {
		if p, err := below(state, name); err == nil {
			t.Errorf("below(%q) = %s", name, p)
		}
		if c := (mcpclient.Config{Name: name, Command: "npx"}); c.Check() == nil {
			t.Errorf("upstream name %q accepted", name)
		}
		if _, cache, _, err := launcherGrants(l, name); err == nil {
			t.Errorf("upstream %q given the launcher cache %s", name, cache)
		}
	}
	if _, err := npmRegistry(t.Context()); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(state, "npm-registry.json")
	if _, err := os.Stat(store); err != nil {
		t.Fatalf("npm's registry not kept: %v", err)
	}
	for _, name := range []string{"x", "..x", "npx"} {
		_, cache, _, err := launcherGrants(l, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, tree := range []string{cache, filepath.Join(state, "launchers")} {
			if rel, err := filepath.Rel(tree, store); err != nil || filepath.IsLocal(rel) {
				t.Errorf("upstream %q's cache %s: npm's kept registry %s is within %s", name, cache, store, tree)
			}
		}
	}
}

// TestNpmInputsNode: the node that PATH names is part of what npm's kept
// registry depends on: relinked (PATH the same), the key changes.
func TestNpmInputsNode(t *testing.T) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n# "+n+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(bin, "node")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	key := func(target string) string {
		t.Helper()
		os.Remove(link)
		if err := os.Symlink(filepath.Join(dir, target), link); err != nil {
			t.Fatal(err)
		}
		k := npmInputs(npm, nil)
		if k == "" {
			t.Fatalf("npm %s is not npm-cli.js", npm)
		}
		return k
	}
	if a, a2, b := key("a"), key("a"), key("b"); a != a2 || a == b {
		t.Errorf("keys: node→a %s, again %s, node→b %s", a, a2, b)
	}
}
