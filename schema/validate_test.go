package schema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

const editSchema = `{"type":"object","properties":{
	"path":{"type":"string","minLength":1},
	"count":{"type":"integer","minimum":1},
	"mode":{"enum":["a","b"]},
	"ratio":{"type":"number","exclusiveMaximum":1},
	"tags":{"type":"array","items":{"type":"string"},"maxItems":2},
	"edits":{"type":"array","items":{"type":"object","properties":{"old_string":{"type":"string"},"new_string":{"type":"string"}},"required":["old_string","new_string"],"additionalProperties":false}},
	"a/b":{"type":"boolean"}},
	"required":["path"],"additionalProperties":false}`

func parse(t *testing.T, in string) map[string]any {
	t.Helper()
	args, err := ParseArguments([]byte(in))
	if err != nil {
		t.Fatalf("ParseArguments(%s): %v", in, err)
	}
	return args
}

func TestRequiresAndEmptyArguments(t *testing.T) {
	s := mustCompile(t, editSchema)
	if !s.Requires() {
		t.Error("Requires() = false for a schema with a required property")
	}
	for _, in := range []string{"", "null", "{}"} {
		errs := s.Validate(parse(t, in))
		want := []FieldError{{Pointer: "/path", Expected: "required property (string with at least 1 character)", Got: "nothing", Message: `/path: required property "path" is missing`}}
		if !reflect.DeepEqual(errs, want) {
			t.Errorf("Validate(%q) = %+v, want %+v", in, errs, want)
		}
	}
	if errs := s.Validate(nil); len(errs) != 1 || errs[0].Pointer != "/path" {
		t.Errorf("Validate(nil) = %+v, want the missing /path", errs)
	}

	opt := mustCompile(t, `{"type":"object","properties":{"verbose":{"type":"boolean"}}}`)
	if opt.Requires() {
		t.Error("Requires() = true for a schema without required properties")
	}
	if errs := opt.Validate(map[string]any{}); errs != nil {
		t.Errorf("Validate({}) = %+v, want nil", errs)
	}
	// The shortcut for {} never skips present data.
	if errs := opt.Validate(parse(t, `{"verbose":"yes"}`)); len(errs) != 1 || errs[0].Pointer != "/verbose" {
		t.Errorf("Validate({verbose: yes}) = %+v, want an error at /verbose", errs)
	}
	// Required through $ref and allOf counts too.
	viaRef := mustCompile(t, `{"$ref":"#/$defs/in","$defs":{"in":{"type":"object","allOf":[{"required":["q"]}]}}}`)
	if !viaRef.Requires() {
		t.Error("Requires() = false for required through $ref and allOf")
	}
	// {} can be invalid without required properties.
	minProps := mustCompile(t, `{"type":"object","minProperties":1}`)
	if errs := minProps.Validate(nil); len(errs) != 1 || errs[0].Pointer != "" {
		t.Errorf("Validate({}) with minProperties = %+v, want one error at the root", errs)
	}
}

func TestValidateFieldErrors(t *testing.T) {
	s := mustCompile(t, editSchema)
	tests := []struct {
		name, args string
		want       []FieldError // Message checked with strings.Contains
	}{
		{"valid", `{"path":"a","count":3,"mode":"a","tags":["x"],"edits":[{"old_string":"a","new_string":"b"}]}`, nil},
		{"minimum", `{"path":"a","count":0}`, []FieldError{{"/count", "integer ≥ 1", "integer 0", "/count: expected integer ≥ 1, got integer 0"}}},
		{"type", `{"path":"a","count":"many"}`, []FieldError{{"/count", "integer ≥ 1", `string "many"`, `/count: expected integer ≥ 1, got string "many"`}}},
		{"integer", `{"path":"a","count":1.5}`, []FieldError{{"/count", "integer ≥ 1", "number 1.5", "got number 1.5"}}},
		{"enum", `{"path":"a","mode":"c"}`, []FieldError{{"/mode", `one of ["a","b"]`, `string "c"`, `expected one of ["a","b"], got string "c"`}}},
		{"exclusive maximum", `{"path":"a","ratio":1}`, []FieldError{{"/ratio", "number < 1", "integer 1", "/ratio: expected number < 1"}}},
		{"min length", `{"path":""}`, []FieldError{{"/path", "string with at least 1 character", `string ""`, "/path: expected string"}}},
		{"max items", `{"path":"a","tags":["x","y","z"]}`, []FieldError{{"/tags", "array of string with at most 2 items", `array ["x","y","z"]`, "/tags: expected array"}}},
		{"additional", `{"path":"a","pth":"b"}`, []FieldError{{"/pth", "no additional properties (allowed: a/b, count, edits, mode, path, ratio, tags)", `string "b"`, `unknown property "pth" is not allowed; did you mean "path"?`}}},
		{"escaped pointer", `{"path":"a","a/b":"yes"}`, []FieldError{{"/a~1b", "boolean", `string "yes"`, "/a~1b: expected boolean"}}},
		{"long value truncated", `{"path":"a","count":"` + strings.Repeat("x", 100) + `"}`, []FieldError{{"/count", "integer ≥ 1", `string "` + strings.Repeat("x", 39) + "…", "got string"}}},
		{"several fields", `{"count":0,"mode":"c","pth":1,"edits":[{"old_string":"a","new_string":"b"},{"old_string":1}]}`, []FieldError{
			{"/count", "integer ≥ 1", "integer 0", "/count"},
			{"/edits/1/new_string", "required property (string)", "nothing", `required property "new_string" is missing`},
			{"/edits/1/old_string", "string", "integer 1", "/edits/1/old_string: expected string, got integer 1"},
			{"/mode", `one of ["a","b"]`, `string "c"`, "/mode"},
			{"/path", "required property (string with at least 1 character)", "nothing", "/path"},
			{"/pth", "no additional properties (allowed: a/b, count, edits, mode, path, ratio, tags)", "integer 1", "/pth"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := s.Validate(parse(t, tt.args))
			if len(errs) != len(tt.want) {
				t.Fatalf("Validate(%s) = %d errors, want %d:\n%+v", tt.args, len(errs), len(tt.want), errs)
			}
			for i, w := range tt.want {
				g := errs[i]
				if g.Pointer != w.Pointer || g.Expected != w.Expected || !strings.HasPrefix(g.Got, strings.TrimSuffix(w.Got, "…")) || !strings.Contains(g.Message, w.Message) {
					t.Errorf("error %d = %+v\nwant %+v", i, g, w)
				}
			}
		})
	}
}

func TestValidateOrderAndAlternatives(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{
		"items":{"type":"array","items":{"type":"integer"}},
		"id":{"anyOf":[{"type":"string"},{"type":"integer"}]},
		"shape":{"oneOf":[{"type":"object","properties":{"r":{"type":"number"}},"required":["r"]},{"type":"string"}]}}}`)
	items := make([]string, 12)
	for i := range items {
		items[i] = "1"
	}
	items[2], items[10] = `"x"`, `"y"`
	errs := s.Validate(parse(t, `{"items":[`+strings.Join(items, ",")+`],"id":true,"shape":{"r":"big"}}`))
	var ptrs []string
	for _, e := range errs {
		ptrs = append(ptrs, e.Pointer)
	}
	if want := []string{"/id", "/items/2", "/items/10", "/shape/r"}; !reflect.DeepEqual(ptrs, want) {
		t.Fatalf("pointers = %v, want %v (%+v)", ptrs, want, errs)
	}
	if errs[0].Expected != "one of: string | integer" || errs[0].Got != "boolean true" {
		t.Errorf("anyOf error = %+v", errs[0])
	}
	if errs[3].Expected != "number" {
		t.Errorf("oneOf descends into the alternative that fits the type: %+v", errs[3])
	}
}

func TestValidateDraft07(t *testing.T) {
	s := mustCompile(t, `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
		"definitions":{"n":{"type":"integer"}},
		"properties":{"n":{"$ref":"#/definitions/n","type":"string"},"e":{"type":"string","format":"email"}},"required":["n"]}`)
	if errs := s.Validate(parse(t, `{"n":5,"e":"a@example.com"}`)); errs != nil {
		t.Errorf("valid draft-07 arguments: %+v", errs)
	}
	errs := s.Validate(parse(t, `{"n":"5","e":"not an email"}`))
	if len(errs) != 2 || errs[0].Pointer != "/e" || errs[1].Pointer != "/n" {
		t.Errorf("draft-07 errors = %+v, want /e (format, asserted in draft-07) and /n", errs)
	}
}

func TestValidationError(t *testing.T) {
	s := mustCompile(t, editSchema)
	errs := s.Validate(parse(t, `{"count":0,"pth":"x"}`))
	e := ValidationError("edit_file", errs)
	if e.Type != tool.InvalidArguments {
		t.Errorf("type = %s", e.Type)
	}
	for _, want := range []string{`"edit_file"`, "3 fields", "/count: expected integer ≥ 1, got integer 0", `/path: required property "path" is missing`, `did you mean "path"?`} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q lacks %q", e.Message, want)
		}
	}
	if want := "call edit_file again with corrected arguments: add /path; fix /count as expected; remove /pth"; e.Suggestion != want {
		t.Errorf("suggestion = %q, want %q", e.Suggestion, want)
	}
	if !reflect.DeepEqual(e.Details["fields"], errs) {
		t.Errorf("details = %#v", e.Details)
	}
	b, err := json.Marshal(e)
	if err != nil || !strings.Contains(string(b), `"fields":[{"pointer":"/count","expected":"integer ≥ 1","got":"integer 0","message":`) {
		t.Errorf("JSON = %s, %v", b, err)
	}
	if ValidationError("x", nil) != nil {
		t.Error("ValidationError(nil) != nil")
	}
}

// TestFastAgrees runs the same arguments through the fast validator and the
// full one; FuzzFastAgrees does so at random.
func TestFastAgrees(t *testing.T) {
	for _, sch := range fuzzSchemas {
		s := mustCompile(t, sch)
		if s.fast == nil {
			continue
		}
		for _, in := range fuzzArgs {
			args, err := ParseArguments([]byte(in))
			if err != nil {
				continue
			}
			if fast, full := s.fast.valid(args, 0), s.root.Validate(args) == nil; fast != full {
				t.Errorf("schema %s, args %s: fast says %v, full says %v", sch, in, fast, full)
			}
		}
	}
}

func TestValidateConcurrent(t *testing.T) {
	s := mustCompile(t, editSchema)
	done := make(chan []FieldError)
	for i := range 8 {
		go func() {
			var errs []FieldError
			for range 200 {
				if i%2 == 0 {
					errs = s.Validate(parse(t, `{"path":"a","count":2}`))
				} else {
					errs = s.Validate(parse(t, `{"count":0}`))
				}
			}
			done <- errs
		}()
	}
	for i := 0; i < 8; i++ {
		errs := <-done
		if n := len(errs); n != 0 && n != 2 {
			t.Errorf("concurrent Validate returned %+v", errs)
		}
	}
}
