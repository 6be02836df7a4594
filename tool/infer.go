package tool

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// inferred is a schema inferred from a Go type.
type inferred struct {
	json     json.RawMessage
	defaults []byte // the defaults as a JSON object, nil when none
}

// InferSchema returns the JSON Schema of t, as New infers it.
func InferSchema(t reflect.Type) (json.RawMessage, error) {
	in, err := infer(t)
	return in.json, err
}

func infer(t reflect.Type) (inferred, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{})
	if err != nil {
		return inferred{}, err
	}
	s.Schema = "" // the dialect is 2020-12 throughout; no need to say it in every tool
	defaults := map[string]any{}
	if err := applyTags(t, s, defaults); err != nil {
		return inferred{}, err
	}
	b, err := marshalSchema(s)
	if err != nil {
		return inferred{}, err
	}
	out := inferred{json: b}
	if len(defaults) > 0 {
		if out.defaults, err = json.Marshal(defaults); err != nil {
			return inferred{}, err
		}
	}
	return out, nil
}

// applyTags reads toolgate's extra struct tags into s, the schema that
// jsonschema.For built for t. Defaults are collected in top
// (nil where defaults cannot apply: inside arrays, maps and pointers).
func applyTags(t reflect.Type, s *jsonschema.Schema, top map[string]any) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s == nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return applyTags(t.Elem(), s.Items, nil)
	case reflect.Map:
		return applyTags(t.Elem(), s.AdditionalProperties, nil)
	case reflect.Struct:
	default:
		return nil
	}
	if len(s.Properties) == 0 {
		return nil
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, skip := jsonName(f)
		if skip {
			continue
		}
		if f.Anonymous && name == "" {
			if err := applyTags(f.Type, s, top); err != nil {
				return err
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := s.Properties[name]
		if p == nil {
			continue
		}
		if len(p.Types) == 2 && p.Types[0] == "null" {
			// A nil slice or map is simply an absent property: say "array"
			// or "object", not "array or null", which models misread.
			p.Type, p.Types = p.Types[1], nil
		}
		if err := fieldTags(f, p); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		if p.Default != nil {
			s.Required = remove(s.Required, name)
			if top != nil {
				top[name] = json.RawMessage(p.Default)
			}
		}
		// Defaults inside a (non-pointer) struct field are collected as a
		// nested object, so that decoding over them fills the inner fields.
		var inner map[string]any
		if top != nil && f.Type.Kind() == reflect.Struct && p.Default == nil {
			inner = map[string]any{}
		}
		if err := applyTags(f.Type, p, inner); err != nil {
			return err
		}
		if len(inner) > 0 {
			top[name] = inner
		}
	}
	return nil
}

// jsonName returns the field's JSON name ("" when it has none) and whether
// encoding/json skips it.
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", true
	}
	name, _, _ := strings.Cut(tag, ",")
	return name, false
}

func remove(list []string, s string) []string {
	out := list[:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// fieldTags applies one field's default, enum, bounds and format tags to p.
func fieldTags(f reflect.StructField, p *jsonschema.Schema) error {
	ft := f.Type
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	if v, ok := f.Tag.Lookup("default"); ok {
		val, err := tagValue(ft, v)
		if err != nil {
			return fmt.Errorf("default %q: %w", v, err)
		}
		if p.Default, err = json.Marshal(val); err != nil {
			return err
		}
	}
	if v, ok := f.Tag.Lookup("enum"); ok {
		et := ft
		if et.Kind() == reflect.Slice {
			et = et.Elem()
		}
		var enum []any
		for _, item := range strings.Split(v, ",") {
			val, err := tagValue(et, item)
			if err != nil {
				return fmt.Errorf("enum %q: %w", item, err)
			}
			enum = append(enum, val)
		}
		if ft.Kind() == reflect.Slice && p.Items != nil {
			p.Items.Enum = enum
		} else {
			p.Enum = enum
		}
	}
	floats := []struct {
		tag string
		dst **float64
	}{{"minimum", &p.Minimum}, {"maximum", &p.Maximum}}
	for _, fl := range floats {
		if v, ok := f.Tag.Lookup(fl.tag); ok {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("%s %q: %w", fl.tag, v, err)
			}
			*fl.dst = &x
		}
	}
	ints := []struct {
		tag string
		dst **int
	}{{"minLength", &p.MinLength}, {"maxLength", &p.MaxLength}, {"minItems", &p.MinItems}, {"maxItems", &p.MaxItems}}
	for _, in := range ints {
		if v, ok := f.Tag.Lookup(in.tag); ok {
			x, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s %q: %w", in.tag, v, err)
			}
			*in.dst = &x
		}
	}
	if v, ok := f.Tag.Lookup("pattern"); ok {
		p.Pattern = v
	}
	if v, ok := f.Tag.Lookup("format"); ok {
		p.Format = v
	}
	return nil
}

// tagValue converts a tag's text to a value of kind t.
func tagValue(t reflect.Type, s string) (any, error) {
	switch t.Kind() {
	case reflect.String:
		return s, nil
	case reflect.Bool:
		return strconv.ParseBool(s)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.ParseInt(s, 10, 64)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.ParseUint(s, 10, 64)
	case reflect.Float32, reflect.Float64:
		return strconv.ParseFloat(s, 64)
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	return v, nil
}
