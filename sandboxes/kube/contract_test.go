package kube

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/runner"
	"github.com/toolgate/toolgate/sandboxes"
)

// bearer adds sandbox id's token, as the gateway does.
type bearer struct {
	id   string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+runner.Token([]byte(testSecret), b.id))
	return b.next.RoundTrip(r)
}

// session connects an MCP client to a sandbox's endpoint.
func session(t *testing.T, ctx context.Context, endpoint string, hc *http.Client) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "kube-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", endpoint, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and returns its text and whether it failed.
func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// contract is what every sandboxes.Backend owes the gateway, checked
// through real runners: Ensure makes a sandbox once and says so, answers
// with an endpoint where the sandbox's workspace lives; a second Ensure
// reaches the same workspace; another id has another; racing Ensures of
// one id make one; Count counts; Delete removes (twice is fine) and the
// next Ensure makes a new, empty workspace. client gives the HTTP client
// reaching sandbox id (its token added).
func contract(t *testing.T, ctx context.Context, b sandboxes.Backend, client func(id string) *http.Client) {
	t.Helper()
	const a, other, raced = "sb-contract-a", "sb-contract-b", "sb-contract-c"
	ep, created, err := b.Ensure(ctx, a)
	if err != nil || !created {
		t.Fatalf("Ensure(%s) = %q, %v, %v; want an endpoint, created", a, ep, created, err)
	}
	if !strings.HasSuffix(ep, "/sandboxes/"+a+"/mcp") {
		t.Errorf("endpoint %q does not end in /sandboxes/%s/mcp", ep, a)
	}
	sa := session(t, ctx, ep, client(a))
	if text, failed := call(t, ctx, sa, "write_file", map[string]any{"path": "notes.txt", "content": "hello from a\n"}); failed {
		t.Fatalf("write_file: %s", text)
	}
	if text, failed := call(t, ctx, sa, "execute_command", map[string]any{"command": "cat notes.txt"}); failed || !strings.Contains(text, "hello from a") {
		t.Errorf("execute_command cat: %s (failed %v)", text, failed)
	}

	again, created, err := b.Ensure(ctx, a)
	if err != nil || created || again != ep {
		t.Fatalf("second Ensure(%s) = %q, %v, %v; want %q, not created", a, again, created, err, ep)
	}
	if text, failed := call(t, ctx, session(t, ctx, again, client(a)), "read_file", map[string]any{"path": "notes.txt"}); failed || !strings.Contains(text, "hello from a") {
		t.Errorf("read_file through a second session: %s (failed %v)", text, failed)
	}

	epb, created, err := b.Ensure(ctx, other)
	if err != nil || !created || epb == ep {
		t.Fatalf("Ensure(%s) = %q, %v, %v; want another endpoint, created", other, epb, created, err)
	}
	if text, failed := call(t, ctx, session(t, ctx, epb, client(other)), "read_file", map[string]any{"path": "notes.txt"}); !failed {
		t.Errorf("sandbox %s reads %s's file: %s", other, a, text)
	}
	// a's token does not open b.
	if resp, err := client(a).Post(epb, "application/json", strings.NewReader(`{}`)); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a's token on b's endpoint: %v %v; want 401", resp, err)
	}

	var wg sync.WaitGroup
	eps := make([]string, 8)
	made := make([]bool, 8)
	errs := make([]error, 8)
	for i := range eps {
		wg.Add(1)
		go func() { defer wg.Done(); eps[i], made[i], errs[i] = b.Ensure(ctx, raced) }()
	}
	wg.Wait()
	n := 0
	for i := range eps {
		if errs[i] != nil || eps[i] != eps[0] {
			t.Errorf("racing Ensure %d = %q, %v; want %q", i, eps[i], errs[i], eps[0])
		}
		if made[i] {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d of 8 racing Ensures say they created %s; want exactly 1", n, raced)
	}
	if c, err := b.Count(ctx); err != nil || c != 3 {
		t.Errorf("Count = %d, %v; want 3", c, err)
	}

	if err := b.Delete(ctx, a); err != nil {
		t.Fatalf("Delete(%s): %v", a, err)
	}
	if err := b.Delete(ctx, a); err != nil {
		t.Errorf("Delete(%s) again: %v; deleting what is gone is not an error", a, err)
	}
	if c, err := b.Count(ctx); err != nil || c != 2 {
		t.Errorf("Count after Delete = %d, %v; want 2", c, err)
	}
	ep, created, err = b.Ensure(ctx, a)
	if err != nil || !created {
		t.Fatalf("Ensure(%s) after Delete = %q, %v, %v; want created anew", a, ep, created, err)
	}
	if text, failed := call(t, ctx, session(t, ctx, ep, client(a)), "read_file", map[string]any{"path": "notes.txt"}); !failed {
		t.Errorf("the sandbox made anew still has the old workspace: %s", text)
	}
}
