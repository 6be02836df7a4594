package runner

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// TestFlatLine: a result of the common shape is written byte for byte as
// json.Marshal writes it (escapes, HTML characters, invalid UTF-8, sorted
// metadata keys, omitted empty fields); any other is left to json.Marshal.
func TestFlatLine(t *testing.T) {
	text := "line 1 <a href=\"x\">&amp;</a>\n\ttab \\ \u2028 \x01 \xff end"
	for _, r := range []tool.Result{
		{},
		tool.TextResult(text),
		{Content: []tool.Content{tool.TextContent(""), {Type: "resource", URI: "file:///x y", MIMEType: "text/plain", Text: text}, tool.TextContent("b")}},
		{Content: []tool.Content{tool.TextContent("x")}, Meta: map[string]any{"total_lines": 20, "start_line": 1, "truncated": false, "end_line": int64(20), "path": text, "z": true}},
		{Meta: map[string]any{"n": -3}},
	} {
		want, err := json.Marshal(Answer{Result: NewResult(r)})
		if err != nil {
			t.Fatal(err)
		}
		got, ok := flatLine(r)
		if !ok || string(got) != string(want) {
			t.Errorf("flatLine(%+v) = %v\n%s\nwant\n%s", r, ok, got, want)
		}
	}
	for _, r := range []tool.Result{
		{Content: []tool.Content{tool.ImageContent([]byte{1}, "image/png")}},
		{Structured: map[string]any{"a": 1}},
		tool.ErrorResult(tool.Errorf(tool.NotFound, "no")),
		{Meta: map[string]any{"f": 1.5}},
		{Meta: map[string]any{"f": math.NaN()}},
		{Meta: map[string]any{"m": map[string]any{}}},
	} {
		if _, ok := flatLine(r); ok {
			t.Errorf("flatLine took %+v", r)
		}
	}
}
