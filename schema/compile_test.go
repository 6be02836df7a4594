package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCompileHostile(t *testing.T) {
	// 40 levels of allOf:[$ref next, $ref next]: 2^40 nodes on one value.
	var defs []string
	for i := range 40 {
		defs = append(defs, fmt.Sprintf(`"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, `"d40":{"type":"object"}`)
	fanOut := `{"$ref":"#/$defs/d0","$defs":{` + strings.Join(defs, ",") + `}}`
	// The same, but each level one property further down.
	defs = defs[:0]
	for i := range 40 {
		defs = append(defs, fmt.Sprintf(`"d%d":{"properties":{"x":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}}}`, i, i+1, i+1))
	}
	defs = append(defs, `"d40":{"type":"object"}`)
	nestedFanOut := `{"$ref":"#/$defs/d0","$defs":{` + strings.Join(defs, ",") + `}}`

	tests := []struct{ name, schema, want string }{
		{"too large", `{"description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`, "over the limit"},
		{"too many objects", `{"items":` + strings.Repeat(`[{"type":"object"},`, 20) + strings.Repeat(`{},`, MaxSchemaObjects) + `{}` + strings.Repeat(`]`, 20) + `}`, "objects, over the limit"},
		{"too deep", strings.Repeat(`{"items":`, 200) + `{}` + strings.Repeat(`}`, 200), "nested deeper than 128"},
		{"malformed", `{"type":"object",}`, "trailing comma"},
		{"not an object", `[{"type":"object"}]`, "must be a JSON object"},
		{"remote ref", `{"$ref":"https://example.com/schema.json"}`, "only local references"},
		{"file ref", `{"$ref":"file:///etc/passwd"}`, "only local references"},
		{"relative ref", `{"properties":{"a":{"$ref":"other.json#/x"}}}`, "only local references"},
		{"unknown $schema", `{"$schema":"https://example.com/my-meta","type":"object"}`, "only local references"},
		{"self cycle", `{"$ref":"#"}`, "never consumes any input"},
		{"two-step cycle", `{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}}}`, "never consumes any input"},
		{"fan-out", fanOut, "more than 10000 schemas to one value"},
		{"nested fan-out", nestedFanOut, "more than 10000 schemas to one nested value"},
		{"look-ahead pattern", `{"properties":{"a":{"type":"string","pattern":"^(?=a)"}}}`, "pattern"},
		{"bad type", `{"type":"objekt"}`, "invalid input schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(json.RawMessage(tt.schema))
			if err == nil {
				t.Fatalf("Compile succeeded (%v), want an error", s != nil)
			}
			if !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want ErrInvalidSchema containing %q", err, tt.want)
			}
		})
	}
}

func TestCompileRecursive(t *testing.T) {
	// A legitimately recursive schema: each $ref consumes one level of input.
	s := mustCompile(t, `{"$ref":"#/$defs/node","$defs":{"node":{"type":"object",
		"properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},
		"required":["name"]}}}`)
	v := `{"name":"leaf"}`
	for range 30 {
		v = `{"name":"n","children":[` + v + `,{"name":"x"}]}`
	}
	if errs := s.Validate(parse(t, v)); errs != nil {
		t.Fatalf("deep valid tree: %+v", errs)
	}
	bad := strings.Replace(v, `{"name":"leaf"}`, `{"name":5}`, 1)
	errs := s.Validate(parse(t, bad))
	if len(errs) != 1 || !strings.HasSuffix(errs[0].Pointer, "/children/0/name") || strings.Count(errs[0].Pointer, "children") != 30 {
		t.Fatalf("deep invalid tree: %+v", errs)
	}
}
