package cli

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/trust"
)

// testNode is Node 22 from the test cache (`make deps`).
func testNode(t *testing.T) string {
	t.Helper()
	node, err := filepath.Abs(filepath.Join("..", "..", ".cache", "node22", "node_modules", "node", "bin", "node"))
	if err == nil {
		_, err = os.Stat(node)
	}
	if err != nil {
		t.Fatalf("Node 22 of the test cache: %v: run `make deps` (./scripts/test-deps.sh)", err)
	}
	return node
}

// TestNpxOrderMatchesNode: specs sort as npx sorts them
// (localeCompare(b, "en")): 3000 random strings of printable ASCII, biased
// to the characters whose bytes and places differ (case, '@' and digits,
// '_' and '-', '/'), sorted by Node and by npxCompare.
func TestNpxOrderMatchesNode(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const hot = "aAbB@0119_-/.zZ"
	var specs []string
	for range 3000 {
		b := make([]byte, r.IntN(7))
		for i := range b {
			if r.IntN(2) == 0 {
				b[i] = hot[r.IntN(len(hot))]
			} else {
				b[i] = byte(' ' + r.IntN(95))
			}
		}
		specs = append(specs, string(b))
	}
	in, _ := json.Marshal(specs)
	cmd := exec.Command(testNode(t), "-e", `let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(JSON.stringify(JSON.parse(s).sort((a,b)=>a.localeCompare(b,"en")))))`)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	got := slices.SortedFunc(slices.Values(specs), npxCompare)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("at %d: npxCompare places %q, Node %q (around: %q, Node %q)", i, got[i], want[i], got[max(i-2, 0):min(i+3, len(got))], want[max(i-2, 0):min(i+3, len(want))])
		}
	}
}

// TestNpxTwoPackages: the real npx (through PATH, on Node 22 of the test
// cache), given two --package options whose bytes and locale orders
// differ (JSONStream before is-number bytewise, after it in the locale),
// installs them from this machine's registry in the folder npmResolved
// reads, and what it resolved is pinned; nothing is read from another
// folder beside it.
func TestNpxTwoPackages(t *testing.T) {
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Fatal("npx is not on PATH: run `make deps` (./scripts/test-deps.sh)")
	}
	cache := t.TempDir()
	args := []string{"--yes", "--package=JSONStream@1.3.5", "--package", "is-number@7.0.0", "-c", "true"}
	cmd := exec.Command(npx, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "npm_config_cache="+cache, "npm_config_update_notifier=false",
		"PATH="+filepath.Dir(testNode(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npx %q: %v\n%s", args, err, out)
	}
	made, _ := filepath.Glob(filepath.Join(cache, "_npx", "*"))
	// An upstream names its command, not -c (refused): npx's folder is
	// named by the packages alone.
	args = append(args[:len(args)-2:len(args)-2], "JSONStream")
	dir, r := npmResolved(cache, "npx", args)
	if r == nil || dir != filepath.Join(npxFolder(cache, "npx", args), "node_modules") || len(made) != 1 || made[0] != filepath.Dir(dir) {
		t.Fatalf("npmResolved = %q %+v; npx installed in %q", dir, r, made)
	}
	if r.Packages["JSONStream"] != "1.3.5" || r.Packages["is-number"] != "7.0.0" || strings.HasPrefix(r.Tree, trust.Unpinnable) {
		t.Errorf("resolved %+v", r)
	}
	l := launcherOf("npx")
	if p := l.pinned(cache, "npx", args); p == nil || p.Tree != r.Tree {
		t.Errorf("pinned %+v, want %+v", p, r)
	}
}

// TestLauncherPinnedFailsClosed: an upstream whose launcher ran but left
// nothing in the folder toolgate names for its args (npx or pipx named it
// otherwise) is not pinned as having nothing: it cannot be pinned, so its
// tools are quarantined; args that name no folder of the launcher's (a
// local package) pin nothing.
func TestLauncherPinnedFailsClosed(t *testing.T) {
	cache := t.TempDir()
	elsewhere := filepath.Join(cache, "_npx", "0000000000000000", "node_modules", "pkg")
	os.MkdirAll(elsewhere, 0o755)
	os.WriteFile(filepath.Join(elsewhere, "package.json"), []byte(`{"name":"pkg","version":"1.0.0"}`), 0o644)
	for _, c := range []struct {
		command string
		args    []string
	}{
		{"npx", []string{"-y", "-p", "pkg@1", "-p", "other@2", "pkg"}},
		{"pipx", []string{"run", "--python", "/usr/bin/python3", "pkg"}},
	} {
		p := launcherOf(c.command).pinned(cache, c.command, c.args)
		if p == nil || !strings.HasPrefix(p.Tree, trust.Unpinnable) || !strings.Contains(p.Tree, "installed elsewhere") {
			t.Errorf("%s %q with nothing in its folder pinned %+v: want unpinnable", c.command, c.args, p)
		}
	}
	if p := launcherOf("npx").pinned(cache, "npx", []string{"-y", "./local"}); p != nil {
		t.Errorf("a local package pinned %+v", p)
	}
}

// TestNpxSpecsRefusesUnordered: several specs with a character outside
// printable ASCII are refused (their order in npx's locale is not one
// toolgate computes); one is not (it needs no order).
func TestNpxSpecsRefusesUnordered(t *testing.T) {
	if _, err := npxSpecs([]string{"-p", "a@1", "-p", "b@é", "cmd"}); err == nil || !strings.Contains(err.Error(), "ASCII") {
		t.Errorf("two specs, one not ASCII: %v", err)
	}
	if s, err := npxSpecs([]string{"-y", "b@é"}); err != nil || len(s) != 1 {
		t.Errorf("one spec not ASCII: %q %v", s, err)
	}
}

// TestPipxVenvMatchesPipx: the environment folder toolgate names is the
// one pipx's own code names for the same command line (Debian's pipx,
// its parser and _get_temporary_venv_path), a --python given by name
// included; a --python pipx would resolve on its own (3.12), --no-cache
// and an option not known here are refused by the launcher's check.
func TestPipxVenvMatchesPipx(t *testing.T) {
	pipx, err := exec.LookPath("pipx")
	if err != nil {
		t.Fatal("pipx is not on PATH: run `make deps` (./scripts/test-deps.sh)")
	}
	l := launcherOf("pipx")
	const script = `import sys
from pipx import main as m
from pipx.commands.run import _get_temporary_venv_path as venv
a = m.get_command_parser().parse_args(sys.argv[1:])
print(venv(a.spec or a.app_with_args[0], a.python, m.get_pip_args(vars(a)), m.get_venv_args(vars(a))).name)`
	for _, args := range [][]string{
		{"run", "mcp-server-fetch"},
		{"run", "--python", "python3", "mcp-server-fetch", "--flag"},
		{"run", "--python=/usr/bin/python3", "--spec", "mcp-server-fetch==1.0", "-i", "https://idx.example/simple", "--pip-args=--no-deps --pre", "--system-site-packages", "fetch"},
		{"run", "-e", "--spec", "/w/pkg", "app"},
	} {
		if err := l.check(pipx, args); err != nil {
			t.Errorf("check(%q): %v", args, err)
		}
		python := pipxPython(pipx)
		cmd := exec.Command(python, "-c", script)
		cmd.Args = append(cmd.Args, args...)
		cmd.Env = append(os.Environ(), "PIPX_HOME="+t.TempDir())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("pipx's own name for %q: %v", args, err)
		}
		want := filepath.Join("/c", ".cache", strings.TrimSpace(string(out)))
		if got := pipxVenv("/c", pipx, args); got != want {
			t.Errorf("pipxVenv(%q) = %q, pipx names %q", args, got, want)
		}
	}
	for _, c := range []struct {
		args []string
		word string
	}{
		{[]string{"run", "--python", "3.12", "mcp-server-fetch"}, "3.12"},
		{[]string{"run", "--python", "bin/python3", "mcp-server-fetch"}, "bin/python3"},
		{[]string{"run", "--no-cache", "mcp-server-fetch"}, "--no-cache"},
		{[]string{"run", "--fetch-missing-python", "mcp-server-fetch"}, "--fetch-missing-python"},
		{[]string{"run", "--pip-args", "--extra-index-url 'x y'", "mcp-server-fetch"}, "quoting"},
	} {
		if err := l.check(pipx, c.args); err == nil || !strings.Contains(err.Error(), c.word) {
			t.Errorf("check(%q) = %v, want a refusal naming %s", c.args, err, c.word)
		}
	}
}
