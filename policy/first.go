package policy

import (
	"context"
	"errors"
)

// FirstAnswer asks every approver at once and takes the first answer:
// the user of the MCP client and the people at a console, say. The others
// are then withdrawn (their contexts cancelled: a question leaves a queue,
// an elicitation is cancelled). An approver that fails (no one it can ask,
// an unreachable queue) gives no answer; when all fail, the last error is
// returned, with its Approval.
func FirstAnswer(approvers ...Approver) Approver {
	return ApproverFunc(func(ctx context.Context, req Request) (Approval, error) {
		if len(approvers) == 0 {
			return Approval{Reason: "no one can be asked"}, errors.New("policy: FirstAnswer of no approvers")
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type reply struct {
			a   Approval
			err error
		}
		replies := make(chan reply, len(approvers))
		for _, ap := range approvers {
			go func() {
				a, err := ap.Approve(ctx, req)
				replies <- reply{a, err}
			}()
		}
		var last reply
		for range approvers {
			r := <-replies
			if r.err == nil {
				return r.a, nil // the others end with ctx
			}
			last = r
		}
		return last.a, last.err
	})
}
