package web

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

var (
	urlRE       = regexp.MustCompile(`https?://[^\s'"|)]+`)
	allowListRE = regexp.MustCompile(`\(allowlist: ([^)]*)\)`)
)

// TestAttackCorpus sends every URL that the network cases of the shared
// attack corpus try to reach through http_request, with the corpus's
// allow-list: each is refused by the policy (permission_denied), never
// merely unreachable, and unlisted names are never looked up.
func TestAttackCorpus(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "attack-corpus-sample.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		ID, Category, Expected, Why string
		Arguments                   map[string]any
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	for _, n := range []string{"pkgs.example.org", "files.example.org", "api.github.com"} {
		e.dns.Set(n, "127.0.0.1")
	}
	ran := 0
	for _, c := range cases {
		if c.Category != "network_egress" && c.Category != "prompt_injection_exfil" {
			continue
		}
		text, _ := c.Arguments["command"].(string)
		if code, ok := c.Arguments["code"].(string); ok {
			text += code
		}
		raw := urlRE.FindString(text)
		if raw == "" {
			continue // not an HTTP request (raw sockets, DNS, files): the sandbox's cases
		}
		allow := []string{"pkgs.example.org", "files.example.org", "*.github.com"}
		if m := allowListRE.FindStringSubmatch(c.Why); m != nil {
			allow = strings.Split(m[1], ", ")
		}
		tl := e.tool(t, Options{Policy: e.policy(t, allow...)})
		t.Run(c.ID, func(t *testing.T) {
			if c.Expected != "deny" {
				t.Fatalf("%s expects %s", c.ID, c.Expected)
			}
			te := fails(t, call(t, tl, map[string]any{"url": raw}), tool.PermissionDenied)
			t.Logf("%s → %s", raw, te.Message)
			ran++
		})
	}
	if ran < 6 {
		t.Errorf("only %d corpus cases ran", ran)
	}
	if n := e.dns.AskedSuffix("attacker.example"); n != 0 {
		t.Errorf("attacker.example was looked up %d times", n)
	}
}
