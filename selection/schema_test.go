package selection

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/selection/eval"
)

func collectParams(schema string) []string {
	var out []string
	params(json.RawMessage(schema), func(name, title, desc string) {
		out = append(out, strings.ToValidUTF8(name+"="+strings.TrimSpace(title+" "+desc), "\uFFFD"))
	})
	return out
}

// refParams is params written plainly over encoding/json, the reference
// the scanner must agree with on valid JSON.
func refParams(schema string) []string {
	var v any
	if json.Unmarshal([]byte(schema), &v) != nil {
		return nil
	}
	var out []string
	budget := maxSchemaParams
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		n, ok := v.(map[string]any)
		if !ok || depth > maxSchemaDepth {
			return
		}
		if props, ok := n["properties"].(map[string]any); ok {
			for _, name := range slices.Sorted(maps.Keys(props)) {
				if budget <= 0 {
					return
				}
				budget--
				p, _ := props[name].(map[string]any)
				title, _ := p["title"].(string)
				desc, _ := p["description"].(string)
				out = append(out, strings.ToValidUTF8(name+"="+strings.TrimSpace(title+" "+desc), "\uFFFD"))
				walk(p, depth+1)
			}
		}
		walk(n["items"], depth+1)
	}
	walk(v, 1)
	return out
}

func TestParams(t *testing.T) {
	tests := []struct {
		name, schema string
		want         []string
	}{
		{"flat", `{"type":"object","properties":{"query":{"type":"string","description":"search words"},"limit":{"type":"integer","title":"Limit"}}}`,
			[]string{"limit=Limit", "query=search words"}},
		{"nested and items", `{"properties":{"opts":{"description":"options","properties":{"deep":{"description":"d"}}},"rows":{"type":"array","items":{"properties":{"cell":{"description":"c"}}}}}}`,
			[]string{"opts=options", "deep=d", "rows=", "cell=c"}},
		{"escapes", `{"properties":{"a\"b":{"description":"line\nnext \u00e9t\u00e9 \ud83d\ude00"}}}`,
			[]string{"a\"b=line\nnext été 😀"}},
		{"wrong types are skipped", `{"description":5,"properties":{"a":true,"b":{"description":["x"],"title":"B"},"c":7}}`,
			[]string{"a=", "b=B", "c="}},
		{"properties not an object", `{"properties":[{"description":"x"}]}`, nil},
		{"too deep", `{"properties":{"l1":{"properties":{"l2":{"properties":{"l3":{"properties":{"l4":{}}}}}}}}}`,
			[]string{"l1=", "l2=", "l3="}},
		{"not JSON", `{"properties":{"a":{"description":"kept"},"b":`, []string{"a=kept", "b="}},
		{"empty", ``, nil},
		{"null", `null`, nil},
		{"garbage", `}}]]::,,"`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := collectParams(tt.schema); !slices.Equal(got, tt.want) {
				t.Errorf("params = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParamsBudget(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"properties":{`)
	for i := range 1000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%04d":{"description":"d"}`, i)
	}
	b.WriteString(`}}`)
	if got := collectParams(b.String()); len(got) != maxSchemaParams || got[0] != "p0000=d" {
		t.Errorf("read %d params starting %q, want %d from p0000", len(got), got[:1], maxSchemaParams)
	}
}

// Hostile nesting neither recurses without bound nor loses the parameters
// before it.
func TestParamsHostileNesting(t *testing.T) {
	for _, tt := range []struct {
		open string
		want []string
	}{
		{`{"properties":{"x":`, []string{"ok=fine", "z=", "x=", "x="}}, // two levels read below z
		{`{"items":`, []string{"ok=fine", "z="}},
		{`[`, []string{"ok=fine", "z="}},
		{`{"a":`, []string{"ok=fine", "z="}},
	} {
		deep := `{"properties":{"ok":{"description":"fine"},"z":` + strings.Repeat(tt.open, 200000) + `1`
		if got := collectParams(deep); !slices.Equal(got, tt.want) {
			t.Errorf("%s×200000: %q, want %q", tt.open, got, tt.want)
		}
	}
}

// The scanner reads the corpus's 527 real schemas as encoding/json does.
func TestParamsMatchEncodingJSON(t *testing.T) {
	b, err := eval.LoadLiveMCPBench(liveMCPBenchDir)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, tl := range b.Tools {
		s := string(tl.Definition.InputSchema)
		got, want := collectParams(s), refParams(s)
		if !slices.Equal(got, want) {
			t.Errorf("%s: scanner %q\nencoding/json %q", tl.ID, got, want)
		}
		n += len(got)
	}
	if n < 1000 {
		t.Errorf("only %d parameters in the corpus", n)
	}
}

func FuzzParams(f *testing.F) {
	for _, s := range []string{
		`{"properties":{"a":{"description":"x","items":{"properties":{"b":{}}}}}}`,
		`{"properties":{"a\u0000":{"title":"\ud800"}}}`,
		`{"properties":{"a":[1,{"x":"}"}],"b":{"description":"y"}}}`,
		`{"properties":`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := collectParams(s) // must not panic or hang on anything
		if json.Valid([]byte(s)) {
			if want := refParams(s); !slices.Equal(got, want) {
				t.Fatalf("scanner %q\nencoding/json %q", got, want)
			}
		}
	})
}
