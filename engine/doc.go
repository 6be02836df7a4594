// Package engine runs calls through toolgate's governed pipeline. Every call,
// whoever makes it (a provider adapter, an MCP client, the CLI), passes the
// same chain of stages, one per file, assembled in one place (New):
//
//	audit        one hash-chained record per call, allowed or not (outermost: it sees every outcome)
//	lookup       unknown tool → an error naming the closest registered tools
//	arguments    parse; safe schema-guided repairs; never run a malformed call as {}
//	validate     JSON Schema; every failing field listed
//	policy       mode + rules + level → allow, ask (an Approver decides) or deny;
//	             a tool may also ask for one call's approval (tool.NeedsApproval);
//	             after refusals in a row, a session's non-read calls stop (Options.Breaker)
//	limits       rate limits, concurrency, loop guard (Options.Limiter, e.g. policy.Limiter)
//	idempotency  a repeated key returns the recorded result (Options.Idempotency, e.g. store.Idempotency)
//	budget       redacts secrets, caps what goes back to the model, spills the rest to a file
//	run          timeout, cancellation, panic recovery, the tool itself
//
// Execute returns a tool.Result; a failure anywhere is a Result with a
// tool.Error, never a Go error or a panic. ExecuteAll runs a batch with
// bounded parallelism and returns the results in call order.
package engine
