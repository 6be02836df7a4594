package policy

import (
	"context"
	"errors"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// InputRequests asks the user of an MCP client of protocol 2026-07-28 or
// later, which takes a question as the answer to its call and calls again
// with the user's answer: the way to ask without a session (stateless
// HTTP, any replica answering the retry). Approve, without an answer,
// returns a tool.Error of type input_required whose Details carry the
// question (ElicitationForm's message and schema, under the keys the MCP
// server names) and the sealed state; with the retried call's answer
// (Answer), it opens the state for this very call, once, and reads the
// answer as Elicitation does.
//
// One answer answers one question: a call asked twice (by the policy, then
// by the tool itself, as for a dangerous command) finds its state used by
// the first and is refused, saying so. While the OnceStore cannot be
// reached an answer cannot be checked and the call is unavailable.
type InputRequests struct {
	Sealer *StateSealer
	Once   OnceStore
	// Answer returns the retried call's answer in ctx: the echoed state,
	// the user's action and form; ok is false on a first call.
	Answer func(ctx context.Context) (state, action string, content map[string]any, ok bool)
	// Keys name the Details of the input_required error: the message, the
	// form's schema and the state.
	MessageKey, SchemaKey, StateKey string
}

// Approve asks, or reads the answer.
func (in InputRequests) Approve(ctx context.Context, req Request) (Approval, error) {
	const who = "input request"
	if state, action, content, ok := in.Answer(ctx); ok {
		err := in.Sealer.Open(ctx, state, req.Call, in.Once)
		for _, refused := range []error{ErrStateInvalid, ErrStateExpired, ErrStateMismatch, ErrStateUsed} {
			if errors.Is(err, refused) {
				return Approval{Approver: who, Reason: refused.Error()}, nil
			}
		}
		if err != nil {
			return Approval{Approver: who}, tool.Errorf(tool.Unavailable, "the answer to the approval cannot be checked: %v", err).
				WithRetry(time.Second).WithSuggestion("retry in a moment; the call was not run")
		}
		a := ElicitationAnswer(req, action, content)
		a.Approver = who
		return a, nil
	}
	msg, schema := ElicitationForm(req)
	state, err := in.Sealer.Seal(req.Call)
	if err != nil {
		return Approval{Approver: who}, err
	}
	return Approval{Approver: who}, tool.Errorf(tool.InputRequired, "the call waits for the user's answer").
		WithDetail(in.MessageKey, msg).WithDetail(in.SchemaKey, schema).WithDetail(in.StateKey, state)
}
