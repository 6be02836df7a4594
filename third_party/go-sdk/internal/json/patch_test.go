// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package json

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// decoderUnmarshal is Unmarshal as released in v1.8.0: a new Decoder for
// every call.
func decoderUnmarshal(data []byte, v any) error {
	if err := checkMaxDepth(data, defaultMaxDepth); err != nil {
		return err
	}
	return NewDecoder(bytes.NewReader(data)).Decode(v)
}

type patchMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      any             `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
	Name  string
	Count *int `json:"count"`
}

// validRecorder decodes itself, as a CallToolResult does (patch 8): v1.8.0
// calls its UnmarshalJSON, which checks the bytes again; the patch calls its
// UnmarshalValidJSON, which does not. Both keep the bytes they are given and
// decode them into V, to the same effect.
type validRecorder struct {
	Got []byte
	V   any
}

func (r *validRecorder) UnmarshalJSON(b []byte) error {
	r.Got = append([]byte(nil), b...)
	return Unmarshal(b, &r.V)
}

func (r *validRecorder) UnmarshalValidJSON(b []byte) error {
	r.Got = append([]byte(nil), b...)
	return ParseValid(b, &r.V)
}

// targets returns a fresh value of every kind the SDK decodes into.
func targets() []any {
	return []any{
		new(patchMessage), new(map[string]any), new([]json.RawMessage), new(json.RawMessage),
		new(any), new(string), new(int), new(float64), new(bool), new([]int), new(map[string]json.RawMessage),
		new(validRecorder), new(struct{ R *validRecorder }),
	}
}

var patchInputs = []string{
	``, ` `, "\n", "\t\r\n ",
	`{}`, ` {} `, "{}\n", "{}\r\n", "\n\t{}\n\t",
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}`,
	`{"jsonrpc":"2.0","id":"x","result":{"content":[{"type":"text","text":"line\n"}]}}`,
	`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"unknown tool \"x\""}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
	`[]`, `[1,2,3]`, `[1,2,3`, `[1,2,3]]`, `[1,,2]`, `[1 2]`,
	`{"a":1}{"b":2}`, `{"a":1} {"b":2}`, `{"a":1}x`, `{"a":1}}`, `{"a":1}]`, `{"a":1} 42`, `{"a":1}` + "\x00",
	`{"a":`, `{"a"`, `{"a":1`, `{"a":1,`, `{"a":1,}`, `{,}`, `{"a" 1}`, `{a:1}`, `{'a':1}`,
	`"text"`, `"text`, `"a\u00e9\"b"`, `"\u12"`, `"\x"`, "\"\xff\xfe\"", "\"tab\there\"", `"caf\u00e9 ☕"`,
	`1`, `-0`, `1e400`, `01`, `1.`, `.5`, `0x10`, `12345678901234567890`, `1 2`, `-`,
	`true`, `tru`, `truex`, `false`, `null`, `nul`, `NaN`,
	`{"jsonrpc":"2.0","id":null}`, `{"id":{"nested":[1,{"deep":true}]}}`, `{"ID":7,"Method":"x","name":"lower","Name":"upper"}`,
	`{"count":3}`, `{"count":"3"}`, `{"count":3.5}`, `{"count":null}`, `{"jsonrpc":2}`, `{"params":[1,2]}`, `{"result":}`,
	`{"a":1,"a":2}`, `{"error":{"code":1,"message":"m","extra":[]}}`, `{"error":{"code":"1"}}`,
	strings.Repeat("[", 1001) + strings.Repeat("]", 1001), strings.Repeat("[", 999) + strings.Repeat("]", 999),
	`{"s":"` + strings.Repeat("x", 40000) + `"}`, `{"s":"` + strings.Repeat("x", 40000) + `"} tail`,
	strings.Repeat(" ", 40000) + `{"a":1}`, `{"a":"` + strings.Repeat("é", 20000) + `"`,
}

// TestUnmarshalMatchesDecoder checks the patch against v1.8.0's Unmarshal:
// the same value and the same error (text and type) for every input and
// target, including empty input, trailing data, truncated values, syntax
// errors, type mismatches and the depth limit.
func TestUnmarshalMatchesDecoder(t *testing.T) {
	for _, in := range patchInputs {
		for i := range targets() {
			sameAsDecoder(t, []byte(in), i)
		}
	}
}

func FuzzUnmarshalMatchesDecoder(f *testing.F) {
	for _, in := range patchInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for i := range targets() {
			sameAsDecoder(t, data, i)
		}
	})
}

func sameAsDecoder(t *testing.T, data []byte, target int) {
	t.Helper()
	got, want := targets()[target], targets()[target]
	gotErr, wantErr := Unmarshal(data, got), decoderUnmarshal(data, want)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || reflect.TypeOf(gotErr) != reflect.TypeOf(wantErr) {
		t.Fatalf("Unmarshal(%.80q) into %T: error %T %v, Decoder gives %T %v", data, got, gotErr, gotErr, wantErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Unmarshal(%.80q) into %T: %#v, Decoder gives %#v", data, got, reflect.ValueOf(got).Elem(), reflect.ValueOf(want).Elem())
	}
}

// TestUnmarshalAllocatesNoBuffer checks what the patch is for: decoding a
// message no longer allocates a 32 KiB read buffer.
func TestUnmarshalAllocatesNoBuffer(t *testing.T) {
	data := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}`)
	const runs = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		var m patchMessage
		if err := Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 4096 {
		t.Errorf("Unmarshal of a %d-byte message allocates %d bytes, want at most 4096", len(data), per)
	}
}

// checkMaxDepthV180 is checkMaxDepth as released in v1.8.0, word for word.
func checkMaxDepthV180(data []byte, maxDepth int) error {
	var (
		depth    int
		inString bool
		escaped  bool
	)
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}

		switch b {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				return errMaxDepthExceeded
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

// TestCheckMaxDepthMatchesV180: patch 10's checkMaxDepth answers as
// v1.8.0's over every input of these tests, every prefix of each (whole
// when longer than 2,000 bytes), and
// every string of up to 7 bytes of a quote, a backslash, brackets and a
// letter, at depth limits 0 to 3 (and 1000 for the inputs).
func TestCheckMaxDepthMatchesV180(t *testing.T) {
	check := func(data []byte, max int) {
		if got, want := checkMaxDepth(data, max), checkMaxDepthV180(data, max); got != want {
			t.Fatalf("checkMaxDepth(%.80q, %d) = %v, v1.8.0 %v", data, max, got, want)
		}
	}
	for _, in := range append(patchInputs, `"a\\"[[`, `"a\\\"[[`, `"\\\\"[`, `["\"]"]`, `"x`+"\\") {
		for n := range len(in) + 1 {
			if len(in) > 2000 && n < len(in) { // the long ones whole
				continue
			}
			for _, max := range []int{0, 1, 2, 3, defaultMaxDepth} {
				check([]byte(in[:n]), max)
			}
		}
	}
	const alphabet = `"\[]a`
	var gen func(prefix []byte)
	gen = func(prefix []byte) {
		for max := range 4 {
			check(prefix, max)
		}
		if len(prefix) == 7 {
			return
		}
		for i := range len(alphabet) {
			gen(append(prefix, alphabet[i]))
		}
	}
	gen(nil)
}

func FuzzCheckMaxDepthMatchesV180(f *testing.F) {
	for _, in := range patchInputs {
		f.Add([]byte(in), 2)
	}
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if got, want := checkMaxDepth(data, max), checkMaxDepthV180(data, max); got != want {
			t.Fatalf("checkMaxDepth(%q, %d) = %v, v1.8.0 %v", data, max, got, want)
		}
	})
}

// plainTarget decodes only `{}` plain (patch 11) and records what each of
// its methods was given.
type plainTarget struct{ plain, unmarshal []byte }

func (p *plainTarget) UnmarshalPlainJSON(data []byte) bool {
	if string(data) != "{}" {
		return false
	}
	p.plain = append([]byte(nil), data...)
	return true
}

func (p *plainTarget) UnmarshalJSON(data []byte) error {
	p.unmarshal = append([]byte(nil), data...)
	return nil
}

// TestPlainUnmarshaler: Unmarshal gives a PlainUnmarshaler the value
// without the white space around it, and nothing more when it decodes it;
// when it does not, the value goes the way it went (UnmarshalJSON, errors).
func TestPlainUnmarshaler(t *testing.T) {
	var p plainTarget
	if err := Unmarshal([]byte(" \n{}\t"), &p); err != nil || string(p.plain) != "{}" || p.unmarshal != nil {
		t.Errorf("plain: %v, plain %q, UnmarshalJSON %q", err, p.plain, p.unmarshal)
	}
	p = plainTarget{}
	if err := Unmarshal([]byte(` {"a":1} `), &p); err != nil || p.plain != nil || string(p.unmarshal) != `{"a":1}` {
		t.Errorf("not plain: %v, plain %q, UnmarshalJSON %q", err, p.plain, p.unmarshal)
	}
	p = plainTarget{}
	if err := Unmarshal([]byte(`{"a":`), &p); err == nil || p.plain != nil || p.unmarshal != nil {
		t.Errorf("invalid: %v, plain %q, UnmarshalJSON %q", err, p.plain, p.unmarshal)
	}
}
