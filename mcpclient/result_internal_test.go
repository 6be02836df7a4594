package mcpclient

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/tool"
)

// resultBefore is Upstream.result as it was before the Relay and the one
// content block were allocated together (5df15e1).
func resultBefore(name string, r *mcp.CallToolResult) tool.Result {
	var res tool.Result
	for _, c := range r.Content {
		res.Content = append(res.Content, content(c))
	}
	if r.StructuredContent != nil {
		res.Structured = r.StructuredContent
	}
	if !r.IsError {
		res.Relay = relayBefore(r, res)
		return res
	}
	return tool.VetUpstream(name, tool.Result{Content: res.Content, Error: upstreamError(r.StructuredContent)})
}

func relayBefore(r *mcp.CallToolResult, res tool.Result) *tool.Relay {
	d, ok := any(r).(decoded)
	if !ok {
		return nil
	}
	raw := d.DecodedJSON()
	if raw == nil {
		return nil
	}
	structured, _, ok := relayable(raw, r, d.DecodedPlain())
	if !ok {
		return nil
	}
	return tool.NewRelay(raw, structured, res)
}

// TestResultMatchesBefore: results of no, one and two blocks, relayable
// and not, failed, with and without a structured value, map to the Result
// (content, structured value, error, Relay and the bytes it sends) they
// mapped to before.
func TestResultMatchesBefore(t *testing.T) {
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"a\n\"b\" \u00e9 \ud7ff"}]}`,
		` { "content" : null , "isError" : false , "structuredContent" : [ 1 , -0 ] } `,
		`{"content":[],"structuredContent":{"a":{"b":[{"c":999999999999999}]},"":""}}`,
		`{}`,
		`{"content":[{"type":"text","text":"a"}],"structuredContent":{"content":"a"}}`,
		`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"structuredContent":{"k":["v",1,true,null]}}`,
		`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"text","text":"c"}]}`,
		`{"content":[{"type":"text","text":"a","type":"text"}]}`,
		`{"content":[{"type":"text","text":"\udfff"}]}`,
		`{"structuredContent":1e3,"content":[{"type":"text","text":"a"}]}`,
		`{"content":[{"type":"text","text":"a","_meta":{}}]}`,
		`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`,
		`{"content":[{"type":"text","text":"a"},{"type":"image","data":"AA==","mimeType":"image/png"}]}`,
		`{"content":[{"type":"text","text":"no such file"}],"isError":true}`,
		`{"content":[{"type":"text","text":"denied"}],"isError":true,"structuredContent":{"type":"denied","message":"m"}}`,
		`{"content":[],"isError":true}`,
		`{"content":[{"type":"text","text":"a"}],"_meta":{"k":1}}`,
	} {
		var r mcp.CallToolResult
		if err := r.UnmarshalJSON([]byte(raw)); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		got, want := (&Upstream{}).result("t", &r), resultBefore("t", &r)
		// A Relay of bytes without white space outside their strings is
		// marked so (go-sdk patch 41); before, none was.
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(raw)); err != nil {
			t.Fatal(err)
		}
		if got.Relay.Compact() != (want.Relay != nil && compact.String() == raw) {
			t.Errorf("%s: Relay.Compact() = %v", raw, got.Relay.Compact())
		}
		// The Relays are compared by what they do (their record of a
		// map follows its iteration order).
		gr, wr := got.Relay, want.Relay
		got.Relay, want.Relay = nil, nil
		if !reflect.DeepEqual(got, want) || (gr == nil) != (wr == nil) {
			t.Errorf("%s:\n got %#v (Relay %v)\nwant %#v (Relay %v)", raw, got, gr != nil, want, wr != nil)
			continue
		}
		got.Relay, want.Relay = gr, wr
		gs, gok := gr.StructuredFor(got.Structured)
		ws, wok := wr.StructuredFor(want.Structured)
		if gok != wok || string(gs) != string(ws) {
			t.Errorf("%s: Relay.StructuredFor = %q, %v; before %q, %v", raw, gs, gok, ws, wok)
		}
		if len(got.Content) != len(want.Content) || cap(got.Content) < len(got.Content) {
			t.Errorf("%s: content %d blocks (cap %d), want %d", raw, len(got.Content), cap(got.Content), len(want.Content))
		}
		gb, gok := got.Relay.For(got)
		wb, wok := want.Relay.For(want)
		if gok != wok || string(gb) != string(wb) {
			t.Errorf("%s: Relay.For = %q, %v; before %q, %v", raw, gb, gok, wb, wok)
		}
		// The one block is its own: changing it leaves the Relay as
		// before, which then refuses the changed result.
		if len(got.Content) == 1 && got.Relay != nil {
			got.Content[0].Text += "!"
			want.Content[0].Text += "!"
			_, gok := got.Relay.For(got)
			_, wok := want.Relay.For(want)
			if gok || wok {
				t.Errorf("%s: Relay.For of a changed block = %v (before %v), want false", raw, gok, wok)
			}
		}
	}
}

// TestPrincipalValue: the interface value of a principal is the
// principal, whichever came before and from however many goroutines
// (-race), and the same value for calls of one principal in a row.
func TestPrincipalValue(t *testing.T) {
	u := &Upstream{}
	for _, p := range []string{"", "alice", "alice", "bob", "", "alice"} {
		if v, ok := u.principalValue(p).(string); !ok || v != p {
			t.Fatalf("principalValue(%q) = %#v", p, u.principalValue(p))
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = u.principalValue("alice") }); n != 0 {
		t.Errorf("principalValue of the last principal: %v allocations, want 0", n)
	}
	var wg sync.WaitGroup
	for _, p := range []string{"alice", "bob", "carol", ""} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				if v, _ := u.principalValue(p).(string); v != p {
					t.Errorf("principalValue(%q) = %q", p, v)
					return
				}
			}
		}()
	}
	wg.Wait()
}
