package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/tool"
)

type readIn struct {
	Path   string   `json:"path" jsonschema:"file to read, relative to the workspace"`
	Offset int      `json:"offset,omitempty" jsonschema:"first line, 1-based" default:"1" minimum:"1"`
	Limit  int      `json:"limit" default:"500" minimum:"1" maximum:"2000"`
	Mode   string   `json:"mode,omitempty" enum:"text,hex" default:"text"`
	Tags   []string `json:"tags,omitempty" enum:"a,b" maxItems:"2"`
	Skip   string   `json:"-"`
	Nested struct {
		Deep bool `json:"deep" default:"true"`
	} `json:"nested,omitzero"`
}

type readOut struct {
	Lines int    `json:"lines"`
	Text  string `json:"text"`
}

func TestInferredSchema(t *testing.T) {
	tl := tool.New("read_file", "Reads a file.", func(_ context.Context, in readIn) (readOut, error) {
		return readOut{Lines: in.Offset, Text: in.Mode}, nil
	})
	var s map[string]any
	if err := json.Unmarshal(tl.Definition().InputSchema, &s); err != nil {
		t.Fatal(err)
	}
	props := s["properties"].(map[string]any)
	want := map[string]string{
		"path":   `{"description":"file to read, relative to the workspace","type":"string"}`,
		"offset": `{"default":1,"description":"first line, 1-based","minimum":1,"type":"integer"}`,
		"limit":  `{"default":500,"maximum":2000,"minimum":1,"type":"integer"}`,
		"mode":   `{"default":"text","enum":["text","hex"],"type":"string"}`,
		"tags":   `{"items":{"enum":["a","b"],"type":"string"},"maxItems":2,"type":"array"}`,
	}
	for name, w := range want {
		got, _ := json.Marshal(props[name])
		if string(got) != w {
			t.Errorf("property %s = %s\nwant %s", name, got, w)
		}
	}
	if _, ok := props["Skip"]; ok {
		t.Error(`a json:"-" field must not appear`)
	}
	if fmt.Sprint(s["required"]) != "[path]" {
		t.Errorf("required = %v, want [path] (defaults and omitempty make fields optional)", s["required"])
	}
	if s["additionalProperties"] != false {
		t.Errorf("additionalProperties = %v, want false", s["additionalProperties"])
	}
	if len(tl.Definition().OutputSchema) == 0 {
		t.Error("no output schema inferred")
	}
}

func TestTypedRunAppliesDefaults(t *testing.T) {
	var got readIn
	tl := tool.New("read_file", "Reads a file.", func(_ context.Context, in readIn) (readOut, error) {
		got = in
		return readOut{Lines: 3, Text: "x"}, nil
	})
	res, err := tl.Run(context.Background(), tool.Call{Args: json.RawMessage(`{"path":"a.txt","limit":7}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got.Path != "a.txt" || got.Offset != 1 || got.Limit != 7 || got.Mode != "text" || !got.Nested.Deep {
		t.Errorf("decoded %+v", got)
	}
	if res.Structured != (readOut{3, "x"}) || res.Text() != `{"lines":3,"text":"x"}` {
		t.Errorf("result %+v", res)
	}
	// Empty and null arguments give the defaults.
	for _, args := range []string{``, `null`, ` `} {
		if _, err := tl.Run(context.Background(), tool.Call{Args: json.RawMessage(args)}); err != nil {
			t.Errorf("args %q: %v", args, err)
		}
		if got.Limit != 500 {
			t.Errorf("args %q: limit %d, want the default 500", args, got.Limit)
		}
	}
	_, err = tl.Run(context.Background(), tool.Call{Args: json.RawMessage(`{"path":7}`)})
	var te *tool.Error
	if !errors.As(err, &te) || te.Type != tool.InvalidArguments {
		t.Errorf("a wrong type must be invalid_arguments, got %v", err)
	}
}

type plainIn struct {
	Name  string `json:"name" default:"anon"`
	Count int    `json:"count" default:"3"`
}

func TestDefaultsDoNotLeakBetweenCalls(t *testing.T) {
	tl := tool.New("p", "p", func(_ context.Context, in plainIn) (plainIn, error) { return in, nil })
	r1, _ := tl.Run(context.Background(), tool.Call{Args: json.RawMessage(`{"name":"x","count":9}`)})
	r2, _ := tl.Run(context.Background(), tool.Call{Args: json.RawMessage(`{}`)})
	if r1.Structured != (plainIn{"x", 9}) || r2.Structured != (plainIn{"anon", 3}) {
		t.Errorf("got %+v then %+v", r1.Structured, r2.Structured)
	}
}

func TestOutputKinds(t *testing.T) {
	s := tool.New("s", "s", func(context.Context, struct{}) (string, error) { return "hello", nil })
	if len(s.Definition().OutputSchema) != 0 {
		t.Error("a string tool needs no output schema")
	}
	res, _ := s.Run(context.Background(), tool.Call{})
	if res.Text() != "hello" || res.Structured != nil {
		t.Errorf("string tool result %+v", res)
	}
	r := tool.New("r", "r", func(context.Context, struct{}) (tool.Result, error) {
		res := tool.TextResult("built")
		res.SetMeta("k", 1)
		return res, nil
	})
	res, _ = r.Run(context.Background(), tool.Call{})
	if res.Text() != "built" || res.Meta["k"] != 1 {
		t.Errorf("Result tool result %+v", res)
	}
}

func TestNewPanicsOnUnrepresentableInput(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New accepted a channel field")
		}
	}()
	tool.New("bad", "bad", func(context.Context, struct{ C chan int }) (string, error) { return "", nil })
}

func TestErrorText(t *testing.T) {
	e := tool.Errorf(tool.RateLimited, "too many calls to %s", "search").WithRetry(1500*time.Millisecond).
		WithSuggestion("wait, then retry").WithDetail("limit", 10)
	text := e.Text()
	for _, want := range []string{"rate_limited", "too many calls to search", "What to do: wait, then retry", "after 1.5s"} {
		if !strings.Contains(text, want) {
			t.Errorf("Text() = %q, missing %q", text, want)
		}
	}
	b, _ := json.Marshal(e)
	if string(b) != `{"type":"rate_limited","message":"too many calls to search","retryable":true,"retry_after":1.5,"suggestion":"wait, then retry","details":{"limit":10}}` {
		t.Errorf("JSON = %s", b)
	}
	var back tool.Error
	if err := json.Unmarshal(b, &back); err != nil || back.RetryAfter != 1500*time.Millisecond || back.Type != tool.RateLimited {
		t.Errorf("round trip = %+v, %v", back, err)
	}
}

func TestAsError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want tool.ErrorType
	}{
		{fmt.Errorf("open: %w", fs.ErrNotExist), tool.NotFound},
		{fmt.Errorf("open: %w", fs.ErrPermission), tool.PermissionDenied},
		{fs.ErrExist, tool.Conflict},
		{context.DeadlineExceeded, tool.Timeout},
		{fmt.Errorf("wrapped: %w", tool.Errorf(tool.TooLarge, "big")), tool.TooLarge},
		{errors.New("boom"), tool.Internal},
	} {
		if got := tool.AsError(tc.err); got.Type != tc.want {
			t.Errorf("AsError(%v) = %s, want %s", tc.err, got.Type, tc.want)
		}
	}
	cause := errors.New("root cause")
	if e := tool.Errorf(tool.Unavailable, "upstream: %w", cause); !errors.Is(e, cause) {
		t.Error("Errorf with %w must unwrap to the cause")
	}
}

func TestResultJSON(t *testing.T) {
	res := tool.Result{
		Content: []tool.Content{
			tool.TextContent(""),
			tool.ImageContent([]byte{1, 2}, "image/png"),
			{Type: "resource", URI: "file:///a.txt", MIMEType: "text/plain", Text: "hi"},
		},
		Structured: map[string]any{"n": 1},
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"content":[{"type":"text","text":""},{"type":"image","data":"AQI=","mimeType":"image/png"},{"type":"resource","resource":{"uri":"file:///a.txt","mimeType":"text/plain","text":"hi"}}],"structured":{"n":1},"is_error":false}`
	if string(b) != want {
		t.Errorf("JSON =\n%s\nwant\n%s", b, want)
	}
	var back tool.Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Content[2].URI != "file:///a.txt" || string(back.Content[1].Data) != "\x01\x02" {
		t.Errorf("round trip %+v", back)
	}
	e := tool.ErrorResult(tool.Errorf(tool.NotFound, "no such file"))
	b, _ = json.Marshal(e)
	if !strings.Contains(string(b), `"is_error":true`) || !strings.Contains(string(b), `"type":"not_found"`) {
		t.Errorf("error result JSON %s", b)
	}
	if _, err := json.Marshal(tool.Result{Content: []tool.Content{{Type: "video"}}}); err == nil {
		t.Error("an unknown content type must not marshal")
	}
}
