package runner

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// sameAsEncodingJSON fails t unless DecodeAnswer(line) gives what
// json.Unmarshal gives (the same value, or an error both), and, when
// readFlat read it, json.Unmarshal took it too.
func sameAsEncodingJSON(t *testing.T, line []byte) {
	t.Helper()
	var want Answer
	werr := json.Unmarshal(line, &want)
	got, err := DecodeAnswer(line)
	if (err != nil) != (werr != nil) || err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeAnswer(%q) = %#v, %v; json.Unmarshal: %#v, %v", line, got, err, want, werr)
	}
	if r, ok := readFlat(line); ok && (werr != nil || !reflect.DeepEqual(r, want.Result)) {
		t.Fatalf("readFlat(%q) = %#v; json.Unmarshal: %#v, %v", line, r, want.Result, werr)
	}
}

// flatResults are results of the shape flatLine writes.
var flatResults = []tool.Result{
	{},
	tool.TextResult("line 1 <a href=\"x\">&amp;</a>\n\ttab \\ / \u2028 \x01 \xff \b\f\r end é 😀"),
	tool.TextResult(""),
	{Content: []tool.Content{tool.TextContent(""), {Type: "resource", URI: "file:///x y", MIMEType: "text/plain", Text: "t"}, tool.TextContent("b")}},
	{Content: []tool.Content{tool.TextContent("x")}, Meta: map[string]any{"total_lines": 20, "start_line": 1, "truncated": false, "end_line": int64(-20), "path": "a/b\"c", "z": true, "": ""}},
	{Meta: map[string]any{"n": 1 << 62}},
}

// TestDecodeAnswer: the lines flatLine writes are read by readFlat, to the
// value json.Unmarshal gives; every other line is decoded as
// json.Unmarshal decodes it, or refused as it refuses it.
func TestDecodeAnswer(t *testing.T) {
	for _, r := range flatResults {
		line := resultLine("t", r)
		line = line[:len(line)-1]
		if _, ok := readFlat(line); !ok {
			t.Errorf("readFlat gave up on flatLine's %s", line)
		}
		sameAsEncodingJSON(t, line)
	}
	for _, c := range []struct {
		line string
		flat bool // readFlat reads it
	}{
		{`{"result":{}}`, true},
		{`{"result":{"content":[],"meta":{}}}`, true},
		{`{"result":{"meta":{"a":null,"b":-0,"c":1.5e3,"d":0.25,"e":"\ud83d\ude00\u00e9\u002F"}}}`, true},
		{`{"\u0072esult":{"content":[{"text":"x"}]}}`, true},
		{`{"result":{"content":[{},{"uri":"u","type":"t"}]}}`, true},
		{`{"result":{"meta":{"x":1e999}}}`, false},
		{`{"result":{"meta":{"x":01}}}`, false},
		{`{"result":{"meta":{"x":1.}}}`, false},
		{`{"result":{"meta":{"x":-}}}`, false},
		{`{"result":{"meta":{"x":nul}}}`, false},
		{`{"result":{"meta":{"x":{}}}}`, false},
		{`{"result":{"meta":{"x":[1]}}}`, false},
		{`{"result":{"meta":{"x":1,"x":2}}}`, false},
		{`{"result":{"meta":{"a":1},"meta":{"b":2}}}`, false},
		{`{"result":{"content":[{"text":"a"}],"content":[{"type":"b"}]}}`, false},
		{`{"result":{"content":[{"text":"a","text":"b"}]}}`, false},
		{`{"result":{"content":[{"Text":"a"}]}}`, false},
		{`{"Result":{}}`, false},
		{`{"result":{"Content":[]}}`, false},
		{`{"result":{"content":null}}`, false},
		{`{"result":null}`, false},
		{`{"result":{"content":[{"data":"AQI="}]}}`, false},
		{`{"result":{"structured":{"a":1}}}`, false},
		{`{"result":{"error":{"type":"not_found","message":"no"}}}`, false},
		{`{"progress":{"done":1,"total":2,"message":"m"}}`, false},
		{`{"progress":{"done":1},"result":{}}`, false},
		{`{"result":{},"progress":{"done":1}}`, false},
		{`{"result":{"content":[{"text":"\ud83d"}]}}`, false},
		{`{"result":{"content":[{"text":"\ud83dx"}]}}`, false},
		{`{"result":{"content":[{"text":"\ude00\ud83d"}]}}`, false},
		{`{"result":{"content":[{"text":"\u12"}]}}`, false},
		{`{"result":{"content":[{"text":"\x"}]}}`, false},
		{`{"result":{"content":[{"text":"\"}]}}`, false},
		{"{\"result\":{\"content\":[{\"text\":\"a\x01\"}]}}", false},
		{"{\"result\":{\"content\":[{\"text\":\"a\xff\"}]}}", false},
		{"{\"result\":{\"content\":[{\"text\":\"a\xed\xa0\x80\"}]}}", false},
		{`{"result": {}}`, false},
		{` {"result":{}}`, false},
		{`{"result":{}} `, false},
		{`{"result":{}}x`, false},
		{`{"result":{}`, false},
		{`{"result":{"content":[{"text":"a"},]}}`, false},
		{`{"result":{"content":[{"text":"a"}`, false},
		{`{"result":{"meta":{"a":true,}}}`, false},
		{`{"result":{"meta":{"a":"b`, false},
		{`{}`, false},
		{``, false},
		{`null`, false},
		{`[]`, false},
	} {
		if _, ok := readFlat([]byte(c.line)); ok != c.flat {
			t.Errorf("readFlat(%s): read %v, want %v", c.line, ok, c.flat)
		}
		sameAsEncodingJSON(t, []byte(c.line))
	}
}

// FuzzDecodeAnswer: whatever a runner sends, DecodeAnswer decodes it as
// json.Unmarshal does, or refuses it as json.Unmarshal does.
func FuzzDecodeAnswer(f *testing.F) {
	for _, r := range flatResults {
		f.Add(resultLine("t", r))
	}
	f.Add([]byte(`{"result":{"meta":{"a":null,"b":-0,"c":1.5e3,"e":"\ud83d\ude00\u00e9"}}}`))
	f.Add([]byte(`{"result":{"content":[{},{"uri":"u","type":"t","mime_type":"m"}]}}`))
	f.Add([]byte(`{"progress":{"done":1,"total":2,"message":"m"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		sameAsEncodingJSON(t, line)
	})
}

// sameCallAsEncodingJSON fails t unless DecodeCall(body) gives what
// json.Unmarshal gives, and, when readCall read it, json.Unmarshal took it
// too.
func sameCallAsEncodingJSON(t *testing.T, body []byte) {
	t.Helper()
	var want CallRequest
	werr := json.Unmarshal(body, &want)
	got, err := DecodeCall(body)
	if (err != nil) != (werr != nil) || err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeCall(%q) = %#v, %v; json.Unmarshal: %#v, %v", body, got, err, want, werr)
	}
	if c, ok := readCall(body); ok && (werr != nil || !reflect.DeepEqual(c, want)) {
		t.Fatalf("readCall(%q) = %#v; json.Unmarshal: %#v, %v", body, c, want, werr)
	}
}

// TestDecodeCall: the bodies AppendCall writes are read by readCall (their
// arguments copied, not kept in the body's buffer), to the value
// json.Unmarshal gives of them and of json.Marshal's body of the same
// call; every other body is decoded as json.Unmarshal decodes it, or
// refused as it refuses it.
func TestDecodeCall(t *testing.T) {
	for _, c := range []CallRequest{
		{Name: "read_file", Arguments: json.RawMessage(`{"path":"small.txt"}`)},
		{Name: "t\"<é>\u2028\x01", Arguments: json.RawMessage(`{"a": ["<&>", 1.5, null, {"b": "\u00e9"}]}`)},
		{Name: "none"},
		{Name: "null", Arguments: json.RawMessage(`null`)},
		{Name: "", Arguments: json.RawMessage(`7`)},
	} {
		body := AppendCall(nil, c.Name, c.Arguments)
		got, ok := readCall(body)
		if !ok || !reflect.DeepEqual(got, c) {
			t.Errorf("readCall(AppendCall(%#v)) = %#v, %v", c, got, ok)
		}
		if len(got.Arguments) > 0 && &got.Arguments[0] == &body[len(body)-1-len(got.Arguments)] {
			t.Errorf("readCall kept the arguments in the body's buffer")
		}
		sameCallAsEncodingJSON(t, body)
		std, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var want CallRequest
		if err := json.Unmarshal(std, &want); err != nil {
			t.Fatal(err)
		}
		if got.Name != want.Name || (len(got.Arguments) > 0) != (len(want.Arguments) > 0) ||
			len(want.Arguments) > 0 && !equalJSON(t, got.Arguments, want.Arguments) {
			t.Errorf("AppendCall(%#v) = %s, json.Marshal %s: not the same call", c, body, std)
		}
	}
	for _, c := range []struct {
		body string
		read bool // readCall reads it
	}{
		{`{"name":"a"}`, true},
		{`{"name":"\u0061\n","arguments":{}}`, true},
		{`{"\u006eame":"a","arguments":[]}`, true},
		{`{"name":"a","arguments":{"x":1},"name":"b"}`, false},
		{`{"name":"a","arguments":{"x":1}}}`, false},
		{`{"name":"a","arguments":{"x":1} }`, false},
		{`{"name":"a","arguments": {"x":1}}`, false},
		{`{"name":"a","arguments":}`, false},
		{`{"name":"a","arguments":{"x":}}`, false},
		{`{"name":"a","arguments":"\ud800"}`, true}, // kept as it is, as a RawMessage
		{`{"name":"a","arguments":"x"y}`, false},
		{`{"arguments":{},"name":"a"}`, false},
		{`{"Name":"a"}`, false},
		{`{"name":null}`, false},
		{`{"name":1}`, false},
		{`{"name":"a","extra":1}`, false},
		{`{"name":"a"} `, false},
		{"{\"name\":\"a\xff\"}", false},
		{`{"name":"a",}`, false},
		{`{}`, false},
		{``, false},
		{`[]`, false},
	} {
		if _, ok := readCall([]byte(c.body)); ok != c.read {
			t.Errorf("readCall(%s): read %v, want %v", c.body, ok, c.read)
		}
		sameCallAsEncodingJSON(t, []byte(c.body))
	}
}

// equalJSON reports whether two JSON texts hold the same value.
func equalJSON(t *testing.T, a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		t.Fatalf("not JSON: %s, %s", a, b)
	}
	return reflect.DeepEqual(x, y)
}

// FuzzDecodeCall: whatever a caller sends as a call's body, DecodeCall
// decodes it as json.Unmarshal does, or refuses it as json.Unmarshal does.
func FuzzDecodeCall(f *testing.F) {
	f.Add(AppendCall(nil, "read_file", json.RawMessage(`{"path":"small.txt"}`)))
	f.Add(AppendCall(nil, "x", nil))
	f.Add([]byte(`{"name":"a","arguments":{"x":1},"name":"b"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		sameCallAsEncodingJSON(t, body)
	})
}
