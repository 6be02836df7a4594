package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// spaced is a Marshaler whose output is not compact.
type spaced struct{}

func (spaced) MarshalJSON() ([]byte, error) { return []byte("{ \"a\" :\n [1, \"<b>\"] }"), nil }

// failing is a Marshaler that fails.
type failing struct{}

func (failing) MarshalJSON() ([]byte, error) { return nil, errors.New("no") }

// answer has the shape of a process tool's structured output.
type answer struct {
	ID       string `json:"id,omitempty"`
	State    string `json:"state"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Output   string `json:"output"`
	Cursor   int64  `json:"cursor"`
	More     bool   `json:"more,omitempty"`
}

// encodeCases are results as a tool or the engine gives them.
func encodeCases() map[string]tool.Result {
	text := "line <1> & \"2\" \\ \u2028 \u2029 \x00\x1f\x7f \xff\xfe é 😀\n\ttab"
	long := strings.Repeat("12345\n", 1500)
	code := 3
	var nilAnswer *answer
	return map[string]tool.Result{
		"text":               {Content: []tool.Content{tool.TextContent(text)}},
		"empty text":         {Content: []tool.Content{tool.TextContent("")}},
		"no content":         {},
		"two texts":          {Content: []tool.Content{tool.TextContent("a"), tool.TextContent(long)}},
		"odd process answer": {Content: []tool.Content{tool.TextContent("exited"), tool.TextContent(text + long)}, Structured: &answer{State: "exited", ExitCode: &code, Output: text + long, Cursor: 1}},
		"process answer":     {Content: []tool.Content{tool.TextContent("running; cursor 9000"), tool.TextContent(long)}, Structured: answer{State: "running", Output: long, Cursor: 9000, More: true}},
		"exited":             {Content: []tool.Content{tool.TextContent(text)}, Structured: &answer{ID: "p-1", State: "exited", ExitCode: &code, Output: text}},
		"map":                {Content: []tool.Content{tool.TextContent("x")}, Structured: map[string]any{"z": text, "a": []any{1.5, nil, true, "<&>"}, "m": map[string]any{}}},
		"string":             {Structured: text},
		"number":             {Structured: 42.0},
		"raw with spaces":    {Content: []tool.Content{tool.TextContent("x")}, Structured: json.RawMessage(" {\"a\" : [ 1 , \"<\" ] }\n")},
		"spaced marshaler":   {Structured: spaced{}},
		"nil pointer":        {Content: []tool.Content{tool.TextContent("x")}, Structured: nilAnswer},
		"meta":               {Content: []tool.Content{tool.TextContent(text)}, Structured: answer{Output: text}, Meta: map[string]any{"redacted": 2, "toolgate/processes": []map[string]any{{"id": "p-1"}}}},
		"error":              {Error: tool.Errorf(tool.NotFound, "no process <%s>", "p-1").WithSuggestion("list them & retry")},
		"error and content":  {Content: []tool.Content{tool.TextContent(text)}, Error: tool.Errorf(tool.Timeout, "late"), Meta: map[string]any{"k": "v"}},
		"image":              {Content: []tool.Content{tool.TextContent("x"), tool.ImageContent([]byte{1, 2, 3}, "image/png")}},
		"unknown type":       {Content: []tool.Content{{Type: "video", Text: "x"}}},
		"failing":            {Content: []tool.Content{tool.TextContent("x")}, Structured: failing{}},
		"not a number":       {Structured: math.NaN()},
	}
}

// withMeta is data (encode's output) with the result's _meta written in
// front, as the session writes it (mcp.CallToolResult.RelayJSON).
func withMeta(t *testing.T, out *mcp.CallToolResult, data []byte) []byte {
	if out.Meta == nil {
		return data
	}
	head, err := json.Marshal(map[string]any{"_meta": out.Meta})
	if err != nil {
		t.Fatal(err)
	}
	return append(append(head[:len(head)-1:len(head)-1], ','), data[1:]...)
}

// TestEncodeMatchesMarshalJSON: what callResult answers with is, byte for
// byte, what the result's MarshalJSON (go-sdk v1.8.0's encoding) writes;
// where encode declines, MarshalJSON encodes, and reports its error. So
// it is in a call's context (tool.WithEncoded), where a text block that
// repeats a string of the structured value copies its bytes, whether the
// stages before encoded that value or not.
func TestEncodeMatchesMarshalJSON(t *testing.T) {
	for _, encoded := range []string{"", "fresh", "encoded before"} {
		t.Run(encoded, func(t *testing.T) { testEncodeMatchesMarshalJSON(t, encoded) })
	}
}

func testEncodeMatchesMarshalJSON(t *testing.T, encoded string) {
	declines := map[string]bool{"image": true, "failing": true, "not a number": true}
	for name, res := range encodeCases() {
		ctx := context.Background()
		if encoded != "" {
			ctx = tool.WithEncoded(ctx)
		}
		if encoded == "encoded before" && res.Structured != nil {
			tool.MarshalJSON(ctx, res.Structured) // as the redaction and the check do
		}
		out := callResult(context.Background(), res)
		want, wantErr := out.MarshalJSON() // MarshalJSON ignores RelayJSON's bytes
		got, ok := encode(ctx, out)
		if ok {
			// The session's room before, its two bytes after.
			if len(got) < encodeRoom || cap(got)-len(got) < 2 {
				t.Errorf("%s: encode leaves %d bytes of room before, %d after", name, min(len(got), encodeRoom), cap(got)-len(got))
				continue
			}
			got = got[encodeRoom:]
		}
		if ok == declines[name] {
			t.Errorf("%s: encode reports %v", name, ok)
		}
		if !ok {
			if name != "image" && wantErr == nil {
				t.Errorf("%s: MarshalJSON succeeds where encode failed", name)
			}
			continue
		}
		if wantErr != nil {
			t.Errorf("%s: encode succeeds where MarshalJSON fails: %v", name, wantErr)
			continue
		}
		if full := withMeta(t, out, got); !bytes.Equal(full, want) {
			t.Errorf("%s:\n got %.400s\nwant %.400s", name, full, want)
		}
	}
}

// fixed is a tool that answers res.
type fixed struct {
	name string
	res  tool.Result
}

func (f fixed) Definition() tool.Definition {
	return tool.Definition{Name: f.name, InputSchema: json.RawMessage(`{"type":"object"}`), Level: tool.LevelRead,
		Annotations: tool.Annotations{ReadOnly: true}}
}

func (f fixed) Run(context.Context, tool.Call) (tool.Result, error) { return f.res, nil }

// TestEncodedOverSession: a client of a real session (protocol 2025-11-25:
// in 2026-07-28 the session adds members, as it does for any relayed
// result: go-sdk patch 6) decodes each result from exactly the bytes go-sdk
// v1.8.0's MarshalJSON wrote for it, and that a server on upstream's go-sdk
// (which relays nothing: callResult's fallback, sdkEncoded) sends.
func TestEncodedOverSession(t *testing.T) {
	ctx := context.Background()
	reg := registry.New()
	cases := encodeCases()
	for name, res := range cases {
		if name == "failing" || name == "not a number" {
			continue // no answer to compare: the session reports the encoder's error
		}
		if err := reg.Register(fixed{strings.ReplaceAll(name, " ", "_"), res}); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := New(Options{Engine: engine.New(engine.Options{Registry: reg, Policy: policy.Default()}), NoCallLog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ct, st := mcp.NewInMemoryTransports()
	go srv.Run(ctx, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	for _, def := range reg.List(registry.Filter{}) {
		got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: def.Name, Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("%s: %v", def.Name, err)
		}
		// What the engine gave the server for this call: its result, with
		// what the engine adds (none here but metadata it may set).
		res := cases[strings.ReplaceAll(def.Name, "_", " ")]
		if m, ok := got.Meta["toolgate/meta"].(map[string]any); ok {
			res.Meta = map[string]any{}
			for k, v := range m {
				res.Meta[k] = v
			}
		}
		want, err := callResult(context.Background(), res).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.DecodedJSON(), want) {
			t.Errorf("%s:\n got %.400s\nwant %.400s", def.Name, got.DecodedJSON(), want)
		}
		// With upstream's go-sdk, the server leaves the whole result to
		// the SDK (sdkEncoded; MarshalJSON ignores what callResult
		// relays): the same bytes.
		upstream, err := sdkEncoded(tool.WithEncoded(ctx), res, callResult(ctx, res)).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.DecodedJSON(), upstream) {
			t.Errorf("%s, as upstream's SDK encodes it:\n got %.400s\nwant %.400s", def.Name, got.DecodedJSON(), upstream)
		}
	}
}

// counting is a structured value whose encoding changes each time it is
// encoded.
type counting struct{ n *int }

func (c counting) MarshalJSON() ([]byte, error) {
	*c.n++
	return []byte(fmt.Sprintf(`{"n":%d}`, *c.n)), nil
}

// seeing is a result check that keeps the bytes it read.
type seeing struct{ saw []byte }

func (s *seeing) Check(ctx context.Context, _ tool.Definition, _ tool.Call, res tool.Result) tool.Result {
	s.saw, _ = tool.MarshalJSON(ctx, res.Structured)
	return res
}

// TestCheckedBytesAreSent: the client gets exactly the structured bytes
// the result check read, though the redaction reads them too, and a value
// encoded again would say something else; with a block other than text
// too, which encode leaves to the SDK (review 6, W3).
func TestCheckedBytesAreSent(t *testing.T) {
	ctx := context.Background()
	n := 0
	reg := registry.New()
	if err := reg.Register(fixed{"count", tool.Result{Content: []tool.Content{tool.TextContent("x")}, Structured: counting{&n}}}); err != nil {
		t.Fatal(err)
	}
	image := tool.Result{Content: []tool.Content{tool.TextContent("x"), tool.ImageContent([]byte{1, 2, 3}, "image/png")}, Structured: counting{&n}}
	if err := reg.Register(fixed{"count-image", image}); err != nil {
		t.Fatal(err)
	}
	pol := policy.Default()
	red, err := policy.NewRedactor(pol.Secrets.All())
	if err != nil {
		t.Fatal(err)
	}
	chk := &seeing{}
	srv, err := New(Options{Engine: engine.New(engine.Options{Registry: reg, Policy: pol, Redactor: red, ResultChecker: chk}), NoCallLog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ct, st := mcp.NewInMemoryTransports()
	go srv.Run(ctx, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	for _, name := range []string{"count", "count", "count-image", "count-image"} {
		got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(got.DecodedJSON(), []byte(`"structuredContent":`+string(chk.saw))) {
			t.Errorf("%s: the check read %s, the client got %s", name, chk.saw, got.DecodedJSON())
		}
	}
}
