package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/tool"
)

// TestNewResult: newResult's result (one allocation for a single text
// block) is the one of mcpContent's content: equal, with the same
// encoding, for every shape of content.
func TestNewResult(t *testing.T) {
	for _, cs := range [][]tool.Content{
		nil,
		{},
		{tool.TextContent("hello <b> \u2028 \"q\"\n")},
		{tool.TextContent("")},
		{tool.TextContent("a"), tool.TextContent("b")},
		{{Type: "image", Data: []byte{1, 2}, MIMEType: "image/png"}},
		{{Type: "resource", URI: "file:///x", Text: "t"}},
		{{Type: "mystery", Text: "x"}},
	} {
		got, want := newResult(cs), &mcp.CallToolResult{Content: mcpContent(cs)}
		if !reflect.DeepEqual(got, want) || len(got.Content) != cap(got.Content) && cap(want.Content) == len(want.Content) {
			t.Errorf("%v: %#v, want %#v", cs, got, want)
		}
		gb, gerr := json.Marshal(got)
		wb, werr := json.Marshal(want)
		if string(gb) != string(wb) || (gerr == nil) != (werr == nil) {
			t.Errorf("%v: %s (%v), want %s (%v)", cs, gb, gerr, wb, werr)
		}
	}
}

// TestToolCallCtx: a tools/call's context (one allocation) answers as
// newCallCtx(tool.WithEncodedLogger(ctx, l)) does: its callInfo, the
// logger, an encoding kept for the call, the parent's other values, and
// the parent's end.
func TestToolCallCtx(t *testing.T) {
	type key struct{}
	l := slog.New(slog.DiscardHandler)
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	got, gci := newToolCallCtx(parent, l)
	want, wci := newCallCtx(tool.WithEncodedLogger(parent, l))
	for _, c := range []struct {
		ctx context.Context
		ci  *callInfo
	}{{got, gci}, {want, wci}} {
		if callInfoFrom(c.ctx) != c.ci || tool.Logger(c.ctx) != l || c.ctx.Value(key{}) != "v" || c.ctx.Value("other") != nil {
			t.Errorf("%T: values", c.ctx)
		}
		v := map[string]int{"a": 1}
		b1, _ := tool.MarshalJSON(c.ctx, v)
		if string(b1) != `{"a":1}` {
			t.Errorf("%T: MarshalJSON %s", c.ctx, b1)
		}
		if _, ok := c.ctx.Deadline(); ok || c.ctx.Err() != nil {
			t.Errorf("%T: ended early", c.ctx)
		}
	}
	s := struct{ A string }{"x"}
	for _, c := range []context.Context{got, want} {
		b1, _ := tool.MarshalJSON(c, s)
		b2, _ := tool.MarshalJSON(c, s)
		if &b1[0] != &b2[0] {
			t.Errorf("%T: the encoding is not kept", c)
		}
	}
	cancel()
	<-got.Done()
	if got.Err() != context.Canceled || want.Err() != context.Canceled {
		t.Errorf("after the parent's end: %v, %v", got.Err(), want.Err())
	}
}
