package mcpserver

import (
	"context"
	"crypto/rand"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/tool"
)

// From protocol revision 2026-07-28 a server may not send the client a
// request while it serves a call (a stateless server never can): it ends
// the call with input requests and an opaque requestState, and the client
// calls again with the answers and the state echoed. A call's approval
// travels this way: an approver that cannot ask during the call returns a
// tool.Error of type input_required whose Details carry the question
// (InputMessage, InputSchema) and the sealed state (InputState); callTool
// turns it into the input request InputID, and hands the retried call's
// answer to the approver through the context (InputAnswerFromContext).

// Details keys of an input_required error, and the id of its input
// request.
const (
	InputMessage = "message"
	InputSchema  = "requested_schema"
	InputState   = "request_state"
	InputID      = "toolgate/approval"
)

// InputAnswer is a retried call's answer to the approval question.
type InputAnswer struct {
	State   string         // the requestState echoed
	Action  string         // accept, decline or cancel ("" : no answer to InputID came)
	Content map[string]any // the form, on accept
}

// inputCall is what callTool learnt of a call's input requests.
type inputCall struct {
	takes    bool // the client takes elicitation input requests
	answer   InputAnswer
	answered bool // the call is a retry carrying a state or answers
}

// InputAnswerFromContext returns the answer the call running in ctx
// carries, if it carries a requestState or input responses.
func InputAnswerFromContext(ctx context.Context) (InputAnswer, bool) {
	if ci := callInfoFrom(ctx); ci != nil {
		return ci.input.answer, ci.input.answered
	}
	return InputAnswer{}, false
}

// TakesInputRequests reports whether the client of the call running in ctx
// takes input requests (protocol 2026-07-28 or later) and answers
// elicitation ones (it declared the capability with the call).
func TakesInputRequests(ctx context.Context) bool {
	ci := callInfoFrom(ctx)
	return ci != nil && ci.input.takes
}

// inputOf returns what the call's client takes and answered.
func inputOf(ss *mcp.ServerSession, p *mcp.CallToolParamsRaw) inputCall {
	var c inputCall
	if ip := ss.InitializeParams(); ip == nil || ip.ProtocolVersion >= "2026-07-28" {
		caps, _ := p.GetMeta()[mcp.MetaKeyClientCapabilities].(map[string]any)
		_, c.takes = caps["elicitation"]
	}
	if p.RequestState != "" || len(p.InputResponses) > 0 {
		c.answered, c.answer.State = true, p.RequestState
		if r, ok := p.InputResponses[InputID].(*mcp.ElicitResult); ok && r != nil {
			c.answer.Action, c.answer.Content = r.Action, r.Content
		}
	}
	return c
}

// inputRequired renders an input_required error as the input request it
// stands for, or nil when it is not one.
func inputRequired(e *tool.Error) *mcp.CallToolResult {
	if e == nil || e.Type != tool.InputRequired {
		return nil
	}
	msg, _ := e.Details[InputMessage].(string)
	schema, _ := e.Details[InputSchema].(map[string]any)
	state, _ := e.Details[InputState].(string)
	if state == "" || schema == nil {
		return nil
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{InputID: &mcp.ElicitParams{Message: msg, RequestedSchema: schema}},
		RequestState:  state,
	}
}

// SignInURL is the Details key of an auth_required error that names the
// web page where the caller signs in (an upstream's OAuth sign-in in the
// console).
const SignInURL = "sign_in_url"

// urlElicitation renders an auth_required error that names a sign-in
// page as the URL-mode elicitation the MCP specification gives for it
// (URLElicitationRequiredError, -32042), when the session's client takes
// one: protocol 2025-11-25, elicitation.url declared. Otherwise nil: the
// error goes as a tool result, the page in its details (from 2026-07-28
// the error is gone; a URL input request would be its successor).
func urlElicitation(ss *mcp.ServerSession, e *tool.Error) error {
	if e == nil || e.Type != tool.AuthRequired {
		return nil
	}
	page, _ := e.Details[SignInURL].(string)
	ip := ss.InitializeParams()
	if page == "" || ip == nil || ip.ProtocolVersion != "2025-11-25" || ip.Capabilities == nil ||
		ip.Capabilities.Elicitation == nil || ip.Capabilities.Elicitation.URL == nil {
		return nil
	}
	msg := e.Message
	if e.Suggestion != "" {
		msg += "; " + e.Suggestion
	}
	return mcp.URLElicitationRequiredError([]*mcp.ElicitParams{{Mode: "url", URL: page, ElicitationID: rand.Text(), Message: msg}})
}
