package orchestrate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/tool"
)

// Plan is a set of tool calls a model (or a person) writes as data: steps
// that may use the results of earlier steps, run as a graph by a Runner.
//
// Its JSON form:
//
//	{"steps": [
//	  {"id": "info", "tool": "get_file_info", "args": {"path": "a.txt"}},
//	  {"id": "read", "tool": "read_file",
//	   "args": {"path": {"$ref": "info.structured.path"}},
//	   "when": {"$ref": "info.structured.binary", "not_equals": true},
//	   "on_failure": "skip"}
//	]}
type Plan struct {
	Steps []Step `json:"steps"`
}

// Step is one call of a plan.
type Step struct {
	// ID names the step for references; letters, digits, '_' and '-', at
	// most 64, starting with a letter or '_'. "input" is reserved.
	ID string `json:"id"`
	// Tool is the name of the tool to call.
	Tool string `json:"tool"`
	// Args are the call's arguments: a JSON object whose values (at any
	// depth) may be references {"$ref": "step.field.path"}, replaced by
	// that value of an earlier step's outcome before the call.
	Args map[string]any `json:"args,omitempty"`
	// After lists steps that must finish first although no reference says
	// so (a write before a read of the same file).
	After []string `json:"after,omitempty"`
	// When is a condition on earlier outcomes (see the package
	// documentation); the step is skipped when it is false.
	When any `json:"when,omitempty"`
	// OnFailure says what a failure of this step does to the plan.
	OnFailure OnFailure `json:"on_failure,omitzero"`
}

// OnFailure is what a failed step does: Abort (the default) stops the plan,
// Skip records the failure and goes on, and a Fallback call answers in
// the step's place. Its JSON form is "abort", "skip" or {"tool", "args"}.
type OnFailure struct {
	Action   Action
	Fallback *Call // set when Action is FallbackCall
}

// Call is a tool and its arguments (which may hold references).
type Call struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args,omitempty"`
}

// Action is what a failed step does to its plan.
type Action string

// Actions of OnFailure.
const (
	Abort        Action = "abort"    // stop: steps not started yet are skipped (the default)
	Skip         Action = "skip"     // record the failure and go on
	FallbackCall Action = "fallback" // call OnFailure.Fallback instead
)

// MarshalJSON writes o as "abort", "skip" or {"tool","args"}.
func (o OnFailure) MarshalJSON() ([]byte, error) {
	if o.Action == FallbackCall && o.Fallback != nil {
		return json.Marshal(o.Fallback)
	}
	if o.Action == "" {
		return json.Marshal(Abort)
	}
	return json.Marshal(o.Action)
}

// IsZero reports whether o is the default (abort).
func (o OnFailure) IsZero() bool { return o.Action == "" || (o.Action == Abort && o.Fallback == nil) }

// Problem is one thing wrong with a plan: where (the step's id and a JSON
// pointer into the plan) and what.
type Problem struct {
	Step    string `json:"step,omitempty"`
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Step != "" {
		return fmt.Sprintf("step %q (%s): %s", p.Step, p.Pointer, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.Pointer, p.Message)
}

// problems collects Problems.
type problems []Problem

func (ps *problems) add(step, pointer, format string, args ...any) {
	if pointer == "" {
		pointer = "/"
	}
	*ps = append(*ps, Problem{Step: step, Pointer: pointer, Message: fmt.Sprintf(format, args...)})
}

// maxProblems bounds the list an error carries.
const maxProblems = 50

// err turns the problems into one invalid_arguments error, or nil.
func (ps problems) err(what string) *tool.Error {
	if len(ps) == 0 {
		return nil
	}
	list := ps
	if len(list) > maxProblems {
		list = list[:maxProblems]
	}
	lines := make([]string, len(list))
	for i, p := range list {
		lines[i] = p.String()
	}
	more := ""
	if len(ps) > len(list) {
		more = fmt.Sprintf("\n… and %d more", len(ps)-len(list))
	}
	return tool.Errorf(tool.InvalidArguments, "the %s is not valid (%d problem(s)); nothing was run:\n%s%s", what, len(ps), strings.Join(lines, "\n"), more).
		WithSuggestion("fix each listed step (the pointer says where in the plan) and send the whole %s again", what).
		WithDetail("problems", []Problem(list))
}

var idChars = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// validID: a letter or _, then letters, digits, _ or -, 64 at most (checked
// apart: a counted repeat compiles to that many copies at start-up).
func validID(s string) bool { return len(s) <= 64 && idChars.MatchString(s) }

// Parse reads a plan from its JSON form. Every problem of shape (a missing
// id, a wrong type, an unknown field) is reported at once, as a
// *tool.Error of type invalid_arguments whose Details["problems"] lists
// them. Parse does not look at tools or references: Runner.Validate does.
func Parse(data []byte, l Limits) (*Plan, error) {
	l = l.withDefaults()
	if len(data) > l.MaxPlanBytes {
		return nil, tool.Errorf(tool.TooLarge, "the plan is %d bytes, over the limit of %d", len(data), l.MaxPlanBytes).
			WithSuggestion("split the work into smaller plans")
	}
	v, err := decode(data)
	if err != nil {
		return nil, tool.Errorf(tool.InvalidArguments, "the plan is not JSON: %v", err).
			WithSuggestion(`send a JSON object {"steps":[{"id","tool","args"},…]}`)
	}
	var ps problems
	p := parsePlan(v, "", &ps)
	if e := ps.err("plan"); e != nil {
		return nil, e
	}
	return p, nil
}

// decode reads JSON keeping numbers exact.
func decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// parsePlan reads the plan object at pointer base.
func parsePlan(v any, base string, ps *problems) *Plan {
	obj, ok := v.(map[string]any)
	if !ok {
		ps.add("", base, `a plan is a JSON object {"steps":[…]}, not %s`, kind(v))
		return nil
	}
	for _, k := range sortedKeys(obj) {
		if k != "steps" {
			ps.add("", base+"/"+esc(k), "unknown field %q (a plan has only \"steps\")", k)
		}
	}
	raw, ok := obj["steps"].([]any)
	if !ok {
		ps.add("", base+"/steps", `"steps" must be an array of steps, got %s`, kind(obj["steps"]))
		return nil
	}
	p := &Plan{Steps: make([]Step, 0, len(raw))}
	for i, sv := range raw {
		p.Steps = append(p.Steps, parseStep(sv, base+"/steps/"+strconv.Itoa(i), ps))
	}
	return p
}

func parseStep(v any, ptr string, ps *problems) Step {
	var s Step
	obj, ok := v.(map[string]any)
	if !ok {
		ps.add("", ptr, "a step is a JSON object {id, tool, args, when?, on_failure?, after?}, not %s", kind(v))
		return s
	}
	s.ID, _ = obj["id"].(string)
	id := s.ID
	for _, k := range sortedKeys(obj) {
		val, at := obj[k], ptr+"/"+esc(k)
		switch k {
		case "id":
			if _, ok := val.(string); !ok {
				ps.add("", at, "id must be a string, got %s", kind(val))
			}
		case "tool":
			t, ok := val.(string)
			if !ok || t == "" {
				ps.add(id, at, "tool must be a non-empty string (a tool's name), got %s", kind(val))
			}
			s.Tool = t
		case "args":
			if val == nil {
				continue
			}
			m, ok := val.(map[string]any)
			if !ok {
				ps.add(id, at, "args must be a JSON object, got %s", kind(val))
			}
			s.Args = m
		case "after":
			list, ok := val.([]any)
			if !ok {
				ps.add(id, at, "after must be an array of step ids, got %s", kind(val))
				continue
			}
			for i, x := range list {
				name, ok := x.(string)
				if !ok {
					ps.add(id, at+"/"+strconv.Itoa(i), "a step id is a string, got %s", kind(x))
					continue
				}
				s.After = append(s.After, name)
			}
		case "when":
			s.When = val
		case "on_failure":
			s.OnFailure = parseOnFailure(val, id, at, ps)
		default:
			ps.add(id, at, "unknown field %q (a step has id, tool, args, when, on_failure, after)", k)
		}
	}
	if _, ok := obj["tool"]; !ok {
		ps.add(id, ptr, "the step has no tool")
	}
	return s
}

func parseOnFailure(v any, id, ptr string, ps *problems) OnFailure {
	switch x := v.(type) {
	case nil:
		return OnFailure{}
	case string:
		switch Action(x) {
		case Abort, Skip:
			return OnFailure{Action: Action(x)}
		}
	case map[string]any:
		c := &Call{}
		for _, k := range sortedKeys(x) {
			val := x[k]
			switch k {
			case "tool":
				c.Tool, _ = val.(string)
				if c.Tool == "" {
					ps.add(id, ptr+"/tool", "the fallback's tool must be a non-empty string, got %s", kind(val))
				}
			case "args":
				if val == nil {
					continue
				}
				m, ok := val.(map[string]any)
				if !ok {
					ps.add(id, ptr+"/args", "the fallback's args must be a JSON object, got %s", kind(val))
				}
				c.Args = m
			default:
				ps.add(id, ptr+"/"+esc(k), "unknown field %q (a fallback call has tool and args)", k)
			}
		}
		if _, ok := x["tool"]; !ok {
			ps.add(id, ptr, "the fallback call has no tool")
		}
		return OnFailure{Action: FallbackCall, Fallback: c}
	}
	ps.add(id, ptr, `on_failure must be "abort", "skip" or a fallback call {"tool","args"}, got %s`, short(v))
	return OnFailure{}
}

// kind names the JSON type of v for messages.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// short renders v for a message, cut to a readable length.
func short(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// sortedKeys returns m's keys in order, so problems come in a stable order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// esc escapes a key for a JSON pointer (RFC 6901).
func esc(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}
