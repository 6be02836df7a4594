package main

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// writeWheel writes a wheel of the stdlib-only Python MCP server in
// testdata/pyecho (distribution pyecho-mcp 1.0.0, console script
// pyecho-mcp) into dir and returns its path: pip installs it with no
// index and no build step.
func writeWheel(t *testing.T, dir string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "pyecho", "pyecho_mcp.py"))
	if err != nil {
		t.Fatal(err)
	}
	const info = "pyecho_mcp-1.0.0.dist-info/"
	files := [][2]string{
		{"pyecho_mcp.py", string(src)},
		{info + "METADATA", "Metadata-Version: 2.1\nName: pyecho-mcp\nVersion: 1.0.0\n"},
		{info + "WHEEL", "Wheel-Version: 1.0\nGenerator: toolgate-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
		{info + "entry_points.txt", "[console_scripts]\npyecho-mcp = pyecho_mcp:main\n"},
	}
	path := filepath.Join(dir, "pyecho_mcp-1.0.0-py3-none-any.whl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	var record strings.Builder
	for _, file := range files {
		w, err := z.Create(file[0])
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(file[1]))
		sum := sha256.Sum256([]byte(file[1]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", file[0], base64.RawURLEncoding.EncodeToString(sum[:]), len(file[1]))
	}
	record.WriteString(info + "RECORD,,\n")
	w, _ := z.Create(info + "RECORD")
	w.Write([]byte(record.String()))
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPipxServerInTheBox: a Python MCP server run by `pipx run` (Debian's
// pipx, a local wheel, no package index: this machine reaches none) in the
// box with no grant but a read of the wheel's folder. pipx makes its
// environment in the upstream's launcher cache under toolgate's state
// folder; what it installed (every distribution's version and a SHA-256
// over the environment) is pinned. The second start reuses that
// environment, read-only in the box, pinned as before; an installed file
// changed on the host quarantines the upstream's tools, naming the tree.
func TestPipxServerInTheBox(t *testing.T) {
	dir := t.TempDir()
	wheels := filepath.Join(dir, "wheels")
	os.MkdirAll(wheels, 0o755)
	wheel := writeWheel(t, wheels)
	state := filepath.Join(dir, "state")
	pins := filepath.Join(dir, "pins.json")
	pol := filepath.Join(dir, "policy.yaml")
	os.WriteFile(pol, []byte("allow: [\"*\"]\ntrust:\n  pins: "+pins+"\n"), 0o644)
	config := filepath.Join(dir, "gateway.yaml")
	os.WriteFile(config, []byte(fmt.Sprintf(`servers:
  - name: pyecho
    command: pipx
    args: ["run", "--spec", %q, "--pip-args=--no-index", "pyecho-mcp"]
    env:
      PIP_NO_INDEX: "1"
    isolation:
      read: [%q]
`, wheel, wheels)), 0o644)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PIP_") { // this machine's pip settings: the gateway's own index would be granted
			env = append(env, kv)
		}
	}
	run := func(step string) (*mcp.CallToolResult, string) {
		t.Helper()
		cmd := exec.Command(bin, "proxy", "--config", config, "--policy", pol, "--audit", filepath.Join(dir, "audit.jsonl"))
		cmd.Env = append(env, "TOOLGATE_STATE="+state)
		stderr := &lockedBuilder{}
		cmd.Stderr = stderr
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "pipx-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("%s: connecting: %v\n%s", step, err, stderr.String())
		}
		defer cmd.Wait()
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pyecho__echo", Arguments: map[string]any{"message": "through pipx"}})
		if err != nil {
			t.Fatalf("%s: %v\n%s", step, err, stderr.String())
		}
		return res, stderr.String()
	}
	type pinned struct {
		Upstreams map[string]struct {
			Identity struct {
				Resolved *struct {
					Packages map[string]string
					Tree     string
				}
			}
			PendingIdentity *json.RawMessage `json:"pending_identity"`
		}
	}
	readPins := func() pinned {
		var p pinned
		b, _ := os.ReadFile(pins)
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("the pin file: %v\n%s", err, b)
		}
		return p
	}

	if res, stderr := run("first start"); res.IsError || text(res) != "through pipx" {
		t.Fatalf("first start: %q\n%s", text(res), stderr)
	}
	venvs, _ := filepath.Glob(filepath.Join(state, "launchers", "pipx", "pyecho", ".cache", "*", "lib", "python*", "site-packages", "pyecho_mcp.py"))
	if len(venvs) != 1 {
		t.Fatalf("pipx's environments in the launcher cache: %v, want one", venvs)
	}
	if r := readPins().Upstreams["pyecho"].Identity.Resolved; r == nil || r.Packages["pyecho-mcp"] != "1.0.0" || len(r.Tree) != 64 {
		t.Fatalf("the pin's resolution: %+v, want pyecho-mcp 1.0.0 and the environment's SHA-256", r)
	}

	if res, stderr := run("second start"); res.IsError || text(res) != "through pipx" {
		t.Fatalf("second start: %q\n%s", text(res), stderr)
	}
	if up := readPins().Upstreams["pyecho"]; up.PendingIdentity != nil {
		t.Fatalf("the second start changed the identity: %s", *up.PendingIdentity)
	}

	b, err := os.ReadFile(venvs[0])
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(venvs[0], append(b, "\n# changed after the pin\n"...), 0o644)
	res, stderr := run("an installed file changed")
	if !res.IsError || !strings.Contains(text(res), "quarantined") || !strings.Contains(text(res), "installed another dependency tree") {
		t.Fatalf("an installed file changed: want the tool quarantined naming the tree, got isError=%v %q\n%s", res.IsError, text(res), stderr)
	}
}
