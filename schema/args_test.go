package schema

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

func TestParseArgumentsEmpty(t *testing.T) {
	for _, in := range []string{"", "   ", "\n\t\r ", "null", "  null\n", "{}", " { } "} {
		got, err := ParseArguments([]byte(in))
		if err != nil {
			t.Errorf("ParseArguments(%q): %v", in, err)
			continue
		}
		if got == nil || len(got) != 0 {
			t.Errorf("ParseArguments(%q) = %v, want an empty non-nil object", in, got)
		}
	}
}

func TestParseArgumentsValues(t *testing.T) {
	for _, in := range []string{
		`{"a":1,"b":"x","c":true,"d":null,"e":[1,2.5,-3e2],"f":{"g":{}}}`,
		`{"big":123456789012345678901234567890,"neg":-0.000001,"exp":1E+10}`,
		`{"esc":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00","lone":"\ud800x","utf8":"héllo 世界"}`,
		` {"nested":[[[[]]]], "empty":"", "arr":[]} `,
	} {
		got, err := ParseArguments([]byte(in))
		if err != nil {
			t.Fatalf("ParseArguments(%s): %v", in, err)
		}
		dec := json.NewDecoder(strings.NewReader(in))
		dec.UseNumber()
		var want map[string]any
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ParseArguments(%s)\n got  %#v\n want %#v", in, got, want)
		}
	}
	got, _ := ParseArguments([]byte(`{"id":123456789012345678901234567890}`))
	if n, ok := got["id"].(json.Number); !ok || n != "123456789012345678901234567890" {
		t.Errorf("a large integer lost digits: %#v", got["id"])
	}
}

func TestParseArgumentsMalformed(t *testing.T) {
	const big = true
	tests := []struct {
		name, in   string
		offset     int
		line, col  int
		msg, hint  string
		wantTooBig bool
	}{
		{"truncated", `{"path": "a.txt", "n": 1`, 24, 1, 25, "unexpected end of input", "cut off", false},
		{"truncated string", `{"path": "a.t`, 13, 1, 14, "unexpected end", "send the complete object", false},
		{"truncated literal", `{"ok": tr`, 9, 1, 10, "unexpected end", "cut off", false},
		{"truncated number", `{"n": 1.`, 8, 1, 9, "unexpected end", "cut off", false},
		{"trailing comma", `{"a": 1,}`, 8, 1, 9, "trailing comma", "remove the comma", false},
		{"trailing comma in array", `{"a": [1, 2,]}`, 12, 1, 13, "trailing comma", "remove the comma", false},
		{"two objects", `{"a":1}{"b":2}`, 7, 1, 8, "second JSON value", "send exactly one JSON object", false},
		{"trailing text", `{"a":1} thanks!`, 8, 1, 9, "after the end", "nothing after it", false},
		{"single-quoted key", `{'a': 1}`, 1, 1, 2, "single-quoted", "single quotes are not JSON", false},
		{"single-quoted value", `{"a": 'x'}`, 6, 1, 7, "single-quoted", "use double quotes", false},
		{"NaN", `{"a": NaN}`, 6, 1, 7, "NaN is not a JSON value", "finite number", false},
		{"Infinity", `{"a": -Infinity}`, 7, 1, 8, "invalid number", "write numbers as JSON does", false},
		{"Python literal", `{"a": True}`, 6, 1, 7, "not a JSON literal", "lowercase", false},
		{"lone word", `hello`, 0, 1, 1, `unquoted word "hello"`, "double quotes", false},
		{"unquoted key", `{path: "x"}`, 1, 1, 2, "expected a property name", "double quotes", false},
		{"missing colon", `{"a" 1}`, 5, 1, 6, "expected ':'", `"key": value`, false},
		{"missing comma", `{"a": 1 "b": 2}`, 8, 1, 9, "expected ',' or '}'", "separate properties with commas", false},
		{"leading zero", `{"n": 012}`, 7, 1, 8, "leading zero", "no leading zeros", false},
		{"plus sign", `{"n": +1}`, 6, 1, 7, "invalid number", "not .5 or +1", false},
		{"hex", `{"n": 0x1F}`, 7, 1, 8, "invalid number", "no hex", false},
		{"huge exponent", `{"n": 1e2000}`, 6, 1, 7, "exponent out of range", "±1000", false},
		{"control character", "{\"a\": \"x\ty\"}", 8, 1, 9, "control character", `\t`, false},
		{"bad escape", `{"a": "\x41"}`, 7, 1, 8, `invalid escape \x`, "valid escapes", false},
		{"bad unicode escape", `{"a": "\u12G4"}`, 7, 1, 8, `invalid \u escape`, "four hex digits", false},
		{"invalid UTF-8", "{\"a\": \"\xff\"}", 7, 1, 8, "invalid UTF-8", "UTF-8", false},
		{"duplicate key", `{"a": 1, "a": 2}`, 9, 1, 10, `duplicate key "a"`, "each property once", false},
		{"comment", `{"a": 1 // one
}`, 8, 1, 9, "comment", "comments are not allowed", false},
		{"comment as value", `{"a": /* x */ 1}`, 6, 1, 7, "comment", "comments are not allowed", false},
		{"markdown fence", "```json\n{\"a\":1}\n```", 0, 1, 1, "backtick", "without Markdown code fences", false},
		{"multi-line", "{\n  \"a\": 1,\n  \"b\": ?\n}", 19, 3, 8, "where a value was expected", "send valid JSON", false},
		{"too deep", strings.Repeat("[", 70) + strings.Repeat("]", 70), 64, 1, 65, "nested deeper than 64 levels", "flatten", big},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseArguments([]byte(tt.in))
			if err == nil {
				t.Fatalf("ParseArguments(%q) = %v, want an error", tt.in, got)
			}
			wantType := tool.InvalidArguments
			if tt.wantTooBig {
				wantType = tool.TooLarge
			}
			if err.Type != wantType {
				t.Errorf("type = %s, want %s", err.Type, wantType)
			}
			if err.Details["offset"] != tt.offset || err.Details["line"] != tt.line || err.Details["column"] != tt.col {
				t.Errorf("at offset %v line %v column %v, want %d %d:%d (%s)", err.Details["offset"], err.Details["line"], err.Details["column"], tt.offset, tt.line, tt.col, err.Message)
			}
			if !strings.Contains(err.Message, tt.msg) {
				t.Errorf("message %q does not contain %q", err.Message, tt.msg)
			}
			if !strings.Contains(err.Suggestion, tt.hint) {
				t.Errorf("suggestion %q does not contain %q", err.Suggestion, tt.hint)
			}
			if !strings.Contains(err.Message, "⟨here⟩") {
				t.Errorf("message %q quotes no excerpt", err.Message)
			}
		})
	}
}

func TestParseArgumentsNotObject(t *testing.T) {
	tests := []struct{ in, got, hint string }{
		{`[1, 2]`, "got an array", `{"name": value}`},
		{`"hello"`, "got a string", `{"name": value}`},
		{`42`, "got an integer", `{"name": value}`},
		{`4.5`, "got a number", `{"name": value}`},
		{`true`, "got a boolean", `{"name": value}`},
		{`"{\"path\": \"a.txt\"}"`, "got a string", "encoded inside a JSON string"},
	}
	for _, tt := range tests {
		_, err := ParseArguments([]byte(tt.in))
		if err == nil || err.Type != tool.InvalidArguments {
			t.Fatalf("ParseArguments(%s) = %v, want invalid_arguments", tt.in, err)
		}
		if !strings.Contains(err.Message, "must be a JSON object, "+tt.got) || !strings.Contains(err.Suggestion, tt.hint) {
			t.Errorf("ParseArguments(%s): %q / %q, want %q and %q", tt.in, err.Message, err.Suggestion, tt.got, tt.hint)
		}
	}
}

func TestParseArgumentsTooLarge(t *testing.T) {
	raw := append([]byte(`{"a":"`), bytes.Repeat([]byte("x"), MaxArgumentBytes)...)
	raw = append(raw, `"}`...)
	_, err := ParseArguments(raw)
	if err == nil || err.Type != tool.TooLarge {
		t.Fatalf("ParseArguments(%d bytes) = %v, want too_large", len(raw), err)
	}
	if err.Details["limit"] != MaxArgumentBytes || err.Suggestion == "" {
		t.Errorf("error lacks the limit or a suggestion: %+v", err)
	}
	// Just under the limit is fine.
	raw = append([]byte(`{"a":"`), bytes.Repeat([]byte("x"), MaxArgumentBytes-8)...)
	raw = append(raw, `"}`...)
	if _, err := ParseArguments(raw); err != nil {
		t.Fatalf("ParseArguments(%d bytes): %v", len(raw), err)
	}
	// Exactly at the depth limit is fine.
	deep := `{"a":` + strings.Repeat("[", MaxArgumentDepth-1) + strings.Repeat("]", MaxArgumentDepth-1) + `}`
	if _, err := ParseArguments([]byte(deep)); err != nil {
		t.Fatalf("depth %d: %v", MaxArgumentDepth, err)
	}
}
