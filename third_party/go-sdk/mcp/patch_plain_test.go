// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	internaljson "github.com/modelcontextprotocol/go-sdk/internal/json"
	segjson "github.com/segmentio/encoding/json"
)

// PATCH(toolgate): patch 11, a plain result is decoded without the SDK's
// decoder. These tests check that plainResult decodes exactly what
// v1.8.0's CallToolResult.UnmarshalJSON decodes, whenever it decodes.

// plainStrings are JSON strings: escapes of every kind, UTF-8, invalid
// UTF-8, escaped surrogates, quotes and backslashes at the ends.
var plainStrings = []string{
	`""`, `"a"`, `"line 1\nline 2\n"`, `"\"\\\/\b\f\n\r\t"`, `"\\"`, `"\\\""`, `"\"\\"`,
	`"a\\\\\"b"`, `"\u0041\u00e9\u2028\uFFFF\u0000\u001b"`, `"\u00E9x"`, "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
	"\"caf\xe9\"", "\"\xff\"", "\"a\xc3\"", "\"\xed\xa0\x80\"", `"\ud83d\ude00"`, `"\ud800"`, `"\udc00x"`, `"\ud800\u0041"`,
	`"\uDBFF\uDFFF"`, "\"" + strings.Repeat(`line of a file \"quoted\" \\ `, 40) + "\"", "\"\x7f\"",
}

// plainValues are structuredContent values: every kind, nested, with
// duplicate keys, keys of plainStrings, numbers ParseFloat reads and one
// it refuses.
func plainValues() []string {
	vs := []string{
		`null`, `true`, `false`, `0`, `-0`, `12`, `-3.25`, `1e3`, `1.5E-2`, `6.02e+23`, `123456789012345678901234567890`,
		`9007199254740993`, `1e400`, `-1e-400`, `[]`, `{}`, `[1,"a",null,[{}],{"k":[true]}]`,
		`{"content":"x","size":12,"nested":{"a":[1,2,{"b":null}]}}`, `{"k":1,"k":2}`, `{"k":{"a":1},"k":"last"}`,
		` { "a" : [ 1 , 2 ] , "b" : { } } `,
	}
	for _, s := range plainStrings {
		vs = append(vs, s, `{`+s+`:`+s+`}`, `[`+s+`]`)
	}
	return vs
}

// plainInputs are results built of plainStrings and plainValues, plain
// and not: every member and block key the SDK knows, unknown and escaped
// keys, members twice, other content types, white space.
func plainInputs() []string {
	var in []string
	for _, s := range plainStrings {
		in = append(in,
			`{"content":[{"type":"text","text":`+s+`}]}`,
			`{"content":[{"text":`+s+`,"type":"text"},{"type":"text","text":`+s+`}],"isError":true}`,
			`{"content":[{"type":`+s+`,"text":"x"}]}`,
		)
		// PATCH(toolgate): patch 20. Texts that structuredContent repeats
		// (the strings a Plain keeps), or not, as values and keys.
		for _, u := range plainStrings {
			in = append(in, `{"content":[{"type":"text","text":`+s+`}],"structuredContent":{"content":`+u+`,`+s+`:[`+s+`,`+u+`]}}`)
		}
	}
	for _, v := range plainValues() {
		in = append(in,
			`{"content":[{"type":"text","text":"x"}],"structuredContent":`+v+`}`,
			`{"structuredContent":`+v+`,"isError":false}`,
		)
	}
	return append(in,
		`{}`, ` {} `, `{"content":[]}`, `{"content":null}`, `{"content":[{"type":"text"}]}`, `{"content":[{"text":"x"}]}`,
		`{"content":[{}]}`, `{"content":[null]}`, `{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}`,
		`{"content":[{"type":"text","text":"x","annotations":{"priority":1}}]}`, `{"content":[{"type":"text","text":"x","_meta":{}}]}`,
		`{"content":[{"type":"text","text":"a","text":"b"}]}`, `{"content":[{"type":"text","type":"text"}]}`,
		`{"content":[{"t\u0079pe":"text","text":"x"}]}`, `{"c\u006fntent":[]}`, `{"Content":[]}`, `{"isError":null}`,
		`{"isError":true,"isError":false}`, `{"content":[],"content":[{"type":"text","text":"x"}]}`,
		`{"structuredContent":1,"structuredContent":2}`, `{"_meta":{"k":"v"},"content":[]}`, `{"resultType":"complete"}`,
		`{"requestState":"s"}`, `{"inputRequests":{}}`, `{"unknown":1}`, `{"content":{}}`, `{"content":"x"}`, `{"isError":"x"}`,
		"\t{ \"content\" :\r\n[ { \"type\" : \"text\" , \"text\" : \"a\" } ] , \"isError\" : false }\n", `[]`, `null`, `"x"`, `1`,
	)
}

// plainInvalid are not valid JSON, each a plain result but for one thing.
var plainInvalid = []string{
	``, ` `, `{`, `{"content":[]`, `{"content":[],}`, `{,"content":[]}`, `{"content":[,]}`, `{"content":[{"type":"text"},]}`,
	`{"content":[{"type":"text",}]}`, `{"content" []}`, `{"content":[]}}`, `{"content":[]} x`, `{"content":[]}{}`,
	`{"isError":tru}`, `{"isError":truex}`, `{"isError":True}`, `{"content":[{"type":"text","text":"a}]}`,
	`{"content":[{"type":"text","text":"a\"}]}`, "{\"content\":[{\"type\":\"text\",\"text\":\"a\nb\"}]}",
	"{\"content\":[{\"type\":\"text\",\"text\":\"a\x00\"}]}", "{\"content\":[{\"type\":\"text\",\"text\":\"\x1f\"}]}",
	"{\"structuredContent\":{\"a\tb\":1}}", "{\"conte\nt\":[]}", `{"content":[{"type":"text","text":"\x"}]}`,
	`{"content":[{"type":"text","text":"\u12"}]}`, `{"content":[{"type":"text","text":"\u12g4"}]}`,
	`{"content":[{"type":"text","text":"\u+123"}]}`, `{"content":[{"type":"text","text":"\\\"}]}`, `{"content":[{"type":"text","text":"\`,
	`{"structuredContent":01}`, `{"structuredContent":1.}`, `{"structuredContent":.5}`, `{"structuredContent":-}`,
	`{"structuredContent":1e}`, `{"structuredContent":1e+}`, `{"structuredContent":+1}`, `{"structuredContent":0x10}`,
	`{"structuredContent":1_000}`, `{"structuredContent":Infinity}`, `{"structuredContent":-Inf}`, `{"structuredContent":NaN}`,
	`{"structuredContent":[1,]}`, `{"structuredContent":[,1]}`, `{"structuredContent":{"a":1,}}`, `{"structuredContent":{"a"}}`,
	`{"structuredContent":{1:1}}`, `{"structuredContent":{'a':1}}`, `{"structuredContent":[1 2]}`, `{"structuredContent":nul}`,
	`{"structuredContent":` + strings.Repeat(`[`, 1001) + strings.Repeat(`]`, 1001) + `}`,
}

// checkPlain compares plainResult with v1.8.0's UnmarshalJSON on data and
// reports whether plainResult decoded it.
func checkPlain(t *testing.T, data []byte) bool {
	t.Helper()
	got, ok := plainResult(data)
	if !ok {
		return false
	}
	var want CallToolResult
	if err := unmarshalV180(&want, data); err != nil {
		t.Fatalf("%q: plainResult decoded what v1.8.0 refuses (%v): %#v", data, err, got)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: plainResult\n%s\nv1.8.0\n%s", data, dump(got), dump(want))
	}
	return true
}

func dump(r CallToolResult) string {
	s := fmt.Sprintf("%#v", r)
	for _, c := range r.Content {
		s += fmt.Sprintf("\n  %#v", c)
	}
	return s
}

// TestPlainResultMatchesV180: on every input, plainResult decodes what
// v1.8.0's UnmarshalJSON decodes or leaves the input alone, and
// UnmarshalJSON, UnmarshalValidJSON (on valid input) and internal/json's
// Unmarshal decode what v1.8.0 decodes (the same fields, the same error,
// the bytes kept) either way. It decodes the plain results, and no invalid
// JSON.
func TestPlainResultMatchesV180(t *testing.T) {
	decoded := map[string]bool{}
	same := func(in, how string, gotErr, wantErr error, got, want CallToolResult, kept string) {
		t.Helper()
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("%q: %s's error %v, v1.8.0 %v", in, how, gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		if kept != "" && string(got.DecodedJSON()) != kept {
			t.Fatalf("%q: %s kept %q", in, how, got.DecodedJSON())
		}
		got.decoded, got.plain = nil, false // PATCH(toolgate): patch 21
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %s\n%s\nv1.8.0\n%s", in, how, dump(got), dump(want))
		}
	}
	for _, in := range append(plainInputs(), plainInvalid...) {
		data := []byte(in)
		decoded[in] = checkPlain(t, data)
		var want CallToolResult
		wantErr := unmarshalV180(&want, data)
		var got CallToolResult
		same(in, "UnmarshalJSON", got.UnmarshalJSON(data), wantErr, got, want, in)
		kept := "" // the decoder's first value, when the input is not valid
		if segjson.Valid(data) {
			kept = strings.Trim(in, " \t\r\n")
		}
		got = CallToolResult{}
		same(in, "Unmarshal", internaljson.Unmarshal(data, &got), wantErr, got, want, kept)
		if segjson.Valid(data) && (wantErr == nil || !strings.Contains(wantErr.Error(), "maximum nesting depth")) { // its input
			got = CallToolResult{}
			same(in, "UnmarshalValidJSON", got.UnmarshalValidJSON(data), wantErr, got, want, in)
		}
	}
	for _, in := range plainInvalid {
		if decoded[in] {
			t.Errorf("%q: invalid JSON decoded by plainResult", in)
		}
		if segjson.Valid([]byte(in)) && !strings.Contains(in, "[[[") {
			t.Errorf("%q: valid JSON in plainInvalid", in)
		}
	}
	for _, in := range []string{
		`{}`, `{"content":[]}`, `{"content":[{"type":"text"}]}`, `{"isError":true}`,
		`{"content":[{"type":"text","text":"line 1\nline 2\n"}],"structuredContent":{"content":"line 1\nline 2\n"}}`,
		`{"structuredContent":{"k":1,"k":2,"\u006b":3},"isError":false}`,
		`{"content":[{"type":"text","text":"\u0041\u00e9\u2028\uFFFF\u0000\u001b"}]}`,
		"{\"content\":[{\"type\":\"text\",\"text\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}]}",
	} {
		if ok := checkPlain(t, []byte(in)); !ok {
			t.Errorf("%s: a plain result left to the SDK's decoder", in)
		}
	}
	for _, in := range []string{
		"{\"content\":[{\"type\":\"text\",\"text\":\"caf\xe9\"}]}", `{"content":[{"type":"text","text":"\ud83d\ude00"}]}`,
		`{"structuredContent":1e400}`, `{"content":null}`, `{"isError":null}`, `{"content":[{"type":"text","text":"a","text":"b"}]}`,
		`{"content":[{"type":"text","text":"x","annotations":{"priority":1}}]}`, `{"_meta":{"k":"v"},"content":[]}`,
		`{"content":[],"content":[]}`, `{"content":[{"t\u0079pe":"text","text":"x"}]}`,
	} {
		if decoded[in] || checkPlain(t, []byte(in)) {
			t.Errorf("%s: decoded by plainResult", in)
		}
	}
}

// FuzzPlainResult: whatever input plainResult decodes, v1.8.0's
// UnmarshalJSON decodes (it is valid JSON within the depth limit), into the
// same result.
//
//	go test -run '^$' -fuzz FuzzPlainResult -fuzztime 60s ./mcp/
func FuzzPlainResult(f *testing.F) {
	for _, in := range plainInputs() {
		f.Add([]byte(in))
	}
	for _, in := range plainInvalid {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkPlain(t, data)
	})
}

// PATCH(toolgate): patch 21. checkDecodedPlain: a result says it was
// decoded plain exactly when plainResult reads the bytes it keeps; then
// they are valid UTF-8 with no escaped surrogate, as DecodedPlain says.
func checkDecodedPlain(t *testing.T, data []byte) bool {
	t.Helper()
	var r CallToolResult
	if internaljson.Unmarshal(data, &r) != nil {
		return false
	}
	kept := r.DecodedJSON()
	if _, ok := plainResult(kept); ok != r.DecodedPlain() {
		t.Fatalf("%q: DecodedPlain %v, plainResult %v", data, r.DecodedPlain(), ok)
	}
	if !r.DecodedPlain() {
		return false
	}
	if !utf8.Valid(kept) {
		t.Fatalf("%q: decoded plain, not UTF-8", data)
	}
	for i := 0; i < len(kept); i++ {
		if kept[i] != '\\' {
			continue
		}
		if e := kept[i+1:]; e[0] == 'u' && (e[1]|0x20) == 'd' && (e[2]|0x20) >= '8' {
			t.Fatalf("%q: decoded plain, an escaped surrogate", data)
		}
		i++
	}
	// Decoded again, otherwise, it is not plain.
	var again CallToolResult
	if again.UnmarshalValidJSON(kept) != nil || again.DecodedPlain() {
		t.Fatalf("%q: UnmarshalValidJSON says plain", data)
	}
	return true
}

// TestDecodedPlain: checkDecodedPlain on patch 11's inputs; the plain
// results say so, the others not.
func TestDecodedPlain(t *testing.T) {
	plain := 0
	for _, in := range append(plainInputs(), plainInvalid...) {
		if checkDecodedPlain(t, []byte(in)) {
			plain++
		}
	}
	if plain < 300 {
		t.Errorf("%d decoded plain", plain)
	}
	for _, in := range []string{`{"content":[{"type":"text","text":"\ud83d\ude00"}]}`, "{\"content\":[{\"type\":\"text\",\"text\":\"caf\xe9\"}]}", `{"structuredContent":{"k":"\udc00"}}`} {
		if checkDecodedPlain(t, []byte(in)) {
			t.Errorf("%s: decoded plain", in)
		}
	}
}

// FuzzDecodedPlain: checkDecodedPlain on any bytes.
//
//	go test -run '^$' -fuzz FuzzDecodedPlain -fuzztime 60s ./mcp/
func FuzzDecodedPlain(f *testing.F) {
	for _, in := range plainInputs() {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodedPlain(t, data)
	})
}
