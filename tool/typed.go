package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"unsafe"
)

// Option adjusts a Definition built by New or Func.
type Option func(*Definition)

// WithTitle sets a human-readable title.
func WithTitle(title string) Option { return func(d *Definition) { d.Title = title } }

// WithLevel sets the permission level.
func WithLevel(l Level) Option { return func(d *Definition) { d.Level = l } }

// WithAnnotations sets the MCP annotations.
func WithAnnotations(a Annotations) Option { return func(d *Definition) { d.Annotations = a } }

// WithTags adds tool-set and group tags.
func WithTags(tags ...string) Option {
	return func(d *Definition) { d.Tags = append(d.Tags, tags...) }
}

// WithOutputSchema replaces the output schema (nil removes it).
func WithOutputSchema(s json.RawMessage) Option { return func(d *Definition) { d.OutputSchema = s } }

// ReadOnly marks a tool level 0 with read-only, idempotent annotations.
func ReadOnly() Option {
	return func(d *Definition) {
		d.Level = LevelRead
		d.Annotations = Annotations{ReadOnly: true, Idempotent: true}
	}
}

// typed is the Tool that New returns.
type typed[In, Out any] struct {
	def      Definition
	defaults []byte       // a JSON object of the schema's top-level defaults, or nil
	base     In           // In with the defaults applied, when a plain copy of it is safe
	copyBase bool         // base holds no references (pointers, slices, maps) to share
	flat     *flatDecoder // decodes common arguments into In without encoding/json; nil: none
	fn       func(context.Context, In) (Out, error)
}

// New returns a tool that runs fn. The input schema is inferred from In (a
// struct; see the package doc for the tags it reads), the output schema from
// Out. When Out is Result, fn builds the whole result itself and no output
// schema is inferred; when Out is string, the string is the result's text.
// Otherwise the result carries Out as its structured value and, for clients
// that read only text, its JSON as a text block.
//
// New panics if In cannot be described by a JSON Schema: that is a
// programming error found the first time the program starts.
func New[In, Out any](name, description string, fn func(context.Context, In) (Out, error), opts ...Option) Tool {
	in, err := infer(reflect.TypeFor[In]())
	if err != nil {
		panic(fmt.Sprintf("tool.New(%q): input: %v", name, err))
	}
	t := &typed[In, Out]{fn: fn}
	t.def = Definition{Name: name, Description: description, Level: LevelWrite}
	t.def.InputSchema, t.defaults = in.json, in.defaults
	if plain(reflect.TypeFor[In]()) {
		if t.defaults != nil {
			if err := json.Unmarshal(t.defaults, &t.base); err != nil {
				panic(fmt.Sprintf("tool.New(%q): defaults: %v", name, err))
			}
		}
		t.copyBase = true
		t.flat = newFlatDecoder(reflect.TypeFor[In]())
	}
	switch reflect.TypeFor[Out]() {
	case reflect.TypeFor[Result](), reflect.TypeFor[string]():
	default:
		out, err := infer(reflect.TypeFor[Out]())
		if err != nil {
			panic(fmt.Sprintf("tool.New(%q): output: %v", name, err))
		}
		t.def.OutputSchema = out.json
	}
	for _, o := range opts {
		o(&t.def)
	}
	return t
}

func (t *typed[In, Out]) Definition() Definition { return t.def }

// Fits reports whether args, a JSON object, decode into In by the fast
// decoder: then every key is exactly one of In's fields and encoding/json
// (even with DisallowUnknownFields) would decode them without error. False
// says only that the fast decoder cannot tell: ask encoding/json.
func (t *typed[In, Out]) Fits(args []byte) bool {
	var in In
	return t.flat != nil && t.flat.decode(args, unsafe.Pointer(&in))
}

func (t *typed[In, Out]) Run(ctx context.Context, call Call) (Result, error) {
	var in In
	if t.copyBase {
		in = t.base
	} else if t.defaults != nil {
		if err := json.Unmarshal(t.defaults, &in); err != nil {
			return Result{}, fmt.Errorf("applying defaults: %w", err)
		}
	}
	args := bytes.TrimSpace(call.Args)
	if len(args) > 0 && !bytes.Equal(args, []byte("null")) && (t.flat == nil || !t.flat.decode(args, unsafe.Pointer(&in))) {
		if t.flat != nil {
			in = t.base // start again: the flat decoder may have set some fields
		}
		if err := json.Unmarshal(args, &in); err != nil {
			return Result{}, Errorf(InvalidArguments, "arguments do not fit %s's parameters: %v", t.def.Name, err).
				WithSuggestion("send a JSON object that matches the tool's input schema")
		}
	}
	out, err := t.fn(ctx, in)
	if err != nil {
		return Result{}, err
	}
	switch v := any(out).(type) {
	case Result:
		return v, nil
	case string:
		return TextResult(v), nil
	}
	text, err := json.Marshal(out)
	if err != nil {
		return Result{}, fmt.Errorf("encoding the result: %w", err)
	}
	return Result{Content: []Content{TextContent(string(text))}, Structured: out}, nil
}

// funcTool is the Tool that Func returns.
type funcTool struct {
	def Definition
	fn  func(context.Context, Call) (Result, error)
}

// Func returns a tool with a hand-written definition (its InputSchema must be
// a JSON Schema object) whose fn receives the raw call.
func Func(def Definition, fn func(context.Context, Call) (Result, error)) Tool {
	if len(def.InputSchema) == 0 {
		def.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	return &funcTool{def: def, fn: fn}
}

func (f *funcTool) Definition() Definition                          { return f.def }
func (f *funcTool) Run(ctx context.Context, c Call) (Result, error) { return f.fn(ctx, c) }

// plain reports whether a value of struct type t can be copied without
// sharing memory: only strings, booleans and numbers at its top level.
func plain(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := 0; i < t.NumField(); i++ {
		switch t.Field(i).Type.Kind() {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		default:
			return false
		}
	}
	return true
}
