package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/sandbox"
)

// TestIsolationRefusals: each bad setting is refused with exit 2 and a
// message naming the upstream, the field, the value and the rule.
func TestIsolationRefusals(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	own := filepath.Join(dir, "own")
	for _, d := range []string{work, filepath.Join(work, ".git", "hooks"), own} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	policyFile := filepath.Join(own, "toolgate.yaml")
	os.WriteFile(policyFile, []byte("mode: default\n"), 0o644)
	outLink := filepath.Join(work, "out")
	if err := os.Symlink(dir, outLink); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home", "me")
	os.MkdirAll(home, 0o755)
	rules := boxRules{homes: []string{home}, own: []string{policyFile, own}}
	n := func(i int) *int { return &i }
	for _, tc := range []struct {
		name  string
		f     isolationFile
		field string
		rule  string
	}{
		{"mode off without --unisolated", isolationFile{Mode: "off"}, "mode", "--unisolated"},
		{"unknown mode", isolationFile{Mode: "loose"}, "mode", "want strict"},
		{"write /", isolationFile{Write: []writeGrant{{Path: "/"}}}, "write", "whole machine"},
		{"read /", isolationFile{Read: []string{"/"}}, "read", "whole machine"},
		{"write a home folder", isolationFile{Write: []writeGrant{{Path: home}}}, "write", "home folder"},
		{"read a home folder", isolationFile{Read: []string{home}}, "read", "credential"},
		{"write the folder of homes", isolationFile{Write: []writeGrant{{Path: filepath.Join(dir, "home")}}}, "write", "home folder"},
		{"write a system folder", isolationFile{Write: []writeGrant{{Path: "/etc"}}}, "write", "system folder"},
		{"write inside a system folder", isolationFile{Write: []writeGrant{{Path: "/usr/share"}}}, "write", "system folder"},
		{"write /tmp", isolationFile{Write: []writeGrant{{Path: "/tmp"}}}, "write", "temporary folder"},
		{"missing path", isolationFile{Read: []string{filepath.Join(dir, "nope")}}, "read", "does not exist"},
		{"link leaving its folder", isolationFile{Read: []string{outLink}}, "read", "outside the folder"},
		{"a protected config path", isolationFile{Write: []writeGrant{{Path: filepath.Join(work, ".git", "hooks")}}}, "write", "protected configuration path"},
		{"toolgate's own file", isolationFile{Read: []string{own}}, "read", "toolgate's own file"},
		{"tilde", isolationFile{Read: []string{"~/x"}}, "read", "in full"},
		{"bare *", isolationFile{Network: []string{"*"}}, "network", "every host"},
		{"an address", isolationFile{Network: []string{"10.0.0.1"}}, "network", "IP address"},
		{"a v6 address", isolationFile{Network: []string{"[fd00::1]:443"}}, "network", "IP address"},
		{"a range", isolationFile{Network: []string{"10.0.0.0/8"}}, "network", "range"},
		{"localhost", isolationFile{Network: []string{"localhost"}}, "network", "loopback"},
		{"metadata", isolationFile{Network: []string{"metadata.google.internal"}}, "network", "metadata"},
		{"top-level wildcard", isolationFile{Network: []string{"*.com"}}, "network", "two labels"},
		{"private without port", isolationFile{Private: []string{"registry.corp.example"}}, "private", "host:port"},
		{"private address", isolationFile{Private: []string{"10.1.2.3:443"}}, "private", "IP address"},
		{"private wildcard", isolationFile{Private: []string{"*.corp.example:443"}}, "private", "wildcard"},
		{"memory", isolationFile{Limits: &limitsFile{Memory: "lots"}}, "limits.memory", "size"},
		{"cpu", isolationFile{Limits: &limitsFile{CPU: 4}}, "limits.cpu", "one processor"},
		{"processes", isolationFile{Limits: &limitsFile{Processes: -1}}, "limits.processes", "1 to 4096"},
		{"kill_after", isolationFile{KillAfter: n(0)}, "kill_after", "1 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkIsolation("files", "node", &tc.f, dir, false, rules)
			assertRefused(t, err, tc.field, tc.rule)
		})
	}
	t.Run("docker", func(t *testing.T) {
		_, err := checkIsolation("files", "/usr/bin/docker", nil, dir, false, rules)
		assertRefused(t, err, "mode", "socket is the host")
	})
	t.Run("accepted", func(t *testing.T) {
		iso, err := checkIsolation("files", "node", &isolationFile{Read: []string{"/usr/share"}, Write: []writeGrant{{Path: "work", Config: true}},
			Network: []string{"api.github.com", "*.githubusercontent.com"}, Private: []string{"registry.corp.example:4873"},
			Limits: &limitsFile{Memory: "1GiB", CPU: 1, Processes: 64}, KillAfter: n(5)}, dir, false, rules)
		if err != nil {
			t.Fatal(err)
		}
		realWork, _ := filepath.EvalSymlinks(work)
		if len(iso.write) != 1 || iso.write[0] != realWork || !iso.config[realWork] || iso.memory != 1<<30 || iso.processes != 64 || iso.killAfter != 5 {
			t.Errorf("%+v", iso)
		}
		iso, err = checkIsolation("files", "node", &isolationFile{Mode: "off"}, dir, true, rules)
		if err != nil || !iso.off {
			t.Errorf("mode off with --unisolated: %+v %v", iso, err)
		}
	})
}

// TestIsolationCredentialPaths: a grant of each credential path of the
// home folder, or of a folder inside it, is refused, for reading and
// writing.
func TestIsolationCredentialPaths(t *testing.T) {
	home := t.TempDir()
	rules := boxRules{homes: []string{home}}
	for _, cp := range policy.CredentialPaths() {
		t.Run(cp.Name, func(t *testing.T) {
			p := filepath.Join(home, filepath.FromSlash(cp.Name))
			inside := filepath.Join(p, "sub")
			if err := os.MkdirAll(inside, 0o700); err != nil {
				t.Fatal(err)
			}
			for _, g := range []string{p, inside, filepath.Dir(p)} {
				if g == home {
					continue // the home folder itself: its own rule (TestIsolationRefusals)
				}
				for _, field := range []string{"read", "write"} {
					f := isolationFile{Read: []string{g}}
					if field == "write" {
						f = isolationFile{Write: []writeGrant{{Path: g}}}
					}
					_, err := checkIsolation("up", "node", &f, "/", false, rules)
					assertRefused(t, err, field, "credential paths stay invisible")
				}
			}
		})
	}
}

func assertRefused(t *testing.T, err error, field, rule string) {
	t.Helper()
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage {
		t.Fatalf("got %v, want a usage error", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "upstream files: ") && !strings.Contains(msg, "upstream up: ") {
		t.Errorf("%q does not name the upstream", msg)
	}
	if !strings.Contains(msg, "isolation."+field+": ") || !strings.Contains(msg, rule) {
		t.Errorf("%q: want field %s and rule %q", msg, field, rule)
	}
}

// TestSuggestGrants: the refusals of a box become the grants that would
// have allowed them; what no grant allows is a comment.
func TestSuggestGrants(t *testing.T) {
	rec := func(target, reason, rule string) audit.Record {
		args, _ := json.Marshal(boxRefusal{Target: target, Reason: reason})
		return audit.Record{Tool: "isolation:fs", Decision: audit.DecisionDeny, Arguments: args, Rule: rule}
	}
	out := suggestGrants("fs", []audit.Record{
		rec("api.github.com:443", "not_listed", "network: not_listed: no allow-list entry matches the host"),
		rec("api.github.com:443", "not_listed", "network: not_listed: again"),
		rec("mirror.example:8080", "not_listed", "network: not_listed"),
		rec("registry.corp.example:4873", "private_address", "network: private_address: registry.corp.example resolves to 10.1.2.3 (a private address)"),
		rec("sneaky.example:443", "private_address", "network: private_address: sneaky.example resolves to 127.0.0.1 (a loopback address)"),
		rec("metadata.google.internal:80", "metadata_address", "network: metadata_address"),
		{Tool: "isolation:fs", Arguments: json.RawMessage(`{"target":"/srv/work/.mcp.json","reason":"auto_run","grant":"/srv/work"}`)},
	})
	var parsed struct {
		Isolation isolationFile `yaml:"isolation"`
	}
	if err := yaml.Unmarshal([]byte(out), &parsed); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, out)
	}
	if got := strings.Join(parsed.Isolation.Network, " "); got != "api.github.com mirror.example:8080" {
		t.Errorf("network %q\n%s", got, out)
	}
	if got := strings.Join(parsed.Isolation.Private, " "); got != "registry.corp.example:4873" {
		t.Errorf("private %q\n%s", got, out)
	}
	if w := parsed.Isolation.Write; len(w) != 1 || w[0].Path != "/srv/work" || !w[0].Config {
		t.Errorf("write %+v: want {path: /srv/work, config: true}\n%s", w, out)
	}
	for _, never := range []string{"# no grant allows sneaky.example:443", "# no grant allows metadata.google.internal:80"} {
		if !strings.Contains(out, never) {
			t.Errorf("lacks %q\n%s", never, out)
		}
	}
}

// TestProgramPathsInterpreter: a command that is a script (npx) brings
// the folder of the interpreter its #! line names, found through PATH for
// #!/usr/bin/env NAME (a node of nvm's or a downloaded one), so that it
// starts in the box.
func TestProgramPathsInterpreter(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bin, interp := filepath.Join(dir, "bin"), filepath.Join(dir, "runtime")
	os.MkdirAll(bin, 0o755)
	os.MkdirAll(interp, 0o755)
	os.WriteFile(filepath.Join(interp, "mynode"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(bin, "mytool"), []byte("#!/usr/bin/env -S mynode --flag\nconsole.log(1)\n"), 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+interp+string(os.PathListSeparator)+os.Getenv("PATH"))
	got := programPaths(&mcpclient.Config{Command: "mytool"}, nil)
	for _, want := range []string{bin, interp} {
		if !slices.Contains(got, want) {
			t.Errorf("programPaths %v lacks %s", got, want)
		}
	}
}

// TestBoxStartErrorPassing: a box that could not start for a passing
// shortage (a sandbox.ErrUnavailable that does not last) is not refused
// as a machine without a sandbox (exit 2, "this machine gives none"): the
// error says it could not start just now and that nothing ran
// unconfined. (A lasting one, user namespaces disabled, is
// TestBoxRefusedBelowLevel's refusal.)
func TestBoxStartErrorPassing(t *testing.T) {
	err := boxStartError(fmt.Errorf("%w: starting the helper: resource temporarily unavailable", sandbox.ErrUnavailable), "full", "up")
	var ee *exitError
	if errors.As(err, &ee) || !errors.Is(err, sandbox.ErrUnavailable) || sandbox.Lasting(err) ||
		!strings.Contains(err.Error(), "upstream up: its box could not be started just now") || strings.Contains(err.Error(), "this machine gives") {
		t.Fatalf("got %v, want a passing failure naming the upstream, not a refusal of the machine", err)
	}
}
