package policy

import (
	"context"
	"errors"
	"slices"
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
// A call asked twice (by the policy, then by the tool itself, as for a
// dangerous command) takes two rounds of questions: the second state
// carries the first approval, so the third call runs without asking the
// first question again. While the OnceStore cannot be reached an answer
// cannot be checked and the call is unavailable.
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
	q := question(req)
	var approved []string // the questions of this call approved in earlier rounds
	if state, action, content, ok := in.Answer(ctx); ok {
		asked, err := in.Sealer.Read(state, req.Call)
		switch {
		case err != nil:
			return refusedState(err)
		case slices.Contains(asked.Approved, q):
			return Approval{Approved: true, Approver: who, Scope: Once, Reason: "approved in an earlier round of this call"}, nil
		case asked.Question == q:
			if _, err := in.Sealer.Open(ctx, state, req.Call, in.Once); err != nil {
				return refusedState(err)
			}
			a := ElicitationAnswer(req, action, content)
			a.Approver = who
			return a, nil
		}
		// Another question of the same call, after the one the state
		// answered (which was approved, or the call would have ended).
		approved = append(slices.Clone(asked.Approved), asked.Question)
	}
	msg, schema := ElicitationForm(req)
	state, err := in.Sealer.Seal(req.Call, Asked{Question: q, Approved: approved})
	if err != nil {
		return Approval{Approver: who}, err
	}
	return Approval{Approver: who}, tool.Errorf(tool.InputRequired, "the call waits for the user's answer").
		WithDetail(in.MessageKey, msg).WithDetail(in.SchemaKey, schema).WithDetail(in.StateKey, state)
}

// question names what req asks within its call: the policy's question, or
// the tool's own (a dangerous command).
func question(req Request) string {
	if req.Decision.ToolAsked {
		return "tool"
	}
	return "policy"
}

// refusedState is the answer to a state Read or Open refused: a denial
// that says why, or unavailable when the once store cannot be reached.
func refusedState(err error) (Approval, error) {
	const who = "input request"
	for _, refused := range []error{ErrStateInvalid, ErrStateExpired, ErrStateMismatch, ErrStateUsed} {
		if errors.Is(err, refused) {
			return Approval{Approver: who, Reason: refused.Error()}, nil
		}
	}
	return Approval{Approver: who}, tool.Errorf(tool.Unavailable, "the answer to the approval cannot be checked: %v", err).
		WithRetry(time.Second).WithSuggestion("retry in a moment; the call was not run")
}
