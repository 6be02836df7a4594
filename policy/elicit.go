package policy

import (
	"context"
	"fmt"
	"strings"
)

// ElicitFunc asks the user of an MCP client: message is shown, schema is
// the flat JSON Schema of the form. It returns the client's action
// ("accept", "decline" or "cancel") and, on accept, the form's content. An
// MCP server passes a function that calls its session's Elicit, so this
// package needs no MCP library.
type ElicitFunc func(ctx context.Context, message string, schema map[string]any) (action string, content map[string]any, err error)

// Elicitation asks the user of the MCP client that made the call, through
// MCP elicitation (use it when the client declared the capability). The
// form has a "decision" (once, session, always when the request offers
// always rules, deny), a "reason" for a denial, and for a level-3 call a
// "confirm" field in which the tool's name or "yes" must be typed.
//
// Approve suits protocol versions up to 2025-11-25, where a server may send
// elicitation/create while it serves the call. From 2026-07-28 on, a server
// instead ends the call with an input request and the client calls again
// with the answer: build the input request with ElicitationForm and turn
// the answer into an Approval with ElicitationAnswer.
type Elicitation struct {
	Elicit ElicitFunc
}

// Approve asks through the client.
func (e Elicitation) Approve(ctx context.Context, req Request) (Approval, error) {
	if e.Elicit == nil {
		return Approval{Approver: "elicitation"}, fmt.Errorf("policy: Elicitation has no Elicit function")
	}
	msg, schema := ElicitationForm(req)
	action, content, err := e.Elicit(ctx, msg, schema)
	if err != nil {
		return Approval{Approver: "elicitation"}, fmt.Errorf("policy: elicitation: %w", err)
	}
	return ElicitationAnswer(req, action, content), nil
}

func elicitChoices(req Request) []any {
	if req.Decision.Confirm {
		return []any{"once", "deny"}
	}
	choices := []any{"once", "session"}
	if len(req.AlwaysRules) > 0 {
		choices = append(choices, "always")
	}
	return append(choices, "deny")
}

// ElicitationForm returns the message and the form schema that ask a human
// about req.
func ElicitationForm(req Request) (message string, schema map[string]any) {
	d := req.Decision
	var msg strings.Builder
	fmt.Fprintf(&msg, "Allow the tool call %s (level %d)?\n", req.Call.Name, d.Level)
	if authenticated(req.Call) {
		fmt.Fprintf(&msg, "Caller: %s (%s)\n", safeText(req.Call.Principal), req.Call.Auth.Kind)
	}
	fmt.Fprintf(&msg, "Why you are asked: %s [%s]\n", d.Reason, d.Rule)
	fmt.Fprintf(&msg, "Arguments:\n%s\n", prettyArgs(req.Call.Args, 2000))
	if len(req.AlwaysRules) > 0 && !d.Confirm {
		fmt.Fprintf(&msg, "\"always\" adds to the policy file: %s\n", strings.Join(req.AlwaysRules, ", "))
	}
	props := map[string]any{
		"decision": map[string]any{"type": "string", "title": "Decision", "enum": elicitChoices(req),
			"description": "once: this call; session: this same call again in this session; always: write the allow rule; deny: refuse"},
		"reason": map[string]any{"type": "string", "title": "Reason", "description": "for a denial: what the model should do instead"},
	}
	if d.Confirm {
		fmt.Fprintf(&msg, "This is a level-3 (high-risk) call: type %q or \"yes\" in Confirm to run it.\n", req.Call.Name)
		props["confirm"] = map[string]any{"type": "string", "title": "Confirm", "description": fmt.Sprintf("type %s or yes", req.Call.Name)}
	}
	return msg.String(), map[string]any{"type": "object", "properties": props, "required": []any{"decision"}}
}

// ElicitationAnswer turns the client's answer to ElicitationForm's form into
// an Approval.
func ElicitationAnswer(req Request, action string, content map[string]any) Approval {
	const who = "elicitation"
	switch action {
	case "accept":
	case "decline":
		return Approval{Approver: who, Reason: "the user declined"}
	default:
		return Approval{Approver: who, Reason: "the user dismissed the question"}
	}
	decision, _ := content["decision"].(string)
	reason, _ := content["reason"].(string)
	offered := false
	for _, c := range elicitChoices(req) {
		offered = offered || c == decision
	}
	if !offered {
		return Approval{Approver: who, Reason: fmt.Sprintf("the answer %q was not one of the choices offered", decision)}
	}
	if decision == "deny" {
		return Approval{Approver: who, Reason: reason}
	}
	if req.Decision.Confirm {
		c, _ := content["confirm"].(string)
		if c = strings.TrimSpace(c); c != req.Call.Name && c != "yes" {
			return Approval{Approver: who, Reason: "the user did not confirm this level-3 call"}
		}
	}
	return Approval{Approved: true, Approver: who, Scope: Scope(decision)}
}
