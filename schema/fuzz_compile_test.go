package schema

import (
	"encoding/json"
	"testing"
)

// FuzzNormalizeCompileFor feeds arbitrary schemas to Normalize and
// CompileFor: they never panic, a normalized schema always compiles, and a
// compiled schema always meets its provider's constraints and compiles as
// JSON Schema (Gemini's read back); mapping arguments back never panics.
func FuzzNormalizeCompileFor(f *testing.F) {
	for _, s := range compileCorpus {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"type":"dict","properties":{"a":{"type":"tuple","items":{"type":"float"}},"b":{"type":"HashMap","optional":true}},"required":["a","b"]}`,
		`{"definitions":{"a":{"items":[{"$ref":"#/definitions/a"}]}},"$ref":"#/definitions/a"}`,
		`{"properties":{"n":{"nullable":true,"allOf":[{"$ref":"#"}]}},"dependencies":{"n":["m"]}}`,
		`{"type":["object","null"],"properties":{"x":{"type":"integer","default":"dontcare","enum":[1]}}}`,
		`{"anyOf":[{"$ref":"#/$defs/a"},true],"$defs":{"a":{"properties":{"q":false}}}}`,
	} {
		f.Add([]byte(s))
	}
	args := []map[string]any{
		{}, {"a": nil, "b": "{\"k\":1}", "x": []any{"1", nil, map[string]any{"q": "[]"}}},
		{"n": map[string]any{"n": nil}, "user_id": "x", "tree": "{"},
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, _, err := Normalize(raw)
		if err == nil {
			if _, err := Compile(out); err != nil {
				t.Fatalf("normalized schema does not compile: %v\n%s", err, out)
			}
		}
		for _, p := range Providers() {
			c, err := CompileFor(p, raw)
			if err != nil {
				continue
			}
			if err := checkProvider(p, c.Schema); err != nil {
				t.Fatalf("%s: %v\n%s\nfrom %s", p, err, c.Schema, raw)
			}
			check := c.Schema
			if p == Gemini && check != nil {
				var v any
				if err := json.Unmarshal(check, &v); err != nil {
					t.Fatal(err)
				}
				check, _ = json.Marshal(geminiToJSONSchema(v))
			}
			if check != nil {
				if _, err := Compile(check); err != nil {
					t.Fatalf("%s: compiled schema does not compile: %v\n%s", p, err, c.Schema)
				}
			}
			for _, a := range args {
				c.ToolArguments(a)
			}
		}
	})
}
