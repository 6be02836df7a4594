package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCallCommandNetwork: with allowed domains, a command's network is the
// egress proxy: its environment names it, and what the proxy refuses is a
// permission_denied naming the host and the rule. Nothing here needs the
// Internet: every case is refused before or right after resolution (IP
// literals, localhost, names never looked up).
func TestCallCommandNetwork(t *testing.T) {
	ws := workspace(t)
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(pol, []byte("allow:\n  - WebFetch(domain:*.allowed.example)\n"+
		"deny:\n  - WebFetch(domain:bad.allowed.example)\n"+
		"ask:\n  - WebFetch(domain:ask.allowed.example)\n"), 0o644)
	command := func(c string) string { return `{"command":"` + c + `","timeout":20}` }

	r := toolgate(t, ws, "", "call", "execute_command", command("env"), "--allow-domain", "allowed.example", "--yes")
	out := parseCall(t, r)
	env := "\n" + out.Content[0].Text
	if r.code != 0 || out.IsError {
		t.Fatalf("env: exit %d, %s", r.code, r.stdout)
	}
	for _, v := range []string{"HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128",
		"http_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "NO_PROXY=\n", "no_proxy=\n"} {
		if !strings.Contains(env, "\n"+v) {
			t.Errorf("the command's environment lacks %q:%s", v, env)
		}
	}

	cases := []struct {
		name    string
		command string
		flags   []string
		reason  string // the proxy's reason
		words   []string
	}{
		{"unlisted over https", "curl -sS https://denied.example/", []string{"--allow-domain", "allowed.example"}, "not_listed",
			[]string{"connection to denied.example refused: not on the allow list (allowed: allowed.example)"}},
		{"unlisted over http (curl exits 0)", "curl -sS http://denied.example/x", []string{"--allow-domain", "allowed.example"}, "not_listed",
			[]string{"denied.example", "allowed.example"}},
		{"look-alike", "curl -sS https://allowed.example.denied.example/", []string{"--allow-domain", "allowed.example"}, "not_listed",
			[]string{"allowed.example.denied.example"}},
		{"git", "git ls-remote https://denied.example/repo.git", []string{"--allow-domain", "allowed.example"}, "not_listed",
			[]string{"denied.example"}},
		{"python", "python3 -c \\\"import urllib.request as u; u.urlopen('https://denied.example/')\\\"", []string{"--allow-domain", "allowed.example"}, "not_listed",
			[]string{"denied.example"}},
		{"metadata address", "curl -sS http://169.254.169.254/latest/meta-data/", []string{"--allow-domain", "allowed.example"}, "ip_literal",
			[]string{"169.254.169.254"}},
		{"listed loopback address", "curl -sS http://127.0.0.1/", []string{"--allow-domain", "127.0.0.1"}, "private_address",
			[]string{"127.0.0.1", `allowed by "127.0.0.1"`}},
		{"listed metadata address", "curl -sS http://169.254.169.254/", []string{"--allow-domain", "169.254.169.254"}, "metadata_address",
			[]string{"169.254.169.254"}},
		{"listed IPv6 loopback", "curl -sS http://[::1]/", []string{"--allow-domain", "[::1]"}, "private_address",
			[]string{"::1"}},
		{"listed localhost", "curl -sS https://localhost/", []string{"--allow-domain", "localhost"}, "private_address",
			[]string{"a localhost name is loopback"}},
		{"port", "curl -sS http://allowed.example:8080/", []string{"--allow-domain", "allowed.example"}, "port_not_allowed",
			[]string{"allowed.example:8080"}},
		{"policy deny rule", "curl -sS https://bad.allowed.example/", []string{"--policy", pol}, "denied",
			[]string{`bad.allowed.example refused: the policy denies it (rule "bad.allowed.example")`}},
		{"policy ask rule", "curl -sS https://ask.allowed.example/", []string{"--policy", pol}, "denied",
			[]string{"ask.allowed.example"}},
		{"policy allow rule, other host", "curl -sS https://allowed.example/", []string{"--policy", pol}, "not_listed",
			[]string{"(allowed: *.allowed.example)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A workspace and audit log of its own: refusals in a row
			// would trip the session's denial breaker.
			ws := workspace(t)
			r := toolgate(t, ws, "", append([]string{"call", "execute_command", command(tc.command), "--yes"}, tc.flags...)...)
			out := parseCall(t, r)
			if r.code != 1 || out.Error == nil || out.Error.Type != "permission_denied" {
				t.Fatalf("exit %d, error %+v; want permission_denied\n%s", r.code, out.Error, r.stdout)
			}
			text := out.Content[0].Text
			for _, w := range append(tc.words, tc.reason) {
				if !strings.Contains(text, w) {
					t.Errorf("the result does not say %q:\n%s", w, text)
				}
			}
			if out.Error.Suggestion == "" {
				t.Error("no suggestion")
			}
		})
	}

	// Without an allowed domain there is no network at all, nor proxy.
	r = toolgate(t, workspace(t), "", "call", "execute_command", command("env; curl -sS https://allowed.example/"), "--yes")
	if out := parseCall(t, r); r.code != 1 || out.Error == nil || out.Error.Type != "sandbox_violation" || strings.Contains(r.stdout, "PROXY") {
		t.Fatalf("no network: exit %d %s", r.code, r.stdout)
	}
}
