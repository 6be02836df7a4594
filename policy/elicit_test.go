package policy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/policy"
)

// TestElicitationWithTheGoSDK asks through a real MCP session: a server
// tool approves through policy.Elicitation backed by the session's Elicit
// (protocol 2025-11-25), and the go-sdk client answers as its user would.
func TestElicitationWithTheGoSDK(t *testing.T) {
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	var answer map[string]any
	var shown string
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v0"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			shown = req.Params.Message
			if answer == nil {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: answer}, nil
		},
	})
	server := mcp.NewServer(&mcp.Implementation{Name: "server", Version: "v0"}, nil)
	var got policy.Approval
	type in struct {
		Level int `json:"level"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "guarded"}, func(ctx context.Context, req *mcp.CallToolRequest, args in) (*mcp.CallToolResult, any, error) {
		e := policy.Elicitation{Elicit: func(ctx context.Context, message string, schema map[string]any) (string, map[string]any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: message, RequestedSchema: schema})
			if err != nil {
				return "", nil, err
			}
			return res.Action, res.Content, nil
		}}
		r := askReq(defGH, `{"title":"from the model"}`, "s")
		if args.Level == 3 {
			r = askReq(defDel, `{"path":"x"}`, "s")
		}
		var err error
		got, err = e.Approve(ctx, r)
		if err != nil {
			t.Errorf("approve: %v", err)
		}
		return &mcp.CallToolResult{}, nil, nil
	})
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	call := func(level int) {
		t.Helper()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "guarded", Arguments: map[string]any{"level": level}}); err != nil {
			t.Fatal(err)
		}
	}
	answer = map[string]any{"decision": "session"}
	call(2)
	if !got.Approved || got.Scope != policy.Session || got.Approver != "elicitation" || !strings.Contains(shown, "from the model") {
		t.Errorf("session: %+v, shown %q", got, shown)
	}
	answer = map[string]any{"decision": "deny", "reason": "not today"}
	call(2)
	if got.Approved || got.Reason != "not today" {
		t.Errorf("deny: %+v", got)
	}
	answer = nil
	call(2)
	if got.Approved || got.Reason != "the user declined" {
		t.Errorf("decline: %+v", got)
	}
	answer = map[string]any{"decision": "once", "confirm": "delete_file"}
	call(3)
	if !got.Approved || got.Scope != policy.Once {
		t.Errorf("level 3 confirmed: %+v", got)
	}
	answer = map[string]any{"decision": "once"}
	call(3)
	if got.Approved {
		t.Errorf("level 3 unconfirmed: %+v", got)
	}
}

// TestElicitationMultiRoundTrip is the 2026-07-28 flow: the tool ends the
// call with an input request built by ElicitationForm, the go-sdk client
// answers and calls again, and ElicitationAnswer reads the answer.
func TestElicitationMultiRoundTrip(t *testing.T) {
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v0"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once", "confirm": "delete_file"}}, nil
		},
	})
	server := mcp.NewServer(&mcp.Implementation{Name: "server", Version: "v0"}, nil)
	r := askReq(defDel, `{"path":"x"}`, "s")
	var got policy.Approval
	mcp.AddTool(server, &mcp.Tool{Name: "guarded"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if len(req.Params.InputResponses) == 0 {
			msg, schema := policy.ElicitationForm(r)
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"approval": &mcp.ElicitParams{Message: msg, RequestedSchema: schema}}}, nil, nil
		}
		res, _ := req.Params.InputResponses["approval"].(*mcp.ElicitResult)
		if res == nil {
			t.Fatalf("no answer: %+v", req.Params.InputResponses)
		}
		got = policy.ElicitationAnswer(r, res.Action, res.Content)
		return &mcp.CallToolResult{}, nil, nil
	})
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "guarded"}); err != nil {
		t.Fatal(err)
	}
	if !got.Approved || got.Scope != policy.Once || got.Approver != "elicitation" {
		t.Errorf("multi round trip: %+v", got)
	}
}
