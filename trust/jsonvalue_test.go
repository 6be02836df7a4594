package trust

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// jsonInputs are JSON texts and near misses: escapes of every kind, broken
// and paired surrogates, invalid UTF-8, numbers at float64's edges,
// duplicate keys, white space, nesting, trailing data and truncations.
var jsonInputs = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e3`, `-12.25E-2`, `1e308`, `1e309`, `-1e400`, `4111111111111111111`, `0.1`,
	`true`, `false`, `null`, ` { "a" : [ 1 , true , null , "x" ] } `, "\t[\r\n1]\n",
	`{"a":1,"a":2}`, `{"a":{"b":[{"c":"d"}]},"e":[]}`, `[[[[[[[[[[[["deep"]]]]]]]]]]]]`,
	`"plain"`, `"esc \" \\ \/ \b \f \n \r \t"`, `"\u0041\u00e9\u2028\uFFFD\uffff"`, `"\ud83d\ude00"`,
	`"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ude00\ud83d"`, `"\ud83d\ud83d\ude00"`, `"\u12"`, `"\u12g4"`,
	"\"\xff\xfe ok \xe2\x82\"", "\"\xed\xa0\x80\"", "\"é 😀 \u2028\"", `"\'"`, `"\x"`, "\"a\x01b\"", "\"tab\there\"",
	`{"k":"v"`, `[1,]`, `[,1]`, `{"a"}`, `{"a":}`, `{a:1}`, `{"a":1,}`, `01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`,
	`tru`, `truex`, `nul`, `[1 2]`, `{} {}`, `"unterminated`, `"a\`, ``, ` `, `[`, `]`, `"\u"`, `NaN`, `-Infinity`,
	strings.Repeat("[", 150) + strings.Repeat("]", 150),
}

// TestParseJSONMatchesUnmarshal: wherever parseJSON decodes, encoding/json
// decodes the same value; and it decodes what json.Marshal writes.
func TestParseJSONMatchesUnmarshal(t *testing.T) {
	for _, in := range jsonInputs {
		sameAsUnmarshal(t, []byte(in))
	}
	long := strings.Repeat("12345\n", 1500)
	for _, v := range []any{
		map[string]any{"output": long, "state": "running", "cursor": 9000, "more": true, "exit_code": nil},
		struct {
			A string  `json:"a"`
			B []byte  `json:"b"`
			C float64 `json:"c"`
		}{"<&> \u2028 \xff é \x00", []byte{0, 1, 2}, 1e-7},
		[]any{"x", 1.5, []any{}, map[string]any{"": ""}},
	} {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := parseJSON(raw); !ok {
			t.Errorf("parseJSON declines json.Marshal's %.200s", raw)
		}
		sameAsUnmarshal(t, raw)
	}
}

func sameAsUnmarshal(t *testing.T, in []byte) {
	t.Helper()
	got, ok := parseJSON(in)
	var want any
	err := json.Unmarshal(in, &want)
	if ok && (err != nil || !reflect.DeepEqual(got, want)) {
		t.Errorf("%q: parseJSON %#v, Unmarshal %#v (%v)", in, got, want, err)
	}
	if !ok && err == nil && json.Valid(in) && !strings.HasPrefix(string(in), strings.Repeat("[", maxParseDepth)) {
		t.Errorf("%q: parseJSON declines what Unmarshal decodes", in)
	}
}

// FuzzParseJSON: parseJSON agrees with Unmarshal on any input.
func FuzzParseJSON(f *testing.F) {
	for _, in := range jsonInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { sameAsUnmarshal(t, in) })
}

// BenchmarkAsJSON: a read_process answer's structured value (8 KiB of
// output, a line every 7 bytes) encoded and decoded as the result check
// reads it.
func BenchmarkAsJSON(b *testing.B) {
	var out strings.Builder
	for i := 1000000; out.Len() < 8192; i++ {
		out.WriteString(strconv.Itoa(i) + "\n")
	}
	v := struct {
		State  string `json:"state"`
		Output string `json:"output"`
		Cursor int64  `json:"cursor"`
	}{"running", out.String(), 8192}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := asJSON(context.Background(), v); !ok {
			b.Fatal("not decoded")
		}
	}
}
