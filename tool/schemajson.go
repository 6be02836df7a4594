package tool

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"
)

// marshalSchema returns the JSON of s exactly as json.Marshal(s) does, in
// a sixth of the time (BenchmarkMarshalSchema): jsonschema.Schema's
// MarshalJSON reflects over its sixty fields at every level of every
// schema, which made inferring the built-in tools' schemas most of a
// `toolgate call`'s set-up. It writes
// the keywords that inference produces, in the order MarshalJSON writes
// them; a schema (or subschema) using any other keyword is left to
// json.Marshal, so the output stays the same whatever the schema holds
// (TestMarshalSchema compares the two).
func marshalSchema(s *jsonschema.Schema) ([]byte, error) {
	var b bytes.Buffer
	if err := writeSchema(&b, s); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeSchema(b *bytes.Buffer, s *jsonschema.Schema) error {
	if s == nil {
		b.WriteString("null")
		return nil
	}
	if falseSchema(s) {
		b.WriteString("false") // as MarshalJSON writes {"not": {}}: additionalProperties of a struct
		return nil
	}
	if !plainSchema(s) {
		j, err := json.Marshal(s)
		b.Write(j)
		return err
	}
	start := b.Len()
	b.WriteByte('{')
	w := objectWriter{b: b}
	switch {
	case s.Type != "":
		w.value("type", s.Type)
	case s.Types != nil:
		w.value("type", s.Types)
	}
	if s.Properties != nil {
		w.key("properties")
		if err := writeProperties(b, s); err != nil {
			return err
		}
	}
	if s.Items != nil {
		w.key("items")
		if err := writeSchema(b, s.Items); err != nil {
			return err
		}
	}
	if s.Title != "" {
		w.value("title", s.Title)
	}
	if s.Description != "" {
		w.value("description", s.Description)
	}
	if len(s.Default) > 0 {
		w.value("default", s.Default) // compacted and escaped, as json.Marshal does
	}
	if len(s.Enum) > 0 {
		w.value("enum", s.Enum)
	}
	w.float("minimum", s.Minimum)
	w.float("maximum", s.Maximum)
	w.int("minLength", s.MinLength)
	w.int("maxLength", s.MaxLength)
	if s.Pattern != "" {
		w.value("pattern", s.Pattern)
	}
	w.int("minItems", s.MinItems)
	w.int("maxItems", s.MaxItems)
	if len(s.Required) > 0 {
		w.value("required", s.Required)
	}
	if s.AdditionalProperties != nil {
		w.key("additionalProperties")
		if err := writeSchema(b, s.AdditionalProperties); err != nil {
			return err
		}
	}
	if s.Format != "" {
		w.value("format", s.Format)
	}
	if w.err != nil {
		return w.err
	}
	b.WriteByte('}')
	// As MarshalJSON: {} is true.
	if b.Len()-start == 2 {
		b.Truncate(start)
		b.WriteString("true")
	}
	return nil
}

// writeProperties writes s.Properties in MarshalJSON's order: the names
// of PropertyOrder first, then the others sorted.
func writeProperties(b *bytes.Buffer, s *jsonschema.Schema) error {
	b.WriteByte('{')
	w := objectWriter{b: b}
	done := make(map[string]bool, len(s.PropertyOrder))
	for _, name := range s.PropertyOrder {
		if p, ok := s.Properties[name]; ok && !done[name] {
			done[name] = true
			w.key(name)
			if err := writeSchema(b, p); err != nil {
				return err
			}
		}
	}
	rest := make([]string, 0, len(s.Properties)-len(done))
	for name := range s.Properties {
		if !done[name] {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	for _, name := range rest {
		w.key(name)
		if err := writeSchema(b, s.Properties[name]); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return w.err
}

// falseSchema reports whether s is {"not": {}}, the schema nothing matches.
func falseSchema(s *jsonschema.Schema) bool {
	if s.Not == nil {
		return false
	}
	c := *s
	c.Not = nil
	return reflect.ValueOf(&c).Elem().IsZero() && reflect.ValueOf(s.Not).Elem().IsZero()
}

// plainSchema reports whether s uses only the keywords writeSchema writes.
func plainSchema(s *jsonschema.Schema) bool {
	if s.Type != "" && s.Types != nil || len(slices.Compact(slices.Sorted(slices.Values(s.PropertyOrder)))) != len(s.PropertyOrder) {
		return false // MarshalJSON's errors, left to it
	}
	c := *s
	c.Type, c.Types, c.Properties, c.PropertyOrder, c.Items = "", nil, nil, nil, nil
	c.Title, c.Description, c.Default, c.Enum = "", "", nil, nil
	c.Minimum, c.Maximum, c.MinLength, c.MaxLength, c.Pattern = nil, nil, nil, nil, ""
	c.MinItems, c.MaxItems, c.Required, c.AdditionalProperties, c.Format = nil, nil, nil, nil, ""
	return reflect.ValueOf(&c).Elem().IsZero()
}

// objectWriter writes the members of a JSON object whose '{' is written;
// the first error sticks.
type objectWriter struct {
	b     *bytes.Buffer
	count int
	err   error
}

func (w *objectWriter) key(k string) {
	if w.count > 0 {
		w.b.WriteByte(',')
	}
	w.count++
	w.b.Write(AppendJSONString(w.b.AvailableBuffer(), k))
	w.b.WriteByte(':')
}

func (w *objectWriter) value(k string, v any) {
	w.key(k)
	switch v := v.(type) {
	case string:
		w.b.Write(AppendJSONString(w.b.AvailableBuffer(), v))
	case int:
		w.b.Write(strconv.AppendInt(w.b.AvailableBuffer(), int64(v), 10))
	case []string:
		w.b.WriteByte('[')
		for i, s := range v {
			if i > 0 {
				w.b.WriteByte(',')
			}
			w.b.Write(AppendJSONString(w.b.AvailableBuffer(), s))
		}
		w.b.WriteByte(']')
	default:
		w.encode(v)
	}
}

func (w *objectWriter) float(k string, f *float64) {
	if f != nil {
		w.value(k, *f)
	}
}

func (w *objectWriter) int(k string, n *int) {
	if n != nil {
		w.value(k, *n)
	}
}

// encode writes v as encoding/json does (HTML characters escaped).
func (w *objectWriter) encode(v any) {
	j, err := json.Marshal(v)
	if err != nil && w.err == nil {
		w.err = err
	}
	w.b.Write(j)
}
