package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func jsonEqual(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name, in, want string
		changes        int // at least
	}{
		{"2020-12 unchanged", `{"type":"object","properties":{"a":{"type":["string","null"],"minLength":1}},"required":["a"]}`,
			`{"type":"object","properties":{"a":{"type":["string","null"],"minLength":1}},"required":["a"]}`, 0},
		{"draft-07 definitions and refs",
			`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"p":{"$ref":"#/definitions/pt","description":"a point","minimum":3}},"definitions":{"pt":{"type":"array","items":[{"type":"number"},{"type":"number"}],"additionalItems":false}}}`,
			`{"type":"object","properties":{"p":{"$ref":"#/$defs/pt","description":"a point"}},"$defs":{"pt":{"type":"array","prefixItems":[{"type":"number"},{"type":"number"}],"items":false}}}`, 5},
		{"draft-04 exclusive bounds and dependencies",
			`{"type":"object","properties":{"n":{"type":"number","minimum":0,"exclusiveMinimum":true,"maximum":9,"exclusiveMaximum":false}},"dependencies":{"a":["b"],"c":{"required":["d"]}}}`,
			`{"type":"object","properties":{"n":{"type":"number","exclusiveMinimum":0,"maximum":9}},"dependentRequired":{"a":["b"]},"dependentSchemas":{"c":{"required":["d"]}}}`, 3},
		{"OpenAPI nullable and example",
			`{"type":"object","properties":{"s":{"type":"string","nullable":true,"example":"x"},"e":{"type":"string","enum":["a"],"nullable":true},"r":{"$ref":"#/$defs/x","nullable":true},"f":{"type":"string","nullable":false,"discriminator":{},"x-internal":1}},"$defs":{"x":{"type":"integer"}}}`,
			`{"type":"object","properties":{"s":{"type":["string","null"],"examples":["x"]},"e":{"type":["string","null"],"enum":["a",null]},"r":{"anyOf":[{"$ref":"#/$defs/x"},{"type":"null"}]},"f":{"type":"string","x-internal":1}},"$defs":{"x":{"type":"integer"}}}`, 5},
		{"BFCL types",
			`{"type":"dict","properties":{"a":{"type":"float"},"b":{"type":"tuple","items":{"type":"float"}},"c":{"type":"any"},"d":{"type":"String"},"e":{"type":"HashMap"},"f":{"type":"ArrayList","items":{"type":"long"}},"g":{"type":"Boolean"},"h":{"type":"char"},"i":{"type":"IResultSetController","description":"the controller"},"j":{"type":""}},"required":["a"]}`,
			`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"array","items":{"type":"number"}},"c":{},"d":{"type":"string"},"e":{"type":"object"},"f":{"type":"array","items":{"type":"integer"}},"g":{"type":"boolean"},"h":{"type":"string","minLength":1,"maxLength":1},"i":{"description":"the controller (type: IResultSetController)"},"j":{}},"required":["a"]}`, 10},
		{"BFCL optional",
			`{"type":"dict","properties":{"a":{"type":"string","optional":true},"b":{"type":"string","optional":"true"},"c":{"type":"string","required":true},"d":{"type":"integer"}},"required":["a","b","d"],"optional":["d"]}`,
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"string"},"d":{"type":"integer"}},"required":["c"]}`, 4},
		{"BFCL defaults and array enums",
			`{"type":"dict","properties":{"t":{"type":"string","default":null},"u":{"type":"string","enum":["s","ms"],"default":"N/A"},"y":{"type":"integer","default":"dontcare"},"b":{"type":"boolean","default":"false"},"m":{"type":"array","items":{"type":"string"},"enum":["x","y"]}}}`,
			`{"type":"object","properties":{"t":{"type":["string","null"],"default":null},"u":{"type":"string","enum":["s","ms","N/A"],"default":"N/A"},"y":{"type":["integer","string"],"default":"dontcare"},"b":{"type":"boolean","default":false},"m":{"type":"array","items":{"type":"string","enum":["x","y"]}}}}`, 5},
		{"sloppy keyword values",
			`{"properties":{"a":"string","n":{"type":"integer","maximum":"400","minLength":-1,"description":5,"required":["a","a"]},"p":{"type":"string","pattern":"^(?=x)"}}}`,
			`{"type":"object","properties":{"a":{"type":"string"},"n":{"type":"integer","maximum":400,"required":["a"]},"p":{"type":"string"}}}`, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, changes, err := Normalize(json.RawMessage(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, out, tt.want)
			if len(changes) < tt.changes {
				t.Errorf("%d changes, want at least %d: %v", len(changes), tt.changes, changes)
			}
			if tt.changes == 0 && len(changes) != 0 {
				t.Errorf("changes on a 2020-12 schema: %v", changes)
			}
			for _, c := range changes {
				if c.Change == "" || c.Reason == "" {
					t.Errorf("change without text: %+v", c)
				}
			}
			again, changes2, err := Normalize(out)
			if err != nil || len(changes2) != 0 || string(again) != string(out) {
				t.Errorf("normalizing twice changed something: %v %v\n%s\n%s", err, changes2, out, again)
			}
			if _, err := Compile(out); err != nil {
				t.Errorf("output does not compile: %v", err)
			}
		})
	}
}

func TestNormalizeRefused(t *testing.T) {
	for _, in := range []string{
		`[]`, `"string"`, `{"type":"object",}`,
		`{"$ref":"#/$defs/missing"}`,
		`{"$ref":"https://example.com/s.json"}`,
		`{"properties":{"a":42}}`,
		strings.Repeat(`{"items":`, 200) + `{}` + strings.Repeat(`}`, 200),
		`{"$ref":"#"}`,
	} {
		if _, _, err := Normalize(json.RawMessage(in)); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("Normalize(%.60s): %v, want ErrInvalidSchema", in, err)
		}
	}
}

func TestToolName(t *testing.T) {
	long := strings.Repeat("a.", 40)
	tests := map[string]string{
		"math.factorial": "math_factorial",
		"repository_api.RepositoryApi.update_repository": "repository_api_RepositoryApi_update_repository",
		"get weather now": "get_weather_now",
		"3d.render":       "_3d_render",
		"already_valid-1": "already_valid-1",
		"":                "_",
		"é.x":             "_x",
	}
	for in, want := range tests {
		if got := ToolName(in); got != want {
			t.Errorf("ToolName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := ToolName(long); len(got) != 64 || !ValidToolName(got) || got == ToolName(long+"b") {
		t.Errorf("long name: %q", got)
	}
	var n Names
	a, b, c := n.Tool("a.b"), n.Tool("a_b"), n.Tool("a.b")
	if a != "a_b" || b != "a_b_2" || c != a {
		t.Errorf("Names: %q %q %q", a, b, c)
	}
	if o, ok := n.Original("a_b_2"); !ok || o != "a_b" {
		t.Errorf("Original: %q %v", o, ok)
	}
}
