//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBoxFolderOfAKilledGateway: a gateway killed with SIGKILL leaves the
// empty folder of its boxed upstream (no cwd) in the temporary folder;
// the next gateway's start removes it, and leaves the folder of a gateway
// still running, which removes its own as it ends.
func TestBoxFolderOfAKilledGateway(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp") // the gateways' TMPDIR: only theirs in it
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	config, pol := filepath.Join(dir, "gateway.yaml"), filepath.Join(dir, "policy.yaml")
	os.WriteFile(config, []byte(fmt.Sprintf("servers:\n  - name: up\n    command: %q\n    args: [\"-test.run=^$\"]\n    env:\n      %s: rugpull\n", exe, upstreamEnv)), 0o644)
	os.WriteFile(pol, []byte("allow: [\"*\"]\n"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	folders := func() []string {
		m, _ := filepath.Glob(filepath.Join(tmp, "toolgate-box-*"))
		return m
	}
	type gateway struct {
		cmd    *exec.Cmd
		cs     *mcp.ClientSession
		folder string // its upstream's box folder
	}
	// start starts a gateway and waits for its upstream to run (a listing
	// of tools answered through it).
	start := func() *gateway {
		t.Helper()
		before := folders()
		cmd := exec.Command(bin, "proxy", "--config", config, "--policy", pol, "--audit", "off")
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "TOOLGATE_STATE="+filepath.Join(dir, "state"))
		stderr := &lockedBuilder{}
		cmd.Stderr = stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "box-folder-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connecting: %v\n%s", err, stderr.String())
		}
		t.Cleanup(func() { cs.Close() })
		if res, err := cs.ListTools(ctx, nil); err != nil || len(res.Tools) == 0 {
			t.Fatalf("listing the upstream's tools: %v %+v\n%s", err, res, stderr.String())
		}
		var made []string
		for _, f := range folders() {
			if !slices.Contains(before, f) {
				made = append(made, f)
			}
		}
		if len(made) != 1 {
			t.Fatalf("the gateway made the box folders %q, want one (before: %q)\n%s", made, before, stderr.String())
		}
		return &gateway{cmd, cs, made[0]}
	}

	live := start()
	killed := start()
	if err := killed.cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup runs
		t.Fatal(err)
	}
	// The transport's Close waits for the process (os/exec's Wait): a
	// second Wait here would race with the one it runs as it sees the end.
	killed.cs.Close()
	if _, err := os.Stat(killed.folder); err != nil {
		t.Fatalf("the killed gateway's box folder is gone before the next start (the test proves nothing): %v", err)
	}
	next := start()
	if _, err := os.Lstat(killed.folder); !os.IsNotExist(err) {
		t.Errorf("the next start left the killed gateway's box folder %s: %v", killed.folder, err)
	}
	if _, err := os.Stat(live.folder); err != nil {
		t.Errorf("the next start removed the box folder of a running gateway: %v", err)
	}
	if res, err := live.cs.ListTools(ctx, nil); err != nil || len(res.Tools) == 0 {
		t.Errorf("the running gateway after the sweep: %v %+v", err, res)
	}
	for _, g := range []*gateway{live, next} {
		g.cs.Close() // and waits for the process
		if _, err := os.Lstat(g.folder); !os.IsNotExist(err) {
			t.Errorf("a gateway that ended left its box folder %s: %v", g.folder, err)
		}
	}
}
