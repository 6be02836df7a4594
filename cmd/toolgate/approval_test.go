package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeAsksByElicitation runs `toolgate serve` as a real process and a
// go-sdk client whose user answers the approval question: a level-2 call
// runs after "once", is refused after "deny" with the user's reason, and
// every decision is in the audit log with its approver.
func TestServeAsksByElicitation(t *testing.T) {
	ws := workspace(t)
	auditLog := filepath.Join(filepath.Dir(ws), "audit.jsonl")
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644)

	answers := make(chan *mcp.ElicitResult, 4)
	var asked []string
	c := mcp.NewClient(&mcp.Implementation{Name: "approver-test", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			return <-answers, nil
		},
	})
	cmd := exec.Command(bin, "serve", "--root", ws, "--audit", auditLog)
	cmd.Env = append(os.Environ(), "TOOLGATE_STATE="+filepath.Join(filepath.Dir(ws), "state"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	call := func() *mcp.CallToolResult {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_command", Arguments: map[string]any{"command": "cat a.txt"}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	answers <- &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}
	res := call()
	if res.IsError || !strings.Contains(text(res), "hello") {
		t.Fatalf("an approved command did not run: %s", text(res))
	}
	answers <- &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "deny", "reason": "not now"}}
	res = call()
	if !res.IsError || !strings.Contains(text(res), "not now") {
		t.Fatalf("a denied command: %s", text(res))
	}
	answers <- &mcp.ElicitResult{Action: "decline"}
	if res = call(); !res.IsError {
		t.Fatalf("a declined question let the call run: %s", text(res))
	}
	if len(asked) != 3 || !strings.Contains(asked[0], "execute_command") {
		t.Errorf("questions asked: %q", asked)
	}
	cs.Close()
	cmd.Wait()
	recs := readAudit(t, auditLog)
	var got []string
	for _, r := range recs {
		if r.Tool == "execute_command" {
			got = append(got, r.Decision+"/"+r.Approver+"/"+r.Outcome)
		}
	}
	want := []string{"allow/elicitation/ok", "deny/elicitation/denied", "deny/elicitation/denied"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("audit decisions = %v, want %v", got, want)
	}
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestYesDoesNotCoverDangerous checks that --yes approves what the policy
// asks about but not a command the dangerous-command check flags, which
// needs --allow-dangerous as well.
func TestYesDoesNotCoverDangerous(t *testing.T) {
	ws := workspace(t)
	os.WriteFile(filepath.Join(ws, "keep.txt"), []byte("work\n"), 0o644)
	dangerous := `{"language":"python","code":"import shutil; shutil.rmtree('.', ignore_errors=True)"}`
	r := toolgate(t, ws, "", "call", "run_code", dangerous, "--yes")
	o := parseCall(t, r)
	if r.code != 1 || o.Error == nil || o.Error.Type != "approval_denied" || !strings.Contains(o.Error.Message, "--allow-dangerous") {
		t.Fatalf("--yes alone: exit %d, %+v", r.code, o.Error)
	}
	if _, err := os.Stat(filepath.Join(ws, "keep.txt")); err != nil {
		t.Fatalf("the workspace lost a file: %v", err)
	}
	if r := toolgate(t, ws, "", "call", "execute_command", `{"command":"echo hi"}`, "--yes"); r.code != 0 {
		t.Fatalf("an ordinary command with --yes: exit %d %s", r.code, r.stdout)
	}
	if r := toolgate(t, ws, "", "call", "run_code", dangerous, "--allow-dangerous"); r.code != 2 || !strings.Contains(r.stderr, "--yes") {
		t.Fatalf("--allow-dangerous alone: exit %d %s", r.code, r.stderr)
	}
	r = toolgate(t, ws, "", "call", "run_code", dangerous, "--yes", "--allow-dangerous")
	if o := parseCall(t, r); r.code != 0 || o.IsError {
		t.Fatalf("--yes --allow-dangerous: exit %d %+v", r.code, o.Error)
	}
	if _, err := os.Stat(filepath.Join(ws, "keep.txt")); !os.IsNotExist(err) {
		t.Fatalf("the approved program did not run: %v", err)
	}
}
