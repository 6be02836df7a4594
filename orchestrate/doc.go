// Package orchestrate runs several tool calls as one unit: plans a model
// can write as data, composite tools whose body is a plan, and fallbacks
// that answer for a failing tool. Every call it makes goes through an
// engine.Engine, so each step is governed (policy, approvals, limits) and
// audited on its own, with the session and principal of the call that
// started it; orchestration adds no permission of its own.
//
// # Plans
//
// A Plan is a list of steps {id, tool, args, when?, on_failure?, after?}.
// A value anywhere in args may be a reference {"$ref": "step.field.path"}
// to the outcome of an earlier step, whose fields are status ("ok",
// "failed", "skipped"), text, structured (the structured result, walked
// by object keys and array indices, "a.structured.items.0.name", or by a
// JSON pointer, "a.structured/items/0/name") and error ({type, message,
// retryable, suggestion, details}, null after success).
//
// A condition (when) is data, never code:
//
//	{"$ref": R, "equals": V}        also not_equals, in: [V…], contains: V,
//	{"$ref": R, "exists": true}     gt, gte, lt, lte: number (compared exactly)
//	{"all": [C…]}  {"any": [C…]}  {"not": C}
//
// An absent value (a missing key, a step that did not succeed) exists not,
// equals nothing and not_equals everything.
//
// Runner.Validate checks a whole plan before anything runs and reports
// every problem at once, each with the step id and a JSON pointer into the
// plan: unknown tools, malformed or duplicate ids, references to unknown
// steps, to the step itself (a cycle) or to steps listed after it (forward
// references are refused, so a plan is a DAG by construction), malformed
// references and conditions, and the Limits (steps, nesting depth of
// values, bytes of args and of the plan). Runner.Run then runs it as a
// graph: a step starts when every step it refers to (or lists in after)
// has finished, up to Limits.Parallelism at a time. A step is skipped when
// its condition is false or when it needs the text or structured result of
// a step that did not succeed (skips cascade). On failure a step aborts
// the plan (the default: steps not yet started are skipped, running ones
// finish), is skipped over ("skip"), or is answered by a fallback call
// {tool, args} whose args may read the step's own error. Cancelling the
// context reaches running steps and skips the rest. The Report lists every
// step in the plan's order.
//
// RunPlanTool exposes a runner as the run_plan tool, so one model call can
// carry a whole plan. It is level 0 itself: it only makes calls, each
// decided by the engine on its own, so a plan cannot do what its steps
// could not; a plan may not call run_plan, and plans nested through
// composites stop at Limits.MaxNesting.
//
// # Composites
//
// NewComposite makes a tool with its own name and input schema whose body
// is a plan template; {"$ref": "input.path"} reads the composite's own
// arguments. It is tagged TagComposite, and Definitions lists the atomic
// tools, the composites or both of a registry, for requests that should
// see only one kind. A File (YAML or JSON) declares composites and
// fallbacks; File.Apply registers them.
//
// # Fallbacks
//
// Fallback wraps a tool so that another answers for given error types
// (execute_command → a dry run, read_file → get_file_info). It never
// answers for a refusal (permission_denied, approval_denied,
// sandbox_violation, rate_limited, loop_detected, circuit_open): a refusal is a
// decision, not a fault. When the fallback answers, the result says so in
// its first text block and in Meta["fallback"] = {from, to, error}, which
// the engine's audit record notes in its outcome.
package orchestrate
