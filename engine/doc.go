// Package engine runs calls through toolgate's governed pipeline. Every call,
// whoever makes it (a provider adapter, an MCP client, the CLI), passes the
// same chain of stages, one per file, assembled in one place (New):
//
//	observe      an execute_tool span and the call counters (Options.TracerProvider, MeterProvider; telemetry.go)
//	audit        one hash-chained record per call, allowed or not (it sees every outcome)
//	lookup       unknown tool → an error naming the closest registered tools
//	arguments    parse; safe schema-guided repairs; never run a malformed call as {}
//	validate     JSON Schema; every failing field listed
//	policy       mode + rules + level → allow, ask (an Approver decides) or deny;
//	             a tool may also ask for one call's approval (tool.NeedsApproval);
//	             after refusals in a row, a session's non-read calls stop (Options.Breaker)
//	limits       rate limits, concurrency, loop guard (Options.Limiter, e.g. policy.Limiter)
//	idempotency  a repeated key returns the recorded result (Options.Idempotency, e.g. store.Idempotency)
//	budget       redacts secrets, caps what goes back to the model, spills the rest to a file
//	check        the result check (Options.ResultChecker, e.g. trust.ResultCheck): every tool's
//	             result, marked or withheld when it holds injected instructions, before the
//	             budget cuts it, so a preview and its spill file carry the same marks
//	run          timeout, cancellation, panic recovery, the tool itself
//
// Telemetry is off unless the options carry providers (nil or no-op ones
// add no stage and no allocation). A call's span, "execute_tool {tool}",
// has the GenAI attributes (gen_ai.tool.name, .call.id, .type: function,
// or extension for a tool tagged "mcp"), the decision (toolgate.decision,
// .rule, .approval, .principal) and, on failure, error.type and
// toolgate.error.type (the tool.Error's type, never its message); its
// children time the approval wait and the run, under which a tool starts
// its own spans from the context. Arguments, results and secrets never go
// into telemetry; Options.TelemetryArgumentNames adds argument names.
//
// A tool runs with the caller's context under the engine's deadline
// (Options.Timeout), in a context of the engine's own (deadline.go): every
// run's deadline is on one list with one timer, and its Done channel is
// made only when the tool asks. A context the tool derives with
// tool.WithTimeout goes on the same list; one derived with package
// context's WithCancel or WithTimeout registers with it without a
// goroutine (not so through a WithValue over it). context.Cause of it, or
// of one derived from it, answers its Err, not the caller's cause.
//
// Execute returns a tool.Result; a failure anywhere is a Result with a
// tool.Error, never a Go error or a panic. ExecuteAll runs a batch with
// bounded parallelism and returns the results in call order.
package engine
