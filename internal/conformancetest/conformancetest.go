// Package conformancetest runs the active server suite of the official MCP
// conformance package (installed under the repository's .cache by
// scripts/test-deps.sh) against a server's URL, and fails the test unless
// every scenario passes; NPMTools finds node and those packages.
//
// "Passes" is exact: all 30 active scenarios run, no check fails, 39 checks
// succeed, and the only other check is the one the suite marks
// informational when a server answers requests as application/json, which
// the specification allows and toolgate does for an answer that is the first
// message of its stream (go-sdk patch 18). Another check dropping to INFO or
// WARNING while that one comes back fails the test.
package conformancetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
)

// NPMTools returns node (≥ 22) and the folder of the pinned npm packages
// that scripts/test-deps.sh installs under the .cache of the repository at
// root, and fails the test unless node and each of files (slash-separated,
// in that folder) are there.
func NPMTools(t *testing.T, root string, files ...string) (node, modules string) {
	t.Helper()
	root, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(root, ".cache", "node22", "node_modules", "node", "bin", "node")
	modules = filepath.Join(root, ".cache", "mcp", "node_modules")
	paths := []string{node}
	for _, f := range files {
		paths = append(paths, filepath.Join(modules, filepath.FromSlash(f)))
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: run `make deps` (./scripts/test-deps.sh) to install Node 22 and the MCP test tools", p)
		}
	}
	return node, modules
}

// Passed is the number of checks of the active suite that must succeed.
const Passed = 39

// informational is the one check that may end other than SUCCESS.
const informational = "server-sse-streams-functional INFO: Server returned JSON for all requests - SSE streaming is optional"

var totalRE = regexp.MustCompile(`(?m)^Total: (\d+) passed, (\d+) failed`)

// ActiveSuite runs the conformance package's CLI (node, modules as
// NPMTools finds them) against url and asserts the suite passed. It
// returns the suite's output for further checks.
func ActiveSuite(t *testing.T, node, modules, url string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, node, filepath.Join(modules, ".bin", "conformance"), "server", "--url", url, "--suite", "active", "-o", dir)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	m := totalRE.FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("conformance suite: %v\n%s", err, out)
	}
	passed, _ := strconv.Atoi(string(m[1]))
	failed, _ := strconv.Atoi(string(m[2]))
	if failed != 0 || passed != Passed || !regexp.MustCompile(`Running active suite \(30 scenarios\)`).Match(out) {
		t.Fatalf("conformance suite: %d passed, %d failed, want all 30 active scenarios (%d checks) to pass\n%s", passed, failed, Passed, out)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if err != nil || len(files) != 30 {
		t.Fatalf("%d scenarios' checks.json in the results (%v), want 30", len(files), err)
	}
	var others []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct {
			ID, Status string
			Details    map[string]any
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range checks {
			if c.Status != "SUCCESS" {
				others = append(others, fmt.Sprintf("%s %s: %v", c.ID, c.Status, c.Details["message"]))
			}
		}
	}
	if want := []string{informational}; !slices.Equal(others, want) {
		t.Fatalf("checks that did not succeed: %q, want only %q", others, want)
	}
	t.Logf("conformance active suite: %d passed, %d failed", passed, failed)
	return out
}
