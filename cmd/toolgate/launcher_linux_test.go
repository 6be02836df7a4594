package main

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLauncherCacheReadOnlyOnceInstalled: once a launcher's package is in
// its cache, the whole cache is read-only in the box, so the folder that
// holds the read-only install cannot be renamed away and replaced (a
// mount point's parent can be). The launcher is a stand-in named npx (the
// box knows it by that name) that tries the swap, then ends.
func TestLauncherCacheReadOnlyOnceInstalled(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cache := filepath.Join(state, "launchers", "npm", "swap")
	sum := sha512.Sum512([]byte("@scope/server@1.2.3"))
	hash := hex.EncodeToString(sum[:])[:16]
	install := filepath.Join(cache, "_npx", hash)
	pkg := filepath.Join(install, "node_modules", "@scope", "server")
	os.MkdirAll(pkg, 0o755)
	os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"@scope/server","version":"1.2.3"}`), 0o644)
	work := filepath.Join(dir, "work")
	os.MkdirAll(work, 0o755)
	launcher := filepath.Join(dir, "bin", "npx")
	os.MkdirAll(filepath.Dir(launcher), 0o755)
	os.WriteFile(launcher, []byte(fmt.Sprintf(`#!/bin/sh
I=%[1]s
{ mv "$I" "$I.old" && mkdir -p "$I/node_modules" && echo planted > "$I/node_modules/f" && echo swapped; } > %[2]s/result 2>&1
(echo x > %[3]s/planted && echo planted-in-cache) >> %[2]s/result 2>&1
echo tried >> %[2]s/result
`, install, work, cache)), 0o755)
	pins := filepath.Join(dir, "pins.json")
	pol := filepath.Join(dir, "policy.yaml")
	os.WriteFile(pol, []byte("allow: [\"*\"]\ntrust:\n  pins: "+pins+"\n"), 0o644)
	config := filepath.Join(dir, "gateway.yaml")
	os.WriteFile(config, []byte(fmt.Sprintf(`servers:
  - name: swap
    command: %q
    args: ["-y", "@scope/server@1.2.3"]
    isolation:
      write: [%q]
`, launcher, work)), 0o644)
	cmd := exec.Command(bin, "proxy", "--config", config, "--policy", pol, "--audit", filepath.Join(dir, "audit.jsonl"))
	cmd.Env = append(os.Environ(), "TOOLGATE_STATE="+state)
	stderr := &lockedBuilder{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The stand-in ends after its tries: the gateway then fails to
	// connect, and what matters is the host's side.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "swap-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err == nil {
		cs.Close()
	}
	cmd.Wait()
	result, _ := os.ReadFile(filepath.Join(work, "result"))
	if strings.Contains(string(result), "swapped") || strings.Contains(string(result), "planted-in-cache") {
		t.Errorf("the upstream changed its read-only cache: %s", result)
	}
	if _, err := os.Stat(install + ".old"); err == nil {
		t.Errorf("the install folder was renamed away on the host")
	}
	if _, err := os.Stat(filepath.Join(install, "node_modules", "f")); err == nil {
		t.Errorf("a file was planted in the install on the host")
	}
	if _, err := os.Stat(filepath.Join(cache, "planted")); err == nil {
		t.Errorf("a file was planted in the cache on the host")
	}
	if !strings.Contains(string(result), "tried") {
		t.Fatalf("the stand-in did not run: %q\n%s", result, stderr.String())
	}
	if !strings.Contains(string(result), "Read-only") && !strings.Contains(string(result), "Device or resource busy") {
		t.Errorf("the swap did not fail as refused: %q", result)
	}
}

// TestLauncherCwdRefused: a launcher's cwd in a write grant is refused at
// load (exit 2, naming the field and why): npx and pipx look in their
// working folder (package.json, node_modules, .npmrc, __pypackages__)
// before their cache, so the server could plant what runs next.
func TestLauncherCwdRefused(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	os.MkdirAll(work, 0o755)
	pol := filepath.Join(dir, "policy.yaml")
	os.WriteFile(pol, []byte("allow: [\"*\"]\n"), 0o644)
	for command, args := range map[string]string{"npx": `["-y", "@scope/server@1.2.3"]`, "pipx": `["run", "--python", "/usr/bin/python3", "mcp-server-x==1.2.3"]`} {
		config := filepath.Join(dir, "gateway.yaml")
		os.WriteFile(config, []byte(fmt.Sprintf(`servers:
  - name: planted
    command: %s
    args: %s
    cwd: %q
    isolation:
      write: [%q]
`, command, args, work, work)), 0o644)
		cmd := exec.Command(bin, "proxy", "--config", config, "--policy", pol, "--audit", "off")
		cmd.Env = append(os.Environ(), "TOOLGATE_STATE="+filepath.Join(dir, "state"))
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "cwd") || !strings.Contains(string(out), "looks in its working folder") {
			t.Errorf("%s with cwd in its write grant: %v\n%s", command, err, out)
		}
	}
}

// TestPipxIndexOnlyWhileInstalling: pip's index URL (often with a token
// in it) is given to pipx only while its package is not installed; once
// it is, the server's environment does not hold it. The launcher is a
// stand-in named pipx whose environment folder is already made.
func TestPipxIndexOnlyWhileInstalling(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	work := filepath.Join(dir, "work")
	os.MkdirAll(work, 0o755)
	launcher := filepath.Join(dir, "bin", "pipx")
	os.MkdirAll(filepath.Dir(launcher), 0o755)
	os.WriteFile(launcher, []byte("#!/bin/sh\nenv > "+work+"/env\n"), 0o755)
	// pipx's own name for the environment: SHA-256 of spec + python (the
	// #! line's) + pip and venv arguments, 15 hex digits.
	sum := sha256.Sum256([]byte("app" + "/bin/sh"))
	venv := filepath.Join(state, "launchers", "pipx", "idx", ".cache", hex.EncodeToString(sum[:])[:15])
	info := filepath.Join(venv, "lib", "python3.11", "site-packages", "app-1.0.dist-info")
	os.MkdirAll(info, 0o755)
	os.WriteFile(filepath.Join(info, "METADATA"), []byte("Metadata-Version: 2.1\nName: app\nVersion: 1.0\n"), 0o644)
	pol := filepath.Join(dir, "policy.yaml")
	os.WriteFile(pol, []byte("allow: [\"*\"]\n"), 0o644)
	config := filepath.Join(dir, "gateway.yaml")
	os.WriteFile(config, []byte(fmt.Sprintf(`servers:
  - name: idx
    command: %q
    args: ["run", "app"]
    isolation:
      write: [%q]
`, launcher, work)), 0o644)
	cmd := exec.Command(bin, "proxy", "--config", config, "--policy", pol, "--audit", "off")
	cmd.Env = append(os.Environ(), "TOOLGATE_STATE="+state, "PIP_INDEX_URL=https://me:s3cret@index.invalid/simple")
	out, _ := cmd.CombinedOutput()
	env, err := os.ReadFile(filepath.Join(work, "env"))
	if err != nil {
		t.Fatalf("the stand-in did not run: %v\n%s", err, out)
	}
	if strings.Contains(string(env), "s3cret") || strings.Contains(string(env), "PIP_INDEX_URL") {
		t.Errorf("the installed server got the index URL:\n%s", env)
	}
	if !strings.Contains(string(env), "PIP_NO_INDEX=1") {
		t.Errorf("the environment was not taken as installed (no PIP_NO_INDEX):\n%s", env)
	}
}
