package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestClientSnippets starts toolgate exactly as each stdio snippet of
// docs/mcp.md tells a client to (Claude Desktop, Cursor, VS Code: the same
// command and arguments, with the example paths and ${workspaceFolder}
// put on a real folder) and checks, with an MCP client, that the server
// answers initialize and lists the file tools. Over HTTP, it checks the
// snippets' URLs have the path toolgate serves.
func TestClientSnippets(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "mcp.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllSubmatch(doc, -1)
	type server struct {
		Type    string   `json:"type"`
		Command string   `json:"command"`
		Args    []string `json:"args"`
		URL     string   `json:"url"`
	}
	var stdio []server
	for _, b := range blocks {
		var cfg struct {
			MCPServers map[string]server `json:"mcpServers"` // Claude Desktop, Cursor
			Servers    map[string]server `json:"servers"`    // VS Code
		}
		if err := json.Unmarshal(b[1], &cfg); err != nil {
			t.Fatalf("a JSON snippet does not parse: %v\n%s", err, b[1])
		}
		for _, m := range []map[string]server{cfg.MCPServers, cfg.Servers} {
			for name, s := range m {
				if name != "toolgate" || s.Command != "toolgate" || s.Type != "" && s.Type != "stdio" {
					t.Errorf("snippet entry %q: %+v", name, s)
				}
				stdio = append(stdio, s)
			}
		}
	}
	if len(stdio) < 3 {
		t.Fatalf("%d stdio snippets in docs/mcp.md, want Claude Desktop, Cursor and VS Code", len(stdio))
	}
	for _, u := range regexp.MustCompile(`"url": "(http://[^"]+)"`).FindAllSubmatch(doc, -1) {
		if !strings.HasSuffix(string(u[1]), "/mcp") {
			t.Errorf("HTTP snippet %s: toolgate serves MCP at /mcp", u[1])
		}
	}

	ws := workspace(t)
	os.WriteFile(filepath.Join(ws, "README.md"), []byte("hello\n"), 0o644)
	policyFile := filepath.Join(filepath.Dir(ws), "policy.yaml")
	os.WriteFile(policyFile, []byte("mode: default\n"), 0o644)
	for _, s := range stdio {
		args := make([]string, len(s.Args))
		for i, a := range s.Args {
			switch {
			case a == "${workspaceFolder}" || strings.HasPrefix(a, "/Users/me/src/"):
				a = ws
			case strings.HasSuffix(a, "policy.yaml"):
				a = policyFile
			}
			args[i] = a
		}
		t.Run(strings.Join(s.Args, " "), func(t *testing.T) {
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "TOOLGATE_AUDIT="+filepath.Join(filepath.Dir(ws), "audit.jsonl"))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "snippet-test", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("toolgate %v: %v", args, err)
			}
			defer cs.Close()
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range res.Tools {
				names = append(names, tl.Name)
			}
			if !contains(names, "read_file") || !contains(names, "execute_command") {
				t.Fatalf("tools %v", names)
			}
			got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "README.md"}})
			if err != nil || got.IsError || !strings.Contains(text(got), "hello") {
				t.Fatalf("read_file through the snippet's server: %v %+v", err, got)
			}
		})
	}
}

// TestDeployPolicyChecks: the policy docs/deploy.md shows for replicas
// passes `toolgate policy check`, the probes it shows name the paths the
// HTTP server answers, and it deploys with the chart and the real images
// (deploy/helm's TestDeployDocValues renders its values).
func TestDeployPolicyChecks(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(# toolgate.yaml.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/deploy.md shows no policy (a yaml block starting with # toolgate.yaml)")
	}
	ws := workspace(t)
	pol := filepath.Join(ws, "toolgate.yaml")
	os.WriteFile(pol, m[1], 0o644)
	if r := toolgate(t, ws, "", "policy", "check", pol); r.code != 0 {
		t.Errorf("policy check of docs/deploy.md's policy: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"path: /readyz", "path: /healthz", "helm install toolgate deploy/helm/toolgate", "toolgate/toolgate-runner"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("docs/deploy.md lacks %q", want)
		}
	}
	if strings.Contains(string(doc), "registry.example.com") {
		t.Error("docs/deploy.md names an image nobody builds (registry.example.com): the images are toolgate/toolgate and toolgate/toolgate-runner, from make image")
	}
}
