package orchestrate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// Tags that tell composites from atomic tools in a registry.
const (
	TagComposite = "composite" // a tool whose body is a plan over other tools
	TagAtomic    = "atomic"    // a tool that calls no other tool (optional: any tool without TagComposite is atomic)
)

// Composite describes a tool whose body is a plan template over other
// tools. References {"$ref": "input.path"} in the steps read the
// composite's own arguments.
type Composite struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"` // nil: {"type":"object"}
	Plan        *Plan           `json:"-"`
	// Result is the id of the step whose result the composite returns;
	// empty: the last step.
	Result string `json:"result,omitempty"`
}

// NewComposite checks c against the runner's registry (every tool exists,
// references are sound, "input" references name properties of the input
// schema) and returns it as a tool tagged TagComposite.
//
// Its level is the highest level among its steps' tools (and fallbacks),
// and it is read-only only if they all are, so a policy that looks at
// levels sees what it may do; each step is still decided on its own when
// it runs, with the calling session and principal.
func NewComposite(r *Runner, c Composite) (tool.Tool, error) {
	if !registry.ValidName(c.Name) {
		return nil, tool.Errorf(tool.InvalidArguments, "composite %q: invalid name (1-128 letters, digits, '_', '-' or '.')", c.Name)
	}
	if c.Description == "" {
		return nil, tool.Errorf(tool.InvalidArguments, "composite %q has no description", c.Name).
			WithSuggestion("say what the composite does: it is what a model reads to choose it")
	}
	schema := c.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	var props map[string]any
	var s map[string]any
	if err := json.Unmarshal(schema, &s); err != nil || s["type"] != "object" {
		return nil, tool.Errorf(tool.InvalidArguments, "composite %q: the input schema must be a JSON object schema with \"type\": \"object\"", c.Name)
	}
	props, _ = s["properties"].(map[string]any)
	_, ps := r.validate(c.Plan, true, tool.Call{})
	if c.Plan != nil {
		for i, st := range c.Plan.Steps {
			checkInputRefs(st, i, props, &ps)
		}
	}
	result := c.Result
	if c.Plan != nil && len(c.Plan.Steps) > 0 {
		if result == "" {
			result = c.Plan.Steps[len(c.Plan.Steps)-1].ID
		} else if !slices.ContainsFunc(c.Plan.Steps, func(s Step) bool { return s.ID == result }) {
			ps.add("", "/result", "no step has the id %q", result)
		}
	}
	if e := ps.err(fmt.Sprintf("composite %q", c.Name)); e != nil {
		return nil, e
	}
	def := tool.Definition{
		Name: c.Name, Title: c.Title, Description: c.Description, InputSchema: schema,
		Tags:        []string{TagComposite},
		Annotations: tool.Annotations{ReadOnly: true, Idempotent: true},
	}
	for _, st := range c.Plan.Steps {
		names := []string{st.Tool}
		if fb := st.OnFailure.Fallback; fb != nil {
			names = append(names, fb.Tool)
		}
		for _, n := range names {
			d, _ := r.engine.Registry().Definition(n)
			def.Level = max(def.Level, d.Level)
			def.Annotations.ReadOnly = def.Annotations.ReadOnly && d.Annotations.ReadOnly
			def.Annotations.Idempotent = def.Annotations.Idempotent && d.Annotations.Idempotent
			def.Annotations.Destructive = def.Annotations.Destructive || d.Annotations.Destructive
			def.Annotations.OpenWorld = def.Annotations.OpenWorld || d.Annotations.OpenWorld
		}
	}
	return &composite{def: def, r: r, plan: c.Plan, result: result}, nil
}

// checkInputRefs reports input references to properties the schema lacks.
func checkInputRefs(st Step, i int, props map[string]any, ps *problems) {
	if props == nil {
		return
	}
	ptr := fmt.Sprintf("/steps/%d", i)
	var sites []refSite
	var scratch problems
	sites = append(sites, findRefs(st.Args, ptr+"/args", st.ID, &scratch)...)
	if st.When != nil {
		sites = append(sites, checkCond(st.When, ptr+"/when", st.ID, &scratch)...)
	}
	if fb := st.OnFailure.Fallback; fb != nil {
		sites = append(sites, findRefs(fb.Args, ptr+"/on_failure/args", st.ID, &scratch)...)
	}
	for _, site := range sites {
		if site.ref.step != inputRef || len(site.ref.path) == 0 {
			continue
		}
		if _, ok := props[site.ref.path[0]]; !ok {
			ps.add(st.ID, site.pointer, "the input schema has no property %q", site.ref.path[0])
		}
	}
}

type composite struct {
	def    tool.Definition
	r      *Runner
	plan   *Plan
	result string
}

func (c *composite) Definition() tool.Definition { return c.def }

// Run runs the template with the call's arguments as input. It returns the
// result step's result, with Meta["steps"] listing every step's status and
// call id; when a step stopped the plan, the plan's error.
func (c *composite) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	input := any(map[string]any{})
	if len(call.Args) > 0 {
		v, err := decode(call.Args)
		if err != nil {
			return tool.Result{}, tool.Errorf(tool.InvalidArguments, "the arguments are not JSON: %v", err)
		}
		if v != nil {
			input = v
		}
	}
	rep, err := c.r.run(ctx, c.plan, call, input, true)
	if err != nil {
		return tool.Result{}, err
	}
	if rep.Status != "ok" {
		return rep.Result(), nil
	}
	type stepMeta struct {
		ID       string `json:"id"`
		Tool     string `json:"tool"`
		Status   Status `json:"status"`
		CallID   string `json:"call_id,omitempty"`
		Fallback string `json:"fallback,omitempty"`
	}
	steps := make([]stepMeta, len(rep.Steps))
	var out *StepReport
	for i := range rep.Steps {
		s := &rep.Steps[i]
		steps[i] = stepMeta{s.ID, s.Tool, s.Status, s.CallID, s.Fallback}
		if s.ID == c.result {
			out = s
		}
	}
	var res tool.Result
	if out != nil && out.Status == StatusOK {
		res = out.Result
	} else {
		res = rep.Result() // the result step was skipped or failed (with on_failure skip)
	}
	meta := make(map[string]any, len(res.Meta)+1)
	for k, v := range res.Meta {
		meta[k] = v
	}
	meta["steps"] = steps
	res.Meta = meta
	return res, nil
}

// Kind selects tools by what they are.
type Kind int

// Kinds of tools a request may expose.
const (
	AllTools   Kind = iota // atomic tools and composites
	Atomics                // tools without TagComposite
	Composites             // tools with TagComposite
)

// Definitions returns the enabled tools of reg of one kind, in registration
// order: what one request exposes to a model (a planner may get only
// composites, an executor only atomics).
func Definitions(reg *registry.Registry, k Kind) []tool.Definition {
	switch k {
	case Composites:
		return reg.List(registry.Filter{Tags: []string{TagComposite}})
	case Atomics:
		all := reg.List(registry.Filter{})
		return slices.DeleteFunc(all, func(d tool.Definition) bool { return d.HasTag(TagComposite) })
	}
	return reg.List(registry.Filter{})
}
