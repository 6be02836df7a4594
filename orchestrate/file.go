package orchestrate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/goccy/go-yaml"

	"github.com/toolgate/toolgate/tool"
)

// File is a set of composites and fallbacks, as written in a YAML or JSON
// file:
//
//	composites:
//	  - name: inspect_file
//	    description: Describe a file and read its first lines.
//	    input_schema: {type: object, properties: {path: {type: string}}, required: [path]}
//	    steps:
//	      - {id: info, tool: get_file_info, args: {path: {$ref: input.path}}}
//	      - {id: head, tool: read_file, args: {path: {$ref: input.path}, limit: 20}}
//	    result: head
//	fallbacks:
//	  - tool: read_file
//	    fallback: get_file_info
//	    on: [invalid_arguments]
//	    args: {path: {$ref: input.path}}
type File struct {
	Composites []Composite
	Fallbacks  []FallbackSpec
}

// FallbackSpec wraps Tool with Fallback (see the function of that name).
type FallbackSpec struct {
	Tool     string           `json:"tool"`
	Fallback string           `json:"fallback"`
	On       []tool.ErrorType `json:"on,omitempty"`
	// Args, when set, builds the fallback's arguments from the tool's:
	// values may be {"$ref": "input.path"}. Nil: the same arguments.
	Args map[string]any `json:"args,omitempty"`
}

// errorTypes are the error types a fallback may name.
var errorTypes = []tool.ErrorType{tool.InvalidArguments, tool.UnknownTool, tool.PermissionDenied, tool.ApprovalDenied,
	tool.RateLimited, tool.LoopDetected, tool.CircuitOpen, tool.NotFound, tool.Conflict, tool.Timeout, tool.TooLarge,
	tool.Unavailable, tool.SandboxViolation, tool.Internal}

// maxFileBytes bounds a composites file.
const maxFileBytes = 4 << 20

// LoadFile reads a composites file (YAML, of which JSON is a subset).
func LoadFile(path string, l Limits) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("composites file: %w", err)
	}
	f, err := ParseFile(data, l)
	if err != nil {
		return nil, fmt.Errorf("composites file %s: %w", path, err)
	}
	return f, nil
}

// ParseFile reads the YAML or JSON form of a File. Every problem is
// reported at once (a *tool.Error with Details["problems"]).
func ParseFile(data []byte, l Limits) (*File, error) {
	l = l.withDefaults()
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%d bytes, over the limit of %d", len(data), maxFileBytes)
	}
	js := data
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		var err error
		if js, err = yaml.YAMLToJSON(data); err != nil {
			return nil, fmt.Errorf("not YAML or JSON: %w", err)
		}
	}
	v, err := decode(js)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want an object with composites and fallbacks, got %s", kind(v))
	}
	var ps problems
	f := &File{}
	for _, k := range sortedKeys(obj) {
		if k != "composites" && k != "fallbacks" {
			ps.add("", "/"+esc(k), "unknown field %q (a composites file has composites and fallbacks)", k)
		}
	}
	if c, ok := obj["composites"]; ok && c != nil {
		list, ok := c.([]any)
		if !ok {
			ps.add("", "/composites", "composites must be an array")
		}
		for i, item := range list {
			f.Composites = append(f.Composites, parseComposite(item, "/composites/"+strconv.Itoa(i), &ps))
		}
	}
	if c, ok := obj["fallbacks"]; ok && c != nil {
		list, ok := c.([]any)
		if !ok {
			ps.add("", "/fallbacks", "fallbacks must be an array")
		}
		for i, item := range list {
			ptr := "/fallbacks/" + strconv.Itoa(i)
			b, _ := json.Marshal(item)
			var fs FallbackSpec
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			dec.UseNumber()
			if err := dec.Decode(&fs); err != nil {
				ps.add("", ptr, "a fallback is {tool, fallback, on, args}: %v", err)
				continue
			}
			if fs.Tool == "" || fs.Fallback == "" {
				ps.add("", ptr, "a fallback needs tool and fallback")
			}
			for j, t := range fs.On {
				if !slices.Contains(errorTypes, t) {
					ps.add("", ptr+"/on/"+strconv.Itoa(j), "unknown error type %q", t)
				}
			}
			f.Fallbacks = append(f.Fallbacks, fs)
		}
	}
	if e := ps.err("composites file"); e != nil {
		return nil, e
	}
	return f, nil
}

func parseComposite(v any, ptr string, ps *problems) Composite {
	var c Composite
	obj, ok := v.(map[string]any)
	if !ok {
		ps.add("", ptr, "a composite is an object {name, description, input_schema, steps, result}")
		return c
	}
	str := func(k string) string {
		s, ok := obj[k].(string)
		if _, has := obj[k]; has && !ok {
			ps.add("", ptr+"/"+k, "%s must be a string", k)
		}
		return s
	}
	c.Name, c.Title, c.Description, c.Result = str("name"), str("title"), str("description"), str("result")
	for _, k := range sortedKeys(obj) {
		switch k {
		case "name", "title", "description", "result", "steps":
		case "input_schema":
			b, err := json.Marshal(obj[k])
			if err != nil {
				ps.add("", ptr+"/input_schema", "%v", err)
			}
			c.InputSchema = b
		default:
			ps.add("", ptr+"/"+esc(k), "unknown field %q (a composite has name, title, description, input_schema, steps, result)", k)
		}
	}
	c.Plan = parsePlan(map[string]any{"steps": obj["steps"]}, ptr, ps)
	return c
}

// Apply adds the file's fallbacks and composites to the runner's registry:
// each fallback replaces its tool by the wrapped one, then the composites
// are registered (they may use the wrapped tools). It stops at the first
// error, which names the entry.
func (f *File) Apply(r *Runner) error {
	reg := r.engine.Registry()
	for i, fs := range f.Fallbacks {
		primary, ok := reg.Lookup(fs.Tool)
		if !ok {
			return fmt.Errorf("fallbacks[%d]: no tool named %q", i, fs.Tool)
		}
		fb, ok := reg.Lookup(fs.Fallback)
		if !ok {
			return fmt.Errorf("fallbacks[%d]: no tool named %q", i, fs.Fallback)
		}
		var mapArgs func(json.RawMessage) (json.RawMessage, error)
		if fs.Args != nil {
			var err error
			if mapArgs, err = TemplateArgs(fs.Args); err != nil {
				return fmt.Errorf("fallbacks[%d]: %w", i, err)
			}
		}
		reg.Unregister(fs.Tool)
		if err := reg.Register(Fallback(primary, fb, mapArgs, fs.On...)); err != nil {
			return fmt.Errorf("fallbacks[%d]: %w", i, err)
		}
	}
	for i, c := range f.Composites {
		t, err := NewComposite(r, c)
		if err != nil {
			return fmt.Errorf("composites[%d]: %w", i, err)
		}
		if err := reg.Register(t); err != nil {
			return fmt.Errorf("composites[%d]: %w", i, err)
		}
	}
	return nil
}
