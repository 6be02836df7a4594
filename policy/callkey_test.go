package policy

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// marshalKey is the loop guard's key as it was first written: decode with
// UseNumber, json.Marshal; no arguments (none, null) as {}.
func marshalKey(call tool.Call) string {
	if a := bytes.TrimSpace(call.Args); len(a) == 0 || string(a) == "null" {
		return call.Name + "\x00{}"
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(call.Args))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return call.Name + "\x00" + string(call.Args)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return call.Name + "\x00" + string(call.Args)
	}
	return call.Name + "\x00" + string(b)
}

var keyArgs = []string{
	`{}`, `{"a":1}`, `{"b":2,"a":1}`, ` { "b" : [1, 2.50, -3e7, true, false, null] , "a" : {"z":"", "y":{}} } `,
	`{"s":"<script>&amp;</script>"}`, `{"s":"quote \" back \\ slash / solidus"}`, `{"s":"\b\f\n\r\t\u0000\u001f\u007f"}`,
	`{"s":"\u2028\u2029 é ✓ 😀"}`, `{"s":"\ud800"}`, "{\"s\":\"\xff\xfe\"}", `{"n":12345678901234567890123}`,
	`{"n":-0.0}`, `{"n":1E+2}`, `{"deep":[[[{"k":[{}]}]]]}`, `{"dup":1,"dup":2}`, `[1,2]`, `"str"`, `null`, ``, `not json`,
	`{"a":1} trailing`, `{"ключ":"значение","键":"值"}`, `{"k<":">v"}`,
	"\f0", "\v{}", "\u00a0[1]", "\u0085null", // space to TrimSpace, not to JSON: invalid, their own keys
}

// TestCallKey: the key is the same whether the arguments come parsed or
// raw, and the same as json.Marshal of the decoded value.
func TestCallKey(t *testing.T) {
	for _, a := range keyArgs {
		call := tool.Call{Name: "read_file", Args: json.RawMessage(a)}
		want := marshalKey(call)
		if got := callKey(call, nil); got != want {
			t.Errorf("%s: key %q, want %q", a, got, want)
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(call.Args))
		dec.UseNumber()
		if dec.Decode(&v) != nil {
			continue
		}
		if m, ok := v.(map[string]any); ok {
			if got := callKey(call, m); got != want {
				t.Errorf("%s parsed: key %q, want %q", a, got, want)
			}
		}
	}
}

func FuzzCallKey(f *testing.F) {
	for _, a := range keyArgs {
		f.Add(a)
	}
	f.Fuzz(func(t *testing.T, a string) {
		call := tool.Call{Name: "t", Args: json.RawMessage(a)}
		if got, want := callKey(call, nil), marshalKey(call); got != want {
			t.Fatalf("%q: key %q, want %q", a, got, want)
		}
	})
}
