package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// Types whose inferred schemas exercise every keyword marshalSchema
// writes, and text that encoding/json escapes.
type (
	msInner struct {
		Name  string            `json:"name" jsonschema:"a <name> & more" pattern:"^[a-z]+$" minLength:"1" maxLength:"9"`
		Tags  []string          `json:"tags,omitempty" enum:"a,b,<c>" minItems:"1" maxItems:"3"`
		Attrs map[string]string `json:"attrs,omitempty"`
	}
	msAll struct {
		Path     string             `json:"path" jsonschema:"line\u2028separator, \"quotes\", tab\t"`
		Count    int                `json:"count,omitempty" default:"3" minimum:"1" maximum:"10"`
		Ratio    float64            `json:"ratio,omitempty" default:"0.5" minimum:"-1.5e300" maximum:"1e-7"`
		Mode     string             `json:"mode,omitempty" enum:"a&b,<x>" default:"<x>"`
		When     time.Time          `json:"when,omitempty" format:"date-time"`
		Inner    msInner            `json:"inner"`
		PInner   *msInner           `json:"p_inner,omitempty"`
		List     []msInner          `json:"list,omitempty"`
		Matrix   [][]int            `json:"matrix,omitempty"`
		Fixed    [3]uint8           `json:"fixed,omitempty"`
		Any      any                `json:"any,omitempty"`
		Raw      json.RawMessage    `json:"raw,omitempty"`
		ByName   map[string]msInner `json:"by_name,omitempty"`
		Flag     bool               `json:"flag,omitempty" default:"true"`
		Obj      map[string]any     `json:"obj,omitempty" default:"{\"k\": [1, \"<v>\"]}"`
		Unsigned uint32             `json:"unsigned,omitempty"`
		NoTag    string
		skipped  string
		Dash     string `json:"-"`
		msEmbedded
	}
	msEmbedded struct {
		Extra string `json:"extra,omitempty" jsonschema:"from an embedded struct"`
	}
)

// TestMarshalSchema checks that marshalSchema writes exactly what
// json.Marshal writes: for inferred schemas of many types (random
// structs too), and for schemas with keywords it leaves to json.Marshal.
func TestMarshalSchema(t *testing.T) {
	check := func(name string, s *jsonschema.Schema) {
		t.Helper()
		want, werr := json.Marshal(s)
		got, gerr := marshalSchema(s)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("%s: errors differ: json.Marshal %v, marshalSchema %v", name, werr, gerr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	inferred := func(typ reflect.Type) *jsonschema.Schema {
		s, err := jsonschema.ForType(typ, &jsonschema.ForOptions{})
		if err != nil {
			t.Fatalf("%v: %v", typ, err)
		}
		if err := applyTags(typ, s, map[string]any{}); err != nil {
			t.Fatalf("%v: %v", typ, err)
		}
		return s
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[msAll](), reflect.TypeFor[*msAll](), reflect.TypeFor[[]msAll](), reflect.TypeFor[msInner](),
		reflect.TypeFor[struct{}](), reflect.TypeFor[map[string]int](), reflect.TypeFor[string](), reflect.TypeFor[[]byte](),
	} {
		check(typ.String(), inferred(typ))
	}

	// Keywords inference does not produce go through json.Marshal, at
	// any depth, and the output is still the same.
	f, n := 2.5, 4
	var c any = "<c>"
	odd := []*jsonschema.Schema{
		{Not: &jsonschema.Schema{}},
		{},
		{Type: "string", Const: &c},
		{Types: []string{"null", "string"}, MultipleOf: &f},
		{Ref: "#/$defs/x", Defs: map[string]*jsonschema.Schema{"x": {Type: "integer"}}},
		{AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "integer", Minimum: &f}}},
		{Type: "object", Extra: map[string]any{"x-custom": "<v>"}},
		{Type: "array", ItemsArray: []*jsonschema.Schema{{Type: "string"}}, MinContains: &n},
		{Type: "object", Properties: map[string]*jsonschema.Schema{}, PropertyOrder: []string{"b"}},
		{Type: "object", Properties: map[string]*jsonschema.Schema{"a": nil, "b": {}}, PropertyOrder: []string{"b", "zz"}},
		{Type: "string", Types: []string{"string"}},                                                                                           // an error for both
		{Type: "object", Properties: map[string]*jsonschema.Schema{"a": {}}, PropertyOrder: []string{"a", "a"}},                               // an error for both
		{Type: "string", Default: json.RawMessage(`{"a" :  "<&>\u2028"}`)},                                                                    // compacted, escaped
		{Type: "string", Default: json.RawMessage(`{not json`)},                                                                               // an error for both
		{Type: "object", AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}, Required: []string{"<a>"}, Description: "\x01"}, // false below
	}
	for i, s := range odd {
		check(fmt.Sprintf("odd %d", i), s)
		check(fmt.Sprintf("odd %d nested", i), &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"p": s},
			Items: s, AdditionalProperties: s})
	}

	// Random struct types: field types drawn from a pool, with and without
	// the tags inference reads.
	r := rand.New(rand.NewPCG(1, 2))
	pool := []reflect.Type{
		reflect.TypeFor[string](), reflect.TypeFor[int](), reflect.TypeFor[float64](), reflect.TypeFor[bool](),
		reflect.TypeFor[[]string](), reflect.TypeFor[map[string]int](), reflect.TypeFor[*int](), reflect.TypeFor[msInner](),
		reflect.TypeFor[[]msInner](), reflect.TypeFor[any](), reflect.TypeFor[uint16](), reflect.TypeFor[[2]float32](),
	}
	tags := []string{``, `jsonschema:"about <it>"`, `minimum:"1"`, `maximum:"2.5"`, `minLength:"2"`, `maxItems:"4"`, `format:"uri"`, `pattern:"a|b"`}
	var random func(depth int) reflect.Type
	random = func(depth int) reflect.Type {
		var fields []reflect.StructField
		for i := range r.IntN(7) {
			ft := pool[r.IntN(len(pool))]
			if depth < 2 && r.IntN(5) == 0 {
				ft = random(depth + 1)
				if r.IntN(2) == 0 {
					ft = reflect.SliceOf(ft)
				}
			}
			name := fmt.Sprintf("F%d", i)
			tag := fmt.Sprintf(`json:"%s%s"`, []string{"f", "<f>", "f_"}[r.IntN(3)]+fmt.Sprint(i), []string{"", ",omitempty"}[r.IntN(2)])
			if t := tags[r.IntN(len(tags))]; t != "" && ft.Kind() != reflect.Struct {
				tag += " " + t
			}
			fields = append(fields, reflect.StructField{Name: name, Type: ft, Tag: reflect.StructTag(tag)})
		}
		return reflect.StructOf(fields)
	}
	for i := range 500 {
		typ := random(0)
		s, err := jsonschema.ForType(typ, &jsonschema.ForOptions{})
		if err != nil {
			continue
		}
		if applyTags(typ, s, map[string]any{}) != nil {
			continue // a tag that does not fit its field's type
		}
		check(fmt.Sprintf("random %d %v", i, typ), s)
	}
}

// BenchmarkMarshalSchema compares marshalSchema with json.Marshal on the
// schema of a large input type.
func BenchmarkMarshalSchema(b *testing.B) {
	typ := reflect.TypeFor[msAll]()
	s, err := jsonschema.ForType(typ, &jsonschema.ForOptions{})
	if err != nil || applyTags(typ, s, map[string]any{}) != nil {
		b.Fatal(err)
	}
	for _, m := range []struct {
		name string
		fn   func(*jsonschema.Schema) ([]byte, error)
	}{{"json.Marshal", func(s *jsonschema.Schema) ([]byte, error) { return json.Marshal(s) }}, {"marshalSchema", marshalSchema}} {
		b.Run(m.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := m.fn(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInfer is the inference of one tool's input schema.
func BenchmarkInfer(b *testing.B) {
	for b.Loop() {
		if _, err := infer(reflect.TypeFor[msAll]()); err != nil {
			b.Fatal(err)
		}
	}
}
