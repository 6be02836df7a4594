package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestLintBuiltinTools(t *testing.T) {
	ws := workspace(t)
	r := toolgate(t, ws, "", "lint")
	if r.code != 0 || !strings.Contains(r.stdout, " 0 errors") {
		t.Fatalf("lint of the built-in tools: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("built-in tools:\n%s", r.stdout)
	for _, p := range []string{"openai-strict", "openai", "anthropic", "gemini"} {
		r := toolgate(t, ws, "", "lint", "--json", "--provider", p)
		var out struct {
			Tools    int `json:"tools"`
			Errors   int `json:"errors"`
			Findings []struct{ Tool, Rule, Severity, Message string }
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("%s: %v\n%s", p, err, r.stdout)
		}
		if r.code != 0 || out.Errors != 0 || out.Tools < 10 {
			t.Errorf("%s: exit %d, %d errors in %d tools: %+v", p, r.code, out.Errors, out.Tools, out.Findings)
		}
	}
	// The same definitions read back from toolgate tools --format mcp.
	mcp := toolgate(t, ws, "", "tools", "--format", "mcp")
	if r := toolgate(t, ws, mcp.stdout, "lint", "-"); r.code != 0 || !strings.Contains(r.stdout, " 0 errors") {
		t.Errorf("lint of tools --format mcp: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestLintBadTools(t *testing.T) {
	bad, err := filepath.Abs(filepath.Join("..", "..", "schema", "testdata", "bad_tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace(t)
	r := toolgate(t, ws, "", "lint", bad)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		`error rf: the name "rf" does not explain itself`, "[name-duplicate]", `error tool_03: the name "tool_03"`, "[description-missing]",
		"warning GetWeather: the name \"GetWeather\" is not snake_case", "error GetWeather/properties/city: the parameter \"city\" has no description",
		"[param-enum]", "[overlap]", "error search.docs: the name", "error broken_schema_tool: the input schema does not compile",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	j := toolgate(t, ws, "", "lint", "--json", "--provider", "openai-strict", bad)
	var out struct {
		Errors, Warnings int
		Findings         []struct{ Rule, Severity, Suggestion string }
	}
	if err := json.Unmarshal([]byte(j.stdout), &out); err != nil || j.code != 1 || out.Errors < 10 || out.Warnings < 5 {
		t.Errorf("--json: exit %d, %v, %d errors, %d warnings\n%s", j.code, err, out.Errors, out.Warnings, j.stdout)
	}
	for _, args := range [][]string{{"lint", "--provider", "cohere"}, {"lint", filepath.Join(ws, "missing.json")}, {"tools", "--format", "langchain"}} {
		if r := toolgate(t, ws, "", args...); r.code != 2 || r.stderr == "" {
			t.Errorf("%v: exit %d, stderr %q, want a usage error", args, r.code, r.stderr)
		}
	}
	if r := toolgate(t, ws, `{"name":"x"}`, "lint", "-"); r.code != 2 || !strings.Contains(r.stderr, "JSON array") {
		t.Errorf("not an array: exit %d %q", r.code, r.stderr)
	}
}

// The vendors' published constraints on the tools parameter.
var (
	openaiName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	geminiName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$`)
	geminiProp = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{0,63}$`)
)

// checkStrictSchema: every object closed with every property required, no
// keyword outside strict mode's subset, the root an object.
func checkStrictSchema(v any, ptr string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: not a schema", ptr)
	}
	allowed := []string{"type", "description", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "$ref", "$defs",
		"pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "minItems", "maxItems"}
	for k := range m {
		if !slices.Contains(allowed, k) {
			return fmt.Errorf("%s: %q not supported in strict mode", ptr, k)
		}
	}
	if props, ok := m["properties"].(map[string]any); ok || m["type"] == "object" {
		if m["additionalProperties"] != false {
			return fmt.Errorf("%s: object not closed", ptr)
		}
		req, _ := m["required"].([]any)
		if len(req) != len(props) {
			return fmt.Errorf("%s: not every property required", ptr)
		}
		for name, p := range props {
			if err := checkStrictSchema(p, ptr+"/properties/"+name); err != nil {
				return err
			}
		}
	}
	if it, ok := m["items"]; ok {
		return checkStrictSchema(it, ptr+"/items")
	}
	return nil
}

// checkGeminiSchema: Gemini's OpenAPI subset.
func checkGeminiSchema(v any, ptr string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: not a schema", ptr)
	}
	allowed := []string{"type", "format", "description", "nullable", "enum", "items", "minItems", "maxItems", "properties", "required", "minimum", "maximum", "anyOf"}
	for k := range m {
		if !slices.Contains(allowed, k) {
			return fmt.Errorf("%s: %q is not in Gemini's schema", ptr, k)
		}
	}
	if t, ok := m["type"].(string); !ok || !slices.Contains([]string{"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"}, t) {
		return fmt.Errorf("%s: type %v", ptr, m["type"])
	}
	if _, ok := m["enum"]; ok && m["type"] != "STRING" {
		return fmt.Errorf("%s: enum on %v", ptr, m["type"])
	}
	if props, ok := m["properties"].(map[string]any); ok || m["type"] == "OBJECT" {
		if len(props) == 0 {
			return fmt.Errorf("%s: OBJECT without properties", ptr)
		}
		for name, p := range props {
			if !geminiProp.MatchString(name) {
				return fmt.Errorf("%s: property name %q", ptr, name)
			}
			if err := checkGeminiSchema(p, ptr+"/properties/"+name); err != nil {
				return err
			}
		}
	}
	if it, ok := m["items"]; ok {
		return checkGeminiSchema(it, ptr+"/items")
	}
	return nil
}

func TestToolsVendorFormats(t *testing.T) {
	ws := workspace(t)
	decode := func(format string, v any) {
		t.Helper()
		r := toolgate(t, ws, "", "tools", "--format", format)
		if r.code != 0 {
			t.Fatalf("%s: exit %d: %s", format, r.code, r.stderr)
		}
		if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
	}
	type fn struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
		Strict      *bool          `json:"strict"`
	}
	checkFn := func(format string, f fn, strict bool) {
		t.Helper()
		if !openaiName.MatchString(f.Name) || f.Description == "" || f.Parameters["type"] != "object" || f.Parameters["properties"] == nil {
			t.Errorf("%s %s: bad function %+v", format, f.Name, f)
		}
		for _, k := range []string{"anyOf", "oneOf", "allOf", "$ref"} {
			if _, ok := f.Parameters[k]; ok {
				t.Errorf("%s %s: %s at the root", format, f.Name, k)
			}
		}
		if strict {
			if f.Strict == nil || !*f.Strict {
				t.Errorf("%s %s: strict is not true", format, f.Name)
			}
			if err := checkStrictSchema(f.Parameters, ""); err != nil {
				t.Errorf("%s %s: %v", format, f.Name, err)
			}
		}
	}
	for _, format := range []string{"openai", "openai-strict"} {
		var tools []struct {
			Type     string `json:"type"`
			Function fn     `json:"function"`
		}
		decode(format, &tools)
		if len(tools) < 10 {
			t.Fatalf("%s: %d tools", format, len(tools))
		}
		for _, tl := range tools {
			if tl.Type != "function" {
				t.Errorf("%s: type %q", format, tl.Type)
			}
			checkFn(format, tl.Function, format == "openai-strict")
			if format == "openai" && tl.Function.Strict != nil {
				t.Errorf("openai: strict set")
			}
		}
	}
	var responses []struct {
		Type string `json:"type"`
		fn
	}
	decode("openai-responses", &responses)
	for _, tl := range responses {
		if tl.Type != "function" {
			t.Errorf("responses: type %q", tl.Type)
		}
		checkFn("openai-responses", tl.fn, true)
	}
	var anthropic []map[string]any
	decode("anthropic", &anthropic)
	for _, tl := range anthropic {
		schema, _ := tl["input_schema"].(map[string]any)
		name, _ := tl["name"].(string)
		if len(tl) != 3 || !openaiName.MatchString(name) || tl["description"] == "" || schema["type"] != "object" {
			t.Errorf("anthropic: bad tool %v", tl)
		}
	}
	var gemini []struct {
		FunctionDeclarations []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"functionDeclarations"`
	}
	decode("gemini", &gemini)
	if len(gemini) != 1 || len(gemini[0].FunctionDeclarations) < 10 {
		t.Fatalf("gemini: %+v", gemini)
	}
	for _, d := range gemini[0].FunctionDeclarations {
		if !geminiName.MatchString(d.Name) || d.Description == "" {
			t.Errorf("gemini: bad declaration %+v", d)
		}
		if d.Parameters != nil {
			if err := checkGeminiSchema(d.Parameters, ""); err != nil {
				t.Errorf("gemini %s: %v", d.Name, err)
			}
		}
	}
}
