package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestApprovalsHTTPOnStdio: serve and proxy over stdio (no listener of
// their own) with approvals.http start the console's approvals page and
// its API alone on that address. A call the client cannot be asked about
// (no elicitation) is listed at /api/pending as before and on the page at
// / (now /ui/), runs once approved through /api/decide with the printed
// token (confirming a level-3 call by its name), and the audit log names the approver "http"; the other console
// pages are not served there.
func TestApprovalsHTTPOnStdio(t *testing.T) {
	root, _ := serveWorkspace(t)
	upstreamPolicy := filepath.Join(t.TempDir(), "upstream.yaml") // the gateway asks; its upstream runs what it is sent
	if err := os.WriteFile(upstreamPolicy, []byte("mode: bypass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"serve", []string{"serve", "--root", root}},
		// Unboxed: the upstream's execute_command needs a sandbox of its own,
		// which a box (seccomp refuses new namespaces) does not give; the
		// subject here is the approval page, not the box (box_test.go).
		{"proxy", []string{"proxy", "--unisolated", "--", bin, "serve", "--root", root, "--audit", "off", "--policy", upstreamPolicy}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			pol := filepath.Join(dir, "policy.yaml")
			if err := os.WriteFile(pol, []byte("approvals:\n  http: "+addr+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			auditLog := filepath.Join(dir, "audit.jsonl")
			args := append([]string{tc.args[0], "--policy", pol, "--audit", auditLog}, tc.args[1:]...)
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "TOOLGATE_STATE="+filepath.Join(dir, "state"))
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			tokens := make(chan string, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "stdio-approvals-test", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			go func() {
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					if m := tokenRE.FindStringSubmatch(sc.Text()); m != nil {
						tokens <- m[1]
					}
				}
				io.Copy(io.Discard, stderr)
			}()
			var token string
			select {
			case token = <-tokens:
			case <-ctx.Done():
				t.Fatal("no approval page address and token was printed")
			}

			name := ""
			for tl, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				if strings.HasSuffix(tl.Name, "execute_command") {
					name = tl.Name
				}
			}
			got := make(chan *mcp.CallToolResult, 1)
			go func() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"command": "cat a.txt"}})
				if err != nil {
					t.Error(err)
				}
				got <- res
			}()
			var pending []struct{ ID, Tool string }
			for len(pending) == 0 && ctx.Err() == nil && len(got) == 0 {
				time.Sleep(20 * time.Millisecond)
				resp, err := http.Get("http://" + addr + "/api/pending")
				if err != nil {
					t.Fatal(err)
				}
				json.NewDecoder(resp.Body).Decode(&pending)
				resp.Body.Close()
			}
			if len(pending) != 1 || pending[0].Tool != name {
				t.Fatalf("pending: %+v", pending)
			}
			// the page: / leads to the console's approvals page, which lists the call
			resp, err := http.Get("http://" + addr + "/")
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.Request.URL.Path != "/ui/" || !strings.Contains(string(page), `data-id="`+pending[0].ID+`"`) {
				t.Errorf("the page at %s: %s\n%s", resp.Request.URL, resp.Status, page)
			}
			if resp, err := http.Get("http://" + addr + "/ui/audit"); err != nil || resp.StatusCode != http.StatusNotFound {
				t.Errorf("the audit page on approvals.http: %v %v", resp.Status, err)
			}
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/decide", strings.NewReader(fmt.Sprintf(`{"id":%q,"decision":"once","confirm":%q}`, pending[0].ID, name)))
			req.Header.Set("X-Toolgate-Token", token)
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("deciding: %s", resp.Status)
			}
			if res := <-got; res == nil || res.IsError || !strings.Contains(text(res), "hello from toolgate") {
				t.Fatalf("the approved call: %+v", res)
			}
			cs.Close()
			cmd.Wait()
			var approvers []string
			for _, r := range readAudit(t, auditLog) {
				if r.Tool == name {
					approvers = append(approvers, r.Decision+"/"+r.Approver)
				}
			}
			if strings.Join(approvers, " ") != "allow/http" {
				t.Errorf("audit: %v", approvers)
			}
		})
	}
}
