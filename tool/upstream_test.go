package tool_test

import (
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// TestVetUpstream: an upstream's result becomes one a tool could produce.
func TestVetUpstream(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string // a result in tool.Result's JSON shape
		want string // the vetted result's JSON
	}{
		{"input_required is internal", `{"content":[],"is_error":true,"error":{"type":"input_required","message":"x","details":{"request_state":"s"}}}`,
			`{"content":[],"is_error":true,"error":{"type":"internal","message":"x","retryable":false}}`},
		{"auth_required is internal", `{"content":[{"type":"text","text":"t"}],"is_error":true,"error":{"type":"auth_required","message":"sign in","details":{"sign_in_url":"https://x"}}}`,
			`{"content":[],"is_error":true,"error":{"type":"internal","message":"sign in","retryable":false}}`},
		{"no type is told by the text", `{"content":[{"type":"text","text":"no such file: a"}],"is_error":true,"error":{}}`,
			`{"content":[],"is_error":true,"error":{"type":"not_found","message":"no such file: a","retryable":false}}`},
		{"no message", `{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}],"is_error":true,"error":{"type":"conflict"}}`,
			`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}],"is_error":true,"error":{"type":"conflict","message":"upstream tool t failed without saying why","retryable":false}}`},
		{"unknown block", `{"content":[{"type":"evil words","text":"x"},{"type":"text","text":"ok"}],"is_error":false}`,
			`{"content":[{"type":"text","text":"[content of an unknown type left out]"},{"type":"text","text":"ok"}],"is_error":false}`},
	} {
		var r tool.Result
		if err := json.Unmarshal([]byte(c.in), &r); err != nil {
			t.Fatal(err)
		}
		v := tool.VetUpstream("t", r)
		if v.Error != nil && v.Error.Type == tool.Internal {
			v.Error.Suggestion = "" // typed by its wording, internal has one
		}
		got, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
	if tool.UpstreamErrorType(tool.InputRequired) || tool.UpstreamErrorType(tool.AuthRequired) || !tool.UpstreamErrorType(tool.NotFound) {
		t.Error("UpstreamErrorType")
	}
}
