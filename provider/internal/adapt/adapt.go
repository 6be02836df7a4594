// Package adapt holds what the provider adapters share: a tool set compiled
// for one provider (wire names, compiled schemas, the mapping of a model's
// arguments back to the tool's shape), the text a result shows the model,
// and the check of a structured (JSON-schema) reply.
package adapt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/tool"
)

// Tool is one definition compiled for a provider.
type Tool struct {
	Def      tool.Definition
	Wire     string           // the name the provider is told
	Compiled *schema.Compiled // the parameters the provider is sent
}

// Tools is a tool set compiled for one provider.
type Tools struct {
	List   []Tool
	byWire map[string]*Tool
}

// Compile compiles defs for provider p. A name the provider refuses gets a
// valid one (schema.Names), mapped back when the model calls it.
func Compile(p schema.Provider, defs []tool.Definition) (*Tools, error) {
	t := &Tools{byWire: make(map[string]*Tool, len(defs))}
	var names schema.Names
	for _, d := range defs {
		c, err := schema.CompileFor(p, d.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", d.Name, err)
		}
		t.List = append(t.List, Tool{Def: d, Wire: names.Tool(d.Name), Compiled: c})
	}
	for i := range t.List {
		t.byWire[t.List[i].Wire] = &t.List[i]
	}
	return t, nil
}

// Wire returns the provider's name for the tool called name, or name itself
// when the set has no such tool.
func (t *Tools) Wire(name string) string {
	for _, x := range t.List {
		if x.Def.Name == name {
			return x.Wire
		}
	}
	return name
}

// Call turns what the model sent into a tool.Call: the tool's own name, and
// arguments mapped back to the tool's shape (Compiled.ToolArguments) when
// they are one JSON object. Anything else (empty, two objects back to back,
// an array, malformed JSON) is passed on byte for byte, for the engine to
// answer with a precise invalid_arguments error: it is never replaced by {}.
func (t *Tools) Call(id, wire string, raw []byte) tool.Call {
	c := tool.Call{ID: id, Name: wire, Args: json.RawMessage(bytes.Clone(raw))}
	x := t.byWire[wire]
	if x == nil {
		return c
	}
	c.Name = x.Def.Name
	c.Args = MapArguments(x.Compiled, raw)
	return c
}

// MapArguments applies c.ToolArguments to raw when raw is exactly one JSON
// object; otherwise, or when nothing needs mapping, it returns raw unchanged.
func MapArguments(c *schema.Compiled, raw []byte) json.RawMessage {
	out := json.RawMessage(bytes.Clone(raw))
	trimmed := bytes.TrimSpace(raw)
	if c == nil || len(trimmed) == 0 || trimmed[0] != '{' {
		return out
	}
	args, err := schema.ParseArguments(raw)
	if err != nil {
		return out
	}
	mapped := c.ToolArguments(args)
	if reflect.ValueOf(mapped).UnsafePointer() == reflect.ValueOf(args).UnsafePointer() {
		return out
	}
	b, merr := json.Marshal(mapped)
	if merr != nil {
		return out
	}
	return b
}

// Text is what the model is shown of a result: an error's model-facing text
// (tool.Error.Text), else the text blocks, a placeholder for each block
// that is not text, and the structured value as JSON when there is no text.
func Text(r tool.Result) string {
	if r.Error != nil {
		return r.Error.Text()
	}
	var parts []string
	for _, c := range r.Content {
		switch c.Type {
		case "text":
			parts = append(parts, c.Text)
		case "resource":
			if c.Text != "" {
				parts = append(parts, c.Text)
			} else {
				parts = append(parts, "[resource "+c.URI+", "+c.MIMEType+", "+strconv.Itoa(len(c.Data))+" bytes]")
			}
		default:
			parts = append(parts, "["+c.Type+" "+c.MIMEType+", "+strconv.Itoa(len(c.Data))+" bytes]")
		}
	}
	if len(parts) == 0 && r.Structured != nil {
		if b, err := json.Marshal(r.Structured); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

// Structured checks a structured reply: text must be one JSON object that,
// once mapped back by c (nulls strict mode forced removed), validates
// against the caller's schema s. The error lists every failing field.
func Structured(name string, c *schema.Compiled, s *schema.Schema, text string) (map[string]any, error) {
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("the model sent no structured reply for %s", name)
	}
	args, perr := schema.ParseArguments([]byte(text))
	if perr != nil {
		return nil, fmt.Errorf("the model's reply for %s is not one JSON object: %w", name, perr)
	}
	args = c.ToolArguments(args)
	if errs := s.Validate(args); len(errs) > 0 {
		return nil, fmt.Errorf("the model's reply does not match the schema: %w", schema.ValidationError(name, errs))
	}
	return args, nil
}

// ObjectSchema unmarshals a compiled schema into the map the SDKs take,
// keeping every value as raw JSON so that numbers keep their digits.
func ObjectSchema(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out, nil
}

// Format is a JSON Schema a model's reply must match: compiled for one
// provider's request, and kept as written to check the reply.
type Format struct {
	Name     string
	Compiled *schema.Compiled
	Check    *schema.Schema
}

// NewFormat compiles sch (a JSON Schema of an object) for provider p, as the
// structured reply named name (the name appears in errors).
func NewFormat(p schema.Provider, name string, sch json.RawMessage) (Format, error) {
	check, err := schema.Compile(sch)
	if err != nil {
		return Format{}, fmt.Errorf("format %s: %w", name, err)
	}
	c, err := schema.CompileFor(p, sch)
	if err != nil {
		return Format{}, fmt.Errorf("format %s: %w", name, err)
	}
	return Format{Name: name, Compiled: c, Check: check}, nil
}
