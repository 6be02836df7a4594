package adapt

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/tool"
)

const noteSchema = `{"type":"object","properties":{"text":{"type":"string"},"tag":{"type":"string"}},"required":["text"]}`

func strictNote(t testing.TB) *schema.Compiled {
	c, err := schema.CompileFor(schema.OpenAIStrict, json.RawMessage(noteSchema))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMapArguments(t *testing.T) {
	c := strictNote(t)
	for _, tc := range []struct{ in, want string }{
		{`{"text":"a","tag":null}`, `{"text":"a"}`},
		{`{"text":"a","tag":"x"}`, `{"tag":"x","text":"a"}`},
		{``, ``},
		{`   `, `   `},
		{`null`, `null`},
		{`{"text":"a"}{"text":"b"}`, `{"text":"a"}{"text":"b"}`},
		{`[1]`, `[1]`},
		{`{"text":`, `{"text":`},
	} {
		if got := string(MapArguments(c, []byte(tc.in))); got != tc.want {
			t.Errorf("MapArguments(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Without a plan the bytes are kept exactly, whitespace and order too.
	plain, _ := schema.CompileFor(schema.OpenAI, json.RawMessage(noteSchema))
	if got := string(MapArguments(plain, []byte(`{ "text" : "a", "tag": null }`))); got != `{ "text" : "a", "tag": null }` {
		t.Errorf("unmapped arguments rewritten: %s", got)
	}
}

func TestToolsNames(t *testing.T) {
	defs := []tool.Definition{
		{Name: "fs.read", InputSchema: json.RawMessage(noteSchema)},
		{Name: "fs_read", InputSchema: json.RawMessage(noteSchema)},
	}
	ts, err := Compile(schema.OpenAIStrict, defs)
	if err != nil {
		t.Fatal(err)
	}
	if ts.List[0].Wire != "fs_read" || ts.List[1].Wire != "fs_read_2" || ts.Wire("fs.read") != "fs_read" {
		t.Fatalf("wire names %q %q", ts.List[0].Wire, ts.List[1].Wire)
	}
	c := ts.Call("id1", "fs_read", []byte(`{"text":"a","tag":null}`))
	if c.Name != "fs.read" || string(c.Args) != `{"text":"a"}` || c.ID != "id1" {
		t.Errorf("call %+v", c)
	}
	if c := ts.Call("id2", "nope", []byte(`{}{}`)); c.Name != "nope" || string(c.Args) != `{}{}` {
		t.Errorf("unknown call %+v", c)
	}
	if _, err := Compile(schema.OpenAIStrict, []tool.Definition{{Name: "x", InputSchema: json.RawMessage(`{"$ref":"http://example.com/s.json"}`)}}); err == nil {
		t.Error("a schema with a remote reference compiles")
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		r    tool.Result
		want string
	}{
		{tool.TextResult("hi"), "hi"},
		{tool.Result{Structured: map[string]any{"n": 1}}, `{"n":1}`},
		{tool.ErrorResult(tool.Errorf(tool.NotFound, "gone").WithSuggestion("look elsewhere")), tool.Errorf(tool.NotFound, "gone").WithSuggestion("look elsewhere").Text()},
		{tool.Result{Content: []tool.Content{tool.TextContent("a"), tool.ImageContent([]byte{1, 2, 3}, "image/png")}}, "a\n[image image/png, 3 bytes]"},
	} {
		if got := Text(tc.r); got != tc.want {
			t.Errorf("Text = %q, want %q", got, tc.want)
		}
	}
}

// FuzzMapArguments: model output never panics the mapping, and anything
// that is not one JSON object passes byte for byte.
func FuzzMapArguments(f *testing.F) {
	c := strictNote(f)
	for _, s := range []string{``, `{}`, `{"text":"a","tag":null}`, `{}{}`, `[`, `{"text":1}`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out := MapArguments(c, raw)
		if _, err := schema.ParseArguments(raw); err != nil || len(bytes.TrimSpace(raw)) == 0 || bytes.TrimSpace(raw)[0] != '{' {
			if !bytes.Equal(out, raw) {
				t.Fatalf("%q became %q", raw, out)
			}
			return
		}
		if _, err := schema.ParseArguments(out); err != nil {
			t.Fatalf("%q mapped to unparseable %q", raw, out)
		}
	})
}
