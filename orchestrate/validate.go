package orchestrate

import (
	"encoding/json"
	"strconv"

	"github.com/toolgate/toolgate/tool"
)

// Limits bound what a plan may ask for. Zero fields take the defaults.
type Limits struct {
	MaxSteps     int // steps in one plan; 0: 64
	MaxDepth     int // nesting of JSON values in args and conditions; 0: 32
	MaxArgsBytes int // one step's args as JSON; 0: 256 KiB
	MaxPlanBytes int // the plan as JSON (Parse, run_plan); 0: 1 MiB
	Parallelism  int // steps running at once; 0: 4
	MaxNesting   int // plans inside plans (composites calling composites); 0: 4
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxSteps, 64)
	def(&l.MaxDepth, 32)
	def(&l.MaxArgsBytes, 256<<10)
	def(&l.MaxPlanBytes, 1<<20)
	def(&l.Parallelism, 4)
	def(&l.MaxNesting, 4)
	return l
}

// stepDeps are the steps one step waits for, by index.
type stepDeps []int

// validate checks p against the registry and the limits and returns each
// step's dependencies. allowInput admits references to "input" (composite
// templates). A tool hidden from caller (engine.Visible) is no tool.
func (r *Runner) validate(p *Plan, allowInput bool, caller tool.Call) ([]stepDeps, problems) {
	var ps problems
	if p == nil || len(p.Steps) == 0 {
		ps.add("", "/steps", "a plan needs at least one step")
		return nil, ps
	}
	if len(p.Steps) > r.limits.MaxSteps {
		ps.add("", "/steps", "the plan has %d steps, over the limit of %d; split it into smaller plans", len(p.Steps), r.limits.MaxSteps)
		return nil, ps
	}
	index := map[string]int{}
	for i, s := range p.Steps {
		ptr := "/steps/" + strconv.Itoa(i)
		switch {
		case s.ID == "":
			ps.add("", ptr+"/id", "the step has no id")
		case !validID(s.ID):
			ps.add(s.ID, ptr+"/id", "an id is 1-64 letters, digits, '_' or '-', starting with a letter or '_'")
		case s.ID == inputRef:
			ps.add(s.ID, ptr+"/id", `"input" is reserved for a composite's arguments; choose another id`)
		default:
			if j, dup := index[s.ID]; dup {
				ps.add(s.ID, ptr+"/id", "duplicate id: step %d has it too", j)
				continue
			}
			index[s.ID] = i
		}
	}
	deps := make([]stepDeps, len(p.Steps))
	for i, s := range p.Steps {
		ptr := "/steps/" + strconv.Itoa(i)
		r.checkTool(s.Tool, s.ID, ptr+"/tool", caller, &ps)
		seen := map[int]bool{}
		need := func(target string, at string, self bool) {
			j, ok := index[target]
			switch {
			case target == inputRef && allowInput:
				return
			case target == inputRef:
				ps.add(s.ID, at, `"input" refers to a composite's arguments; a plan has none`)
			case !ok:
				ps.add(s.ID, at, "unknown step %q", target)
			case j == i && !self:
				ps.add(s.ID, at, "the step refers to itself (a cycle)")
			case j > i:
				ps.add(s.ID, at, "forward reference to step %q, listed after this one: a step may use only steps listed before it (reorder the steps)", target)
			case j < i && !seen[j]:
				seen[j] = true
				deps[i] = append(deps[i], j)
			}
		}
		if s.Args != nil {
			r.checkValue(s.Args, s.ID, ptr+"/args", &ps)
			for _, site := range findRefs(s.Args, ptr+"/args", s.ID, &ps) {
				need(site.ref.step, site.pointer, false)
			}
		}
		for k, a := range s.After {
			need(a, ptr+"/after/"+strconv.Itoa(k), false)
		}
		if s.When != nil {
			if depthOf(s.When) > r.limits.MaxDepth {
				ps.add(s.ID, ptr+"/when", "the condition is nested deeper than %d levels", r.limits.MaxDepth)
			} else {
				for _, site := range checkCond(s.When, ptr+"/when", s.ID, &ps) {
					need(site.ref.step, site.pointer, false)
				}
			}
		}
		if fb := s.OnFailure.Fallback; s.OnFailure.Action == FallbackCall && fb != nil {
			fptr := ptr + "/on_failure"
			r.checkTool(fb.Tool, s.ID, fptr+"/tool", caller, &ps)
			if fb.Args != nil {
				r.checkValue(fb.Args, s.ID, fptr+"/args", &ps)
				for _, site := range findRefs(fb.Args, fptr+"/args", s.ID, &ps) {
					if site.ref.step == s.ID && site.ref.needsSuccess() {
						ps.add(s.ID, site.pointer, "a fallback runs because its step failed: it may read the step's error and status, not its %s", site.ref.field)
						continue
					}
					need(site.ref.step, site.pointer, true)
				}
			}
		}
	}
	return deps, ps
}

// checkTool reports a tool that cannot be a step.
func (r *Runner) checkTool(name, step, ptr string, caller tool.Call, ps *problems) {
	if name == "" {
		return // reported by Parse
	}
	if name == r.name {
		ps.add(step, ptr, "a plan may not run %s: put the steps in this plan", r.name)
		return
	}
	if def, ok := r.engine.Registry().Definition(name); !ok || !r.engine.Visible(def, caller) {
		ps.add(step, ptr, "no tool named %q is available", name)
	}
}

// checkValue enforces the size and depth limits on a step's args.
func (r *Runner) checkValue(v any, step, ptr string, ps *problems) {
	if d := depthOf(v); d > r.limits.MaxDepth {
		ps.add(step, ptr, "the arguments are nested %d levels deep, over the limit of %d", d, r.limits.MaxDepth)
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		ps.add(step, ptr, "the arguments cannot be written as JSON: %v", err)
		return
	}
	if len(b) > r.limits.MaxArgsBytes {
		ps.add(step, ptr, "the arguments are %d bytes, over the limit of %d", len(b), r.limits.MaxArgsBytes)
	}
}

// depthOf returns the nesting depth of a JSON value (a scalar is 0). It
// stops counting a little past any sensible limit.
func depthOf(v any) int {
	const cap = 1 << 10
	var walk func(v any, d int) int
	walk = func(v any, d int) int {
		if d > cap {
			return d
		}
		best := d
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				best = max(best, walk(e, d+1))
			}
			if len(x) == 0 {
				best = max(best, d+1)
			}
		case []any:
			for _, e := range x {
				best = max(best, walk(e, d+1))
			}
			if len(x) == 0 {
				best = max(best, d+1)
			}
		}
		return best
	}
	return walk(v, 0)
}
