package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The vendors' published constraints, as checks.

var (
	strictAllowed   = []string{"type", "description", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "$ref", "$defs", "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "minItems", "maxItems"}
	geminiAllowed   = []string{"type", "format", "description", "nullable", "enum", "items", "minItems", "maxItems", "properties", "required", "minimum", "maximum", "anyOf"}
	geminiTypes     = []string{"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"}
	geminiParamName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{0,63}$`)
)

// checkStrict checks OpenAI's strict-mode rules: the root an object (not
// anyOf), every object closed with every property required, only the
// supported keywords and formats, every schema typed (or a $ref, anyOf,
// enum or const), $refs resolving, the published limits.
func checkStrict(schema json.RawMessage) error {
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return err
	}
	if root["type"] != "object" || root["anyOf"] != nil {
		return fmt.Errorf("root must be type object, not anyOf: %v", root["type"])
	}
	var check func(v any, ptr string, nesting int) error
	check = func(v any, ptr string, nesting int) error {
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: a schema must be an object, got %T", ptr, v)
		}
		for k := range m {
			if !slices.Contains(strictAllowed, k) {
				return fmt.Errorf("%s: keyword %q not supported in strict mode", ptr, k)
			}
		}
		if f, ok := m["format"].(string); ok && !slices.Contains(strictFormats, f) {
			return fmt.Errorf("%s: format %q not supported", ptr, f)
		}
		if !hasAny(m, "type", "$ref", "anyOf", "enum", "const") {
			return fmt.Errorf("%s: no type", ptr)
		}
		if r, ok := m["$ref"].(string); ok {
			if len(m) > 2 || len(m) == 2 && m["description"] == nil {
				return fmt.Errorf("%s: keywords beside $ref", ptr)
			}
			if !canonicalRef(r, root) {
				return fmt.Errorf("%s: $ref %q is not # nor a root definition", ptr, r)
			}
		}
		types := typeNames(m["type"])
		if slices.Contains(types, "object") {
			if m["additionalProperties"] != false {
				return fmt.Errorf("%s: additionalProperties must be false", ptr)
			}
			props, ok := m["properties"].(map[string]any)
			if !ok {
				return fmt.Errorf("%s: an object without properties", ptr)
			}
			req, _ := m["required"].([]any)
			if len(req) != len(props) {
				return fmt.Errorf("%s: %d properties but %d required", ptr, len(props), len(req))
			}
			for _, r := range req {
				if _, ok := props[r.(string)]; !ok {
					return fmt.Errorf("%s: required %q is no property", ptr, r)
				}
			}
			if nesting+1 > StrictMaxNesting {
				return fmt.Errorf("%s: nested too deep", ptr)
			}
			for name, p := range props {
				if err := check(p, ptr+"/properties/"+name, nesting+1); err != nil {
					return err
				}
			}
		}
		if slices.Contains(types, "array") {
			if err := check(m["items"], ptr+"/items", nesting); err != nil {
				return err
			}
		}
		if list, ok := m["anyOf"].([]any); ok {
			for i, b := range list {
				if err := check(b, fmt.Sprintf("%s/anyOf/%d", ptr, i), nesting); err != nil {
					return err
				}
			}
		}
		if e, ok := m["enum"].([]any); ok && len(e) == 0 {
			return fmt.Errorf("%s: empty enum", ptr)
		}
		return nil
	}
	if err := check(root, "", 0); err != nil {
		return err
	}
	for name, d := range mapOf(root["$defs"]) {
		if err := check(d, "/$defs/"+name, 0); err != nil {
			return err
		}
	}
	return checkStrictLimits(root)
}

// checkGemini checks Gemini's OpenAPI subset: the supported fields only
// (no $ref, $defs, additionalProperties, oneOf, allOf, const, default…),
// one type in capitals, nullable rather than a null type, enum only on
// strings, the format subset, property names Gemini accepts, and no
// object without properties.
func checkGemini(schema json.RawMessage) error {
	if schema == nil {
		return nil
	}
	var root any
	if err := json.Unmarshal(schema, &root); err != nil {
		return err
	}
	if mapOf(root)["type"] != "OBJECT" {
		return fmt.Errorf("root must be OBJECT")
	}
	var check func(v any, ptr string) error
	check = func(v any, ptr string) error {
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: a schema must be an object", ptr)
		}
		for k := range m {
			if !slices.Contains(geminiAllowed, k) {
				return fmt.Errorf("%s: field %q not in Gemini's schema", ptr, k)
			}
		}
		t, _ := m["type"].(string)
		if t == "" && m["anyOf"] == nil {
			return fmt.Errorf("%s: no type", ptr)
		}
		if t != "" && !slices.Contains(geminiTypes, t) {
			return fmt.Errorf("%s: type %v", ptr, m["type"])
		}
		if f, ok := m["format"].(string); ok && !slices.Contains(geminiFormats[strings.ToLower(t)], f) {
			return fmt.Errorf("%s: format %q for %s", ptr, f, t)
		}
		if e, ok := m["enum"].([]any); ok {
			if t != "STRING" {
				return fmt.Errorf("%s: enum on %s", ptr, t)
			}
			for _, v := range e {
				if _, ok := v.(string); !ok {
					return fmt.Errorf("%s: enum value %v is not a string", ptr, v)
				}
			}
		}
		if t == "OBJECT" {
			props := mapOf(m["properties"])
			if len(props) == 0 {
				return fmt.Errorf("%s: OBJECT without properties", ptr)
			}
			for name, p := range props {
				if !geminiParamName.MatchString(name) {
					return fmt.Errorf("%s: property name %q", ptr, name)
				}
				if err := check(p, ptr+"/properties/"+name); err != nil {
					return err
				}
			}
			req, _ := m["required"].([]any)
			for _, r := range req {
				if _, ok := props[r.(string)]; !ok {
					return fmt.Errorf("%s: required %q is no property", ptr, r)
				}
			}
		}
		if t == "ARRAY" {
			if err := check(m["items"], ptr+"/items"); err != nil {
				return err
			}
		}
		for i, b := range mapList(m["anyOf"]) {
			if err := check(b, fmt.Sprintf("%s/anyOf/%d", ptr, i)); err != nil {
				return err
			}
		}
		return nil
	}
	return check(root, "")
}

// checkPlain checks what OpenAI (non-strict) and Anthropic require: a root
// of type object with properties, and no anyOf, oneOf or allOf at the top.
func checkPlain(schema json.RawMessage) error {
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return err
	}
	if root["type"] != "object" || root["properties"] == nil || hasAny(root, "anyOf", "oneOf", "allOf", "$ref") {
		return fmt.Errorf("root must be an object with properties and no anyOf/oneOf/allOf/$ref: %s", schema)
	}
	_, err := Compile(schema)
	return err
}

func checkProvider(p Provider, schema json.RawMessage) error {
	switch p {
	case OpenAIStrict:
		return checkStrict(schema)
	case Gemini:
		return checkGemini(schema)
	}
	return checkPlain(schema)
}

var compileCorpus = append(slices.Clone(fuzzSchemas),
	`{}`,
	`{"type":"object","properties":{}}`,
	`{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"integer"}},"required":["b","a"]}]}`,
	`{"$ref":"#/$defs/args","$defs":{"args":{"type":"object","properties":{"n":{"type":"integer"}}}}}`,
	`{"type":"object","properties":{"when":{"type":"string","format":"uri","title":"When"},"list":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false},"m":{"type":"object","additionalProperties":{"type":"integer"}},"c":{"const":3},"u":{"type":["string","integer"]},"x":{"oneOf":[{"type":"string"},{"type":"object","properties":{"q":{"type":"string"}}}]},"all":{"allOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"properties":{"b":{"type":"number"}},"required":["b"]}]},"my-name":{"type":"string","enum":["a","b"]},"nul":{"type":"null"},"f":false,"t":true}}`,
	`{"type":"object","properties":{"tree":{"$ref":"#"},"name":{"type":"string"}}}`,
)

func TestCompileForVendorConstraints(t *testing.T) {
	for i, in := range compileCorpus {
		for _, p := range Providers() {
			c, err := CompileFor(p, json.RawMessage(in))
			if err != nil {
				t.Errorf("%d %s: %v\n%s", i, p, err, in)
				continue
			}
			if err := checkProvider(p, c.Schema); err != nil {
				t.Errorf("%d %s: %v\n%s", i, p, err, c.Schema)
			}
		}
	}
}

func TestCompileForStrict(t *testing.T) {
	in := `{"type":"object","properties":{
		"path":{"type":"string","minLength":1,"description":"the file"},
		"limit":{"type":"integer","default":500,"maximum":2000},
		"mode":{"enum":["a","b"]},
		"meta":{"type":"object","description":"free-form labels"},
		"maybe":{"type":["string","null"]},
		"node":{"$ref":"#/$defs/node"}},
		"required":["path","maybe"],
		"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}}}`
	c, err := CompileFor(OpenAIStrict, json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, c.Schema, `{"type":"object","additionalProperties":false,
		"required":["limit","maybe","meta","mode","node","path"],
		"properties":{
		"path":{"type":"string","description":"the file (minLength: 1)"},
		"limit":{"type":["integer","null"],"maximum":2000,"description":"Default: 500"},
		"mode":{"enum":["a","b",null]},
		"meta":{"type":["string","null"],"description":"free-form labels (A JSON-encoded string holding a JSON object.)"},
		"maybe":{"type":["string","null"]},
		"node":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},
		"$defs":{"node":{"type":"object","additionalProperties":false,"required":["kids","v"],"properties":{"v":{"type":"integer"},"kids":{"type":["array","null"],"items":{"$ref":"#/$defs/node"}}}}}}`)

	// What a model sends under strict mode comes back in the tool's shape.
	model := `{"path":"a.go","limit":null,"mode":null,"meta":"{\"k\":[1,2]}","maybe":null,
		"node":{"v":1,"kids":[{"v":2,"kids":null},{"v":3,"kids":[]}]}}`
	args, terr := ParseArguments([]byte(model))
	if terr != nil {
		t.Fatal(terr)
	}
	strictSchema, err := Compile(c.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if errs := strictSchema.Validate(args); errs != nil {
		t.Fatalf("the model's arguments break the strict schema: %v", errs)
	}
	got := c.ToolArguments(args)
	want, _ := ParseArguments([]byte(`{"path":"a.go","meta":{"k":[1,2]},"maybe":null,"node":{"v":1,"kids":[{"v":2},{"v":3,"kids":[]}]}}`))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ToolArguments:\n got %v\nwant %v", got, want)
	}
	orig, _ := Compile(json.RawMessage(in))
	if errs := orig.Validate(got); errs != nil {
		t.Errorf("mapped arguments break the tool's schema: %v", errs)
	}
	if args["limit"] != nil || len(args) != 6 {
		t.Errorf("ToolArguments modified its input: %v", args)
	}
	// A JSON string that does not decode stays a string for validation to report.
	bad, _ := ParseArguments([]byte(`{"path":"a","maybe":null,"meta":"{nope","limit":null,"mode":null,"node":null}`))
	if got := c.ToolArguments(bad); got["meta"] != "{nope" || len(got) != 3 {
		t.Errorf("undecodable JSON string: %v", got)
	}
}

func TestCompileForGemini(t *testing.T) {
	in := `{"type":"object","properties":{
		"user-id":{"type":"string","format":"uuid"},
		"n":{"type":["integer","null"],"enum":[1,2,null],"format":"int32"},
		"kind":{"const":"x"},
		"when":{"type":"string","format":"date-time"},
		"opts":{"type":"object","additionalProperties":{"type":"string"}},
		"tree":{"$ref":"#/$defs/t"}},
		"required":["user-id"],
		"$defs":{"t":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/t"}},"v":{"type":"integer"}}}}}`
	c, err := CompileFor(Gemini, json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, c.Schema, `{"type":"OBJECT","required":["user_id"],"properties":{
		"user_id":{"type":"STRING","description":"format: \"uuid\""},
		"n":{"type":"INTEGER","nullable":true,"format":"int32","description":"one of [1,2,null]"},
		"kind":{"type":"STRING","enum":["x"]},
		"when":{"type":"STRING","format":"date-time"},
		"opts":{"type":"STRING","description":"A JSON-encoded string holding a JSON object."},
		"tree":{"type":"OBJECT","properties":{"v":{"type":"INTEGER"},"kids":{"type":"ARRAY","items":{"type":"STRING","description":"A JSON-encoded string holding a value of the recursive schema #/$defs/t."}}}}}}`)
	args, _ := ParseArguments([]byte(`{"user_id":"u1","opts":"{\"a\":\"b\"}","tree":{"v":1,"kids":["{\"v\":2}"]}}`))
	got := c.ToolArguments(args)
	want, _ := ParseArguments([]byte(`{"user-id":"u1","opts":{"a":"b"},"tree":{"v":1,"kids":[{"v":2}]}}`))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ToolArguments:\n got %v\nwant %v", got, want)
	}
	// No parameters: Gemini gets none.
	if c, err := CompileFor(Gemini, json.RawMessage(`{"type":"object"}`)); err != nil || c.Schema != nil {
		t.Errorf("no parameters: %s, %v", c.Schema, err)
	}
}

func TestCompileForPlain(t *testing.T) {
	in := `{"$schema":"http://json-schema.org/draft-07/schema#","oneOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"string"}},"required":["b"]}]}`
	for _, p := range []Provider{OpenAI, Anthropic} {
		c, err := CompileFor(p, json.RawMessage(in))
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, c.Schema, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`)
		if c.plan != nil {
			t.Errorf("%s: a plan where nothing needs mapping back", p)
		}
		args := map[string]any{"a": "x"}
		if got := c.ToolArguments(args); !reflect.DeepEqual(got, args) {
			t.Errorf("ToolArguments changed arguments: %v", got)
		}
	}
}

func TestCompileForHostile(t *testing.T) {
	// A chain of definitions each referring to the next twice: inlining
	// for Gemini would double at each step.
	var defs []string
	for i := range 30 {
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{"a":{"$ref":"#/$defs/d%d"},"b":{"$ref":"#/$defs/d%d"}}}`, i, i+1, i+1))
	}
	defs = append(defs, `"d30":{"type":"string"}`)
	doubling := `{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"$defs":{` + strings.Join(defs, ",") + `}}`
	// Ten references a step: inlined 8 deep that is 10^8 nodes.
	defs = defs[:0]
	for i := range 30 {
		var ps []string
		for j := range 10 {
			ps = append(ps, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/d%d"}`, j, i+1))
		}
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{%s}}`, i, strings.Join(ps, ",")))
	}
	defs = append(defs, `"d30":{"type":"string"}`)
	fanning := `{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"$defs":{` + strings.Join(defs, ",") + `}}`
	wide := `{"type":"object","properties":{` + strings.Repeat(`"p":{"type":"string"},`, 0)
	var props []string
	for i := range 1100 {
		props = append(props, fmt.Sprintf(`"p%d":{"type":"string","enum":["a"]}`, i))
	}
	wide += strings.Join(props, ",") + `}}`
	deep := `{"type":"object","properties":{"a":` + strings.Repeat(`{"type":"object","properties":{"a":`, 11) + `{"type":"string"}` + strings.Repeat(`}}`, 11) + `}}`
	tests := []struct {
		p    Provider
		in   string
		want error
	}{
		{Gemini, fanning, ErrUnsupported},
		{OpenAIStrict, wide, ErrUnsupported},
		{OpenAIStrict, deep, ErrUnsupported},
		{OpenAI, `{"$ref":"#"}`, ErrInvalidSchema},
		{Anthropic, `{"$ref":"https://evil.example/s.json"}`, ErrInvalidSchema},
		{Gemini, `[]`, ErrInvalidSchema},
		{"cohere", `{}`, ErrUnsupported},
	}
	for _, tt := range tests {
		if _, err := CompileFor(tt.p, json.RawMessage(tt.in)); !errors.Is(err, tt.want) {
			t.Errorf("%s %.50s: %v, want %v", tt.p, tt.in, err, tt.want)
		}
	}
	// The doubling chain is fine: references stay references, or Gemini
	// inlines them GeminiMaxInlineDepth deep.
	for _, p := range Providers() {
		c, err := CompileFor(p, json.RawMessage(doubling))
		if err != nil {
			t.Errorf("%s: %v", p, err)
		} else if err := checkProvider(p, c.Schema); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
