package engine

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/toolgate/toolgate/tool"
)

// run calls the tool with a deadline. A panic becomes an internal error (the
// stack goes to the log, not to the model); a tool that ignores its context
// is abandoned at the deadline and its late result discarded.
func (e *Engine) run(ctx context.Context, p *pending) tool.Result {
	if err := ctx.Err(); err != nil {
		te := tool.AsError(err)
		te.Message = fmt.Sprintf("%s was not started: %v", p.def.Name, err)
		return tool.ErrorResult(te)
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	done := make(chan tool.Result, 1)
	go func() { done <- e.invoke(ctx, p) }()
	select {
	case res := <-done:
		return res
	case <-ctx.Done():
		err := tool.AsError(ctx.Err())
		err.Message = fmt.Sprintf("%s did not finish: %v", p.def.Name, ctx.Err())
		if ctx.Err() == context.DeadlineExceeded {
			err.Message = fmt.Sprintf("%s did not finish within %s", p.def.Name, e.opts.Timeout)
		}
		return tool.ErrorResult(err)
	}
}

func (e *Engine) invoke(ctx context.Context, p *pending) (res tool.Result) {
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("tool panicked", "tool", p.def.Name, "call", p.call.ID, "panic", r, "stack", string(debug.Stack()))
			res = tool.ErrorResult(tool.Errorf(tool.Internal, "%s failed unexpectedly (it panicked: %v)", p.def.Name, r).
				WithSuggestion("this is a bug in the tool, not in your call; try another way to reach the goal"))
		}
	}()
	res, err := p.tool.Run(ctx, p.call)
	if err != nil {
		te := tool.AsError(err)
		if ctx.Err() != nil && te.Type == tool.Internal {
			te = tool.AsError(ctx.Err())
		}
		return tool.ErrorResult(te)
	}
	if res.Error != nil && len(res.Content) == 0 {
		res.Content = []tool.Content{tool.TextContent(res.Error.Text())}
	}
	return res
}
