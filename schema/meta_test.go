package schema

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgate/toolgate/tool"
)

// TestMetaSchemasLazy checks the patch in third_party/jsonschema: each
// draft compiles its meta-schemas on first use instead of at init, and
// still refuses every schema its meta-schema refuses, when the first uses
// of all drafts come at once (run with -race). It runs in a fresh process
// of this test binary, where nothing has compiled a meta-schema yet.
func TestMetaSchemasLazy(t *testing.T) {
	if os.Getenv("TOOLGATE_TEST_META_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMetaSchemasLazy$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "TOOLGATE_TEST_META_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestMetaSchemasLazy") {
			t.Fatalf("the test in a fresh process: %v\n%s", err, out)
		}
		return
	}
	drafts := []string{
		"http://json-schema.org/draft-04/schema#",
		"http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2019-09/schema",
		"https://json-schema.org/draft/2020-12/schema",
		"", // the default: 2020-12
	}
	valid := []string{
		`"type":"object","properties":{"a":{"type":"string","maxLength":3}},"required":["a"]`,
		`"type":["object","null"],"additionalProperties":false`,
		`"properties":{"n":{"type":"integer","minimum":1,"enum":[1,2]}}`,
		`"properties":{"l":{"type":"array","items":{"type":"string","pattern":"^a"},"minItems":1}}`,
		`"allOf":[{"type":"object"}],"not":{"required":["x"]}`,
	}
	// Each is refused by the meta-schema of every draft.
	invalid := []string{
		`"type":5`,
		`"type":"objekt"`,
		`"type":["object",3]`,
		`"properties":[]`,
		`"properties":{"a":3}`,
		`"required":"a"`,
		`"required":[1]`,
		`"minimum":"1"`,
		`"maxLength":-1`,
		`"minItems":1.5`,
		`"enum":3`,
		`"pattern":5`,
		`"items":3`,
		`"allOf":{}`,
		`"anyOf":[]`,
		`"additionalProperties":"no"`,
		`"multipleOf":0`,
		`"properties":{"a":{"properties":{"b":{"type":"strin"}}}}`,
	}
	type result struct {
		schema string
		valid  bool
		err    error
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	results := make(chan result, len(drafts)*(len(valid)+len(invalid)))
	for _, d := range drafts {
		for i, body := range append(append([]string(nil), valid...), invalid...) {
			s := "{" + body + "}"
			if d != "" {
				s = `{"$schema":"` + d + `",` + body + "}"
			}
			wg.Go(func() {
				<-start
				_, err := Compile([]byte(s))
				results <- result{s, i < len(valid), err}
			})
		}
	}
	close(start)
	wg.Wait()
	close(results)
	n := 0
	for r := range results {
		n++
		var verr *jsonschema.SchemaValidationError
		switch {
		case r.valid && r.err != nil:
			t.Errorf("%s: %v", r.schema, r.err)
		case !r.valid && !errors.As(r.err, &verr):
			t.Errorf("%s: err = %v, want the meta-schema's refusal", r.schema, r.err)
		case !r.valid && !errors.Is(r.err, ErrInvalidSchema):
			t.Errorf("%s: err = %v, want ErrInvalidSchema", r.schema, r.err)
		}
	}
	if want := len(drafts) * (len(valid) + len(invalid)); n != want {
		t.Fatalf("%d results, want %d", n, want)
	}
}

// metaCases are schemas built from every keyword metaValid knows (and a
// few it does not) holding values of every JSON type, alone and nested in
// each place a subschema goes.
func metaCases() []string {
	keywords := []string{
		"type", "title", "description", "$comment", "format", "default", "const", "enum", "examples",
		"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems",
		"maxItems", "minProperties", "maxProperties", "required", "uniqueItems", "readOnly", "writeOnly",
		"deprecated", "properties", "additionalProperties", "items", "not", "anyOf", "oneOf", "allOf",
		// not known to metaValid: the meta-schema decides
		"$ref", "$schema", "$defs", "$id", "pattern", "multipleOf", "dependentRequired", "prefixItems",
		"contains", "propertyNames", "if", "unevaluatedProperties", "x-unknown", "",
	}
	values := []string{
		`"string"`, `"object"`, `"integer"`, `"objekt"`, `""`, `"#"`, `"^a"`, `"(("`,
		`0`, `1`, `-1`, `1.5`, `1.0`, `1e2`, `-0`, `99999999999999999999`,
		`true`, `false`, `null`,
		`[]`, `["a"]`, `["a","a"]`, `["a",1]`, `["string","null"]`, `["string","string"]`, `["objekt"]`, `[1,2]`,
		`[{"type":"string"}]`, `[true]`, `[{},3]`, `[{"type":5}]`,
		`{}`, `{"type":"string"}`, `{"type":5}`, `{"a":{"type":"string"}}`, `{"a":3}`, `{"a":{"minLength":-1}}`,
	}
	var out []string
	for _, k := range keywords {
		for _, v := range values {
			kv := `"` + k + `":` + v
			out = append(out,
				`{`+kv+`}`,
				`{"type":"object","properties":{"a":{`+kv+`}},"required":["a"]}`,
				`{"items":{`+kv+`}}`,
				`{"anyOf":[{"type":"null"},{`+kv+`}]}`,
				`{"additionalProperties":{`+kv+`}}`,
				`{"not":{`+kv+`}}`,
				`{"description":"d",`+kv+`}`,
			)
		}
	}
	return out
}

// TestMetaValid checks Compile's shortcut (metaValid) against the
// meta-schema: every schema it accepts, the meta-schema accepts, and
// Compile with and without the shortcut agree. It must accept the schemas
// toolgate's typed tools infer, or the shortcut is never taken.
func TestMetaValid(t *testing.T) {
	type args struct {
		Path   string   `json:"path" jsonschema:"a file"`
		Limit  int      `json:"limit,omitempty" default:"500" minimum:"1" maximum:"2000" jsonschema:"lines"`
		Mode   string   `json:"mode,omitempty" enum:"a,b" jsonschema:"how"`
		Names  []string `json:"names,omitempty" minItems:"1" maxItems:"9" jsonschema:"names"`
		Text   string   `json:"text,omitempty" minLength:"1" maxLength:"10" format:"email"`
		Nested struct {
			On bool              `json:"on"`
			M  map[string]string `json:"m,omitempty"`
		} `json:"nested"`
		Ptr *float64 `json:"ptr,omitempty"`
	}
	inferred, err := tool.InferSchema(reflect.TypeFor[args]())
	if err != nil {
		t.Fatal(err)
	}
	cases := append(metaCases(), string(inferred))
	accepted := 0
	for _, raw := range cases {
		doc, _, serr := decodeCounting([]byte(raw), MaxSchemaDepth)
		if serr != nil { // a duplicate key
			continue
		}
		if !metaValid(doc) {
			if raw == string(inferred) {
				t.Errorf("metaValid refuses the inferred schema %s", raw)
			}
			continue
		}
		accepted++
		_, full := compile([]byte(raw), false)
		var verr *jsonschema.SchemaValidationError
		if errors.As(full, &verr) {
			t.Errorf("metaValid accepts %s, the meta-schema refuses it: %v", raw, full)
			continue
		}
		if _, fast := Compile([]byte(raw)); fmt.Sprint(fast) != fmt.Sprint(full) {
			t.Errorf("%s: Compile = %v, with the meta-schema %v", raw, fast, full)
		}
	}
	t.Logf("metaValid accepts %d of %d schemas", accepted, len(cases))
	if accepted < 1000 { // 1505 when written
		t.Errorf("metaValid accepts %d of %d schemas: the shortcut is rarely taken", accepted, len(cases))
	}
}

// FuzzMetaValid: whatever metaValid accepts, the meta-schema accepts, and
// Compile agrees with and without the shortcut.
func FuzzMetaValid(f *testing.F) {
	for _, raw := range metaCases() {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		doc, _, serr := decodeCounting(raw, MaxSchemaDepth)
		if serr != nil || !metaValid(doc) {
			return
		}
		if _, ok := doc.(map[string]any); !ok {
			return
		}
		_, full := compile(raw, false)
		var verr *jsonschema.SchemaValidationError
		if errors.As(full, &verr) {
			t.Fatalf("metaValid accepts %s, the meta-schema refuses it: %v", raw, full)
		}
		if _, fast := Compile(raw); fmt.Sprint(fast) != fmt.Sprint(full) {
			t.Fatalf("%s: Compile = %v, with the meta-schema %v", raw, fast, full)
		}
	})
}
