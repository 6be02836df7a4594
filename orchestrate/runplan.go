package orchestrate

import (
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate/tool"
)

// RunPlanName is the name of the tool that RunPlanTool returns.
const RunPlanName = "run_plan"

const runPlanDesc = `Run several tool calls as one plan: steps run in parallel unless one needs another's result, so a whole task takes one call instead of many round trips. Each step is an ordinary governed call (the same permissions, approvals and audit as calling that tool directly).

A step is {"id", "tool", "args", "when"?, "on_failure"?, "after"?}:
- Any value inside "args" may be a reference to an EARLIER step's outcome: {"$ref": "<step id>.structured.<path>"} (a field of its structured result; array items by index, e.g. "find.structured.matches.0.path"), {"$ref": "<id>.text"}, {"$ref": "<id>.status"} ("ok", "failed", "skipped") or {"$ref": "<id>.error.type"}.
- "when" runs the step only if a condition holds: {"$ref": "...", "equals": v} (or not_equals, exists: true/false, in: [..], contains, gt, gte, lt, lte), combined with {"all": [...]}, {"any": [...]}, {"not": {...}}.
- "on_failure": "abort" (default: stop the plan; steps not started are skipped), "skip" (go on), or a fallback call {"tool", "args"} whose args may read this step's error.
- "after": ids of steps that must finish first although no reference says so.
The result lists every step in order with its status and result. The whole plan is checked before anything runs.`

const runPlanSchema = `{
  "type": "object",
  "properties": {
    "steps": {
      "type": "array",
      "minItems": 1,
      "description": "the calls to make, in an order where every step comes after the steps it refers to",
      "items": {
        "type": "object",
        "properties": {
          "id": {"type": "string", "description": "name of the step, used in references (letters, digits, _ and -)"},
          "tool": {"type": "string", "description": "the tool to call"},
          "args": {"type": "object", "description": "the tool's arguments; any value may be {\"$ref\": \"<earlier step id>.structured.<path>\"}"},
          "when": {"type": "object", "description": "run only if this condition on earlier steps holds, e.g. {\"$ref\": \"check.structured.exists\", \"equals\": true}"},
          "on_failure": {"description": "\"abort\" (default), \"skip\", or a fallback call {\"tool\", \"args\"}"},
          "after": {"type": "array", "items": {"type": "string"}, "description": "ids of steps that must finish first"}
        },
        "required": ["id", "tool"]
      }
    }
  },
  "required": ["steps"],
  "additionalProperties": false
}`

// RunPlanTool returns the run_plan tool: a model sends a whole plan (the
// JSON form of Plan) as its arguments and gets the Report back (text: a
// summary with each step's output; structured: the Report; an error when
// a step stopped the plan). run_plan itself is level 0 and claims no
// annotation: it does nothing but call tools, and each step is decided by
// the engine on its own (its level, the policy's rules, approvals), so a
// plan can never do what its steps could not. A plan may not call
// run_plan.
func RunPlanTool(r *Runner) tool.Tool { return &runPlan{r: r} }

type runPlan struct{ r *Runner }

func (t *runPlan) Definition() tool.Definition {
	return tool.Definition{
		Name:        RunPlanName,
		Title:       "Run a plan of tool calls",
		Description: runPlanDesc,
		InputSchema: json.RawMessage(runPlanSchema),
		Level:       tool.LevelRead,
		Tags:        []string{"orchestration"},
	}
}

func (t *runPlan) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	p, err := Parse(call.Args, t.r.limits)
	if err != nil {
		return tool.Result{}, err
	}
	rep, err := t.r.Run(ctx, p, call)
	if err != nil {
		return tool.Result{}, err
	}
	return rep.Result(), nil
}
