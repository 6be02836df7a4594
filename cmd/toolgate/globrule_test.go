package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/redistest"
)

// globPolicy is the policy of issue 25: a specific limit beside "*", and
// a glob beside "*", so that "*" shadows them if the rule is wrong.
const globPolicy = `limits:
  tools:
    read_file: {per_second: 0.001, burst: 3}
    "*_directory": {per_second: 0.001, burst: 1}
    "*": {per_second: 1000, burst: 1000}
  loop: {off: true}
`

// TestGlobRuleThroughServe: through a real serve --http, one replica and
// two sharing a real redis-server, read_file gets 3 calls however many
// replicas answer, list_directory 1 (its glob beats "*"), and every other
// tool falls to "*".
func TestGlobRuleThroughServe(t *testing.T) {
	for _, replicas := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d replicas", replicas), func(t *testing.T) {
			root, _ := serveWorkspace(t)
			src := globPolicy
			if replicas > 1 {
				srv := redistest.Start(t)
				src += fmt.Sprintf("state:\n  redis:\n    url: %s\n", srv.URL())
			}
			pol := filepath.Join(t.TempDir(), "toolgate.yaml")
			if err := os.WriteFile(pol, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var sessions []*mcp.ClientSession
			for range replicas {
				u := startHTTP(t, "serve", "--root", root, "--policy", pol, "--audit", "off", "--http", "127.0.0.1:0")
				c := mcp.NewClient(&mcp.Implementation{Name: "glob-test", Version: "1"}, nil)
				cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u}, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
				sessions = append(sessions, cs)
			}
			count := func(name string, n int, args func(i int) map[string]any) (ran, limited int) {
				for i := range n {
					ctx, cancel := context.WithTimeout(ctx, time.Minute)
					res, err := sessions[i%len(sessions)].CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args(i)})
					cancel()
					switch {
					case err != nil:
						t.Fatalf("%s: %v", name, err)
					case !res.IsError:
						ran++
					case strings.Contains(text(res), "rate_limited"):
						limited++
					default:
						t.Fatalf("%s: %s", name, text(res))
					}
				}
				return ran, limited
			}
			if ran, limited := count("read_file", 6, func(i int) map[string]any { return map[string]any{"path": "a.txt", "limit": i + 1} }); ran != 3 || limited != 3 {
				t.Errorf("read_file: %d ran, %d rate limited; want 3 and 3 (its own limit, not \"*\")", ran, limited)
			}
			if ran, limited := count("list_directory", 3, func(i int) map[string]any { return map[string]any{"path": ".", "depth": i + 1} }); ran != 1 || limited != 2 {
				t.Errorf("list_directory: %d ran, %d rate limited; want 1 and 2 (\"*_directory\", not \"*\")", ran, limited)
			}
			if ran, _ := count("get_file_info", 8, func(i int) map[string]any { return map[string]any{"path": "a.txt"} }); ran != 8 {
				t.Errorf("get_file_info: %d of 8 ran; \"*\" allows 1000 at once", ran)
			}
		})
	}
}
