// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package jsonrpc2

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	internaljson "github.com/modelcontextprotocol/go-sdk/internal/json"
)

// PATCH(toolgate): patch 12, a plain message is decoded in one pass. These
// tests check that DecodeMessage decodes what v1.8.0's did.

// wireDecodeV180 is wireDecode without its method: what v1.8.0 decoded.
type wireDecodeV180 wireDecode

// decodeMessageV180 is v1.8.0's DecodeMessage, word for word (but for the
// type above).
func decodeMessageV180(data []byte) (Message, error) {
	msg := wireDecodeV180{}
	if err := internaljson.Unmarshal(data, &msg); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if msg.VersionTag != wireVersion {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", msg.VersionTag, wireVersion)
	}
	id, err := MakeID(msg.ID)
	if err != nil {
		return nil, err
	}
	if len(msg.Method) > 0 {
		// The "method" key was present. Decode its value (including "").
		var method string
		if err := internaljson.Unmarshal(msg.Method, &method); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &Request{
			Method: method,
			ID:     id,
			Params: msg.Params,
		}, nil
	}
	// no method key, should be a response
	if !id.IsValid() {
		return nil, ErrInvalidRequest
	}
	resp := &Response{
		ID:     id,
		Result: msg.Result,
	}
	// we have to check if msg.Error is nil to avoid a typed error
	if msg.Error != nil {
		resp.Error = msg.Error
	}
	return resp, nil
}

// plainMessages are messages, plain and not, valid JSON and not.
func plainMessages() []string {
	ids := []string{`0`, `1`, `-1`, `-0`, `123456789012345`, `-123456789012345`, `1234567890123456`, `1.5`, `1e3`, `01`,
		`"a"`, `""`, `"\u0041\n"`, "\"\xff\"", `"\ud800"`, `null`, `true`, `{}`, `[1]`}
	values := []string{`{}`, `[]`, `{"a":[1,2.5,-3e-2,"x\"y\\z\u00e9\n",true,false,null,{"b":{}}]}`, `"text"`, `12`, `null`,
		"{\"content\":[{\"type\":\"text\",\"text\":\"line 1\\nline 2 caf\xc3\xa9 \xff\"}]}", `{"k":1,"k":2}`, `{"\u006b":1}`,
		strings.Repeat(`[`, 65) + strings.Repeat(`]`, 65), `{"a":1,}`, `[1,]`, `"\x"`, "\"a\x01\"", `01`, `{"a" 1}`, `tru`, `"\u12g4"`}
	methods := []string{`"tools/call"`, `""`, `"a\"b"`, `"\u0041"`, "\"caf\xc3\xa9\"", `1`, `null`, `{}`,
		`" "`, `"~"`, `"a\\"`, `"\\"`, "\"\x7f\"", "\"a\x1f\"", "\"\xff\"", `"a/b c"`, `"\/"`} // PATCH(toolgate): patch 20's plain methods and their neighbours
	var in []string
	for _, id := range ids {
		in = append(in,
			`{"jsonrpc":"2.0","id":`+id+`,"result":{}}`,
			`{"jsonrpc":"2.0","id":`+id+`,"method":"m","params":{}}`,
		)
	}
	for _, v := range values {
		in = append(in,
			`{"jsonrpc":"2.0","id":7,"result":`+v+`}`,
			`{"result":`+v+`,"id":"x","jsonrpc":"2.0"}`,
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":`+v+`}`,
			`{"jsonrpc":"2.0","method":"notifications/x","params":`+v+`}`,
		)
	}
	for _, m := range methods {
		in = append(in, `{"jsonrpc":"2.0","id":1,"method":`+m+`,"params":{}}`, `{"jsonrpc":"2.0","method":`+m+`}`)
	}
	return append(in,
		`{"jsonrpc":"2.0","id":1,"result":{},"result":[]}`, `{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"result":{}}`, `{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`,
		`{"jsonrpc":"2.0","id":1,"params":{},"params":[]}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{},"extra":1}`, `{"jsonrpc":"1.0","id":1,"result":{}}`, `{"jsonrpc":"2\u002e0","id":1,"result":{}}`,
		`{"id":1,"result":{}}`, `{"jsonrpc":"2.0","result":{}}`, `{"jsonrpc":"2.0","id":1}`, `{"jsonrpc":"2.0","id":1,"method":"m","result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":null}`, `{"jsonrpc":"2.0","id":1,"params":null,"method":"m"}`, `{"JSONRPC":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","i\u0064":1,"result":{}}`, ` {"jsonrpc" : "2.0" , "id" : 1 , "result" : { } } `, "\t{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n",
		`{}`, `{`, `{"jsonrpc":"2.0","id":1,"result":{}`, `{"jsonrpc":"2.0","id":1,"result":{}}}`, `{"jsonrpc":"2.0","id":1,"result":{}} {}`,
		`{"jsonrpc":"2.0","id":1,"result":{},}`, `[]`, `null`, ``, `{"jsonrpc":"2.0","id":1,"result":`+strings.Repeat(`[`, 1001)+strings.Repeat(`]`, 1001)+`}`,
	)
}

// checkPlainMessage compares UnmarshalPlainJSON with v1.8.0's decoding of
// data and reports whether it decoded it.
func checkPlainMessage(t *testing.T, data []byte) bool {
	t.Helper()
	var got wireDecode
	if !got.UnmarshalPlainJSON(data) {
		if !reflect.DeepEqual(got, wireDecode{}) {
			t.Fatalf("%q: UnmarshalPlainJSON declined but set %#v", data, got)
		}
		return false
	}
	// Patch 38: an integer id is kept as num, isNum (what ID would be:
	// float64(num)).
	if got.isNum {
		got.ID, got.num, got.isNum = float64(got.num), 0, false
	}
	var want wireDecodeV180
	if err := internaljson.Unmarshal(data, &want); err != nil {
		t.Fatalf("%q: decoded plain what v1.8.0 refuses (%v): %#v", data, err, got)
	}
	if !reflect.DeepEqual(wireDecodeV180(got), want) {
		t.Fatalf("%q: decoded plain\n%#v\nv1.8.0\n%#v", data, got, want)
	}
	return true
}

// TestDecodeMessageMatchesV180: DecodeMessage decodes every message as
// v1.8.0's did (the same message, the same error), whether
// UnmarshalPlainJSON decoded it or not; what UnmarshalPlainJSON decodes,
// v1.8.0 decoded the same; the usual requests, notifications and responses
// are decoded plain, and no invalid JSON is.
func TestDecodeMessageMatchesV180(t *testing.T) {
	plain := 0
	for _, in := range plainMessages() {
		data := []byte(in)
		if checkPlainMessage(t, data) {
			plain++
		}
		got, gotErr := DecodeMessage(data)
		want, wantErr := decodeMessageV180(data)
		// The type v1.8.0 decoded into has another name here.
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != strings.ReplaceAll(wantErr.Error(), "wireDecodeV180", "wireDecode") {
			t.Fatalf("%q: error %v, v1.8.0 %v", in, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %#v, v1.8.0 %#v", in, got, want)
		}
	}
	if plain < 60 {
		t.Errorf("%d messages decoded plain", plain)
	}
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\nb"}],"structuredContent":{"content":"a\nb"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"/tmp/x"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":"s","result":{}}`,
	} {
		if !checkPlainMessage(t, []byte(in)) {
			t.Errorf("%s: not decoded plain", in)
		}
	}
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{},}`, `{"jsonrpc":"2.0","id":1,"result":"\x"}`, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"a\x01\"}",
		`{"jsonrpc":"2.0","id":1,"result":01}`, `{"jsonrpc":"2.0","id":1,"result":{}} {}`, `{"jsonrpc":"2.0","id":1,"result":[1,]}`,
	} {
		if checkPlainMessage(t, []byte(in)) {
			t.Errorf("%s: invalid JSON decoded plain", in)
		}
	}
}

// FuzzPlainMessage: whatever UnmarshalPlainJSON decodes, v1.8.0 decoded
// without error into the same fields.
//
//	go test -run '^$' -fuzz FuzzPlainMessage -fuzztime 60s ./internal/jsonrpc2/
func FuzzPlainMessage(f *testing.F) {
	for _, in := range plainMessages() {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkPlainMessage(t, data)
	})
}
