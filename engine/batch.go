package engine

import (
	"context"
	"sync"

	"github.com/toolgate/toolgate/tool"
)

// ExecuteAll runs calls concurrently, at most Options.Parallelism at a time,
// and returns their results in call order. One call's failure never affects
// another; cancelling ctx reaches every running call, and calls that had not
// started yet are recorded as cancelled without running.
func (e *Engine) ExecuteAll(ctx context.Context, calls []tool.Call) []tool.Result {
	results := make([]tool.Result, len(calls))
	sem := make(chan struct{}, e.opts.Parallelism)
	var wg sync.WaitGroup
	for i, c := range calls {
		select {
		case sem <- struct{}{}:
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				results[i] = e.Execute(ctx, c)
			}()
		case <-ctx.Done():
			// Cancelled before it could start: it still goes through the
			// chain (and so the audit log), but the tool does not run.
			results[i] = e.Execute(ctx, c)
		}
	}
	wg.Wait()
	return results
}
