package policy

import (
	"context"

	"github.com/toolgate/toolgate/tool"
)

// Request is what an Approver is asked to decide.
type Request struct {
	Call       tool.Call
	Definition tool.Definition
	Decision   Decision // Effect is Ask; Confirm asks for an explicit second confirmation
}

// Scope is how long an approval holds.
type Scope string

const (
	Once    Scope = "once"
	Session Scope = "session"
	Always  Scope = "always"
)

// Approval is an Approver's answer.
type Approval struct {
	Approved bool
	Approver string // who decided, for the audit log ("terminal", "cli --yes", "elicitation", …)
	Scope    Scope
	Reason   string // a denial's reason goes back to the model
}

// Approver decides calls the policy asks about. It must honour ctx: a
// cancelled or expired context is a denial.
type Approver interface {
	Approve(ctx context.Context, req Request) (Approval, error)
}

// ApproverFunc adapts a function to Approver (the callback for library users).
type ApproverFunc func(ctx context.Context, req Request) (Approval, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req Request) (Approval, error) { return f(ctx, req) }

// ApproveAll approves every request once, naming who stands behind it (e.g.
// "cli --yes"). It is for callers that have already asked their human.
func ApproveAll(who string) Approver {
	return ApproverFunc(func(context.Context, Request) (Approval, error) {
		return Approval{Approved: true, Approver: who, Scope: Once}, nil
	})
}
