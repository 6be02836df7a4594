// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	internaljson "github.com/modelcontextprotocol/go-sdk/internal/json"
	"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2"
	segjson "github.com/segmentio/encoding/json"
)

// PATCH(toolgate): a decoded CallToolResult keeps the bytes it was decoded
// from (DecodedJSON), and a server answers with a result's RelayJSON bytes.
// These tests check that nothing else changed against v1.8.0.

// unmarshalV180 is v1.8.0's CallToolResult.UnmarshalJSON, word for word.
func unmarshalV180(x *CallToolResult, data []byte) error {
	type res CallToolResult // avoid recursion
	var wire struct {
		res
		Content    []*wireContent `json:"content"`
		ResultType resultType     `json:"resultType"`
	}
	if err := internaljson.Unmarshal(data, &wire); err != nil {
		return err
	}
	var err error
	if wire.res.Content, err = contentsFromWire(wire.Content, nil); err != nil {
		return err
	}
	wire.res.resultType = wire.ResultType
	*x = CallToolResult(wire.res)
	return nil
}

func relayInputs(t *testing.T) [][]byte {
	var in [][]byte
	for _, r := range patchResults() {
		in = append(in, encodeV180(t, r))
	}
	return append(in,
		[]byte(` { "content" : [ { "type" : "text" , "text" : "a\u0041\n" } ] , "isError" : false } `),
		[]byte(`{"content":[{"type":"text","text":"x","annotations":{"priority":1}}],"unknown":[1,2],"_meta":{"k":"v"}}`),
		[]byte(`{"content":[{"type":"text","text":"first"}],"content":[{"type":"text","text":"last"}]}`),
		[]byte(`{"content":[],"resultType":"complete","requestState":"s"}`),
		[]byte(`{"content":[{"type":"nope"}]}`),
		[]byte(`{"content":`),
		[]byte(`[]`),
		[]byte(`null`),
		[]byte(``),
	)
}

// TestCallToolResultDecodedJSON: UnmarshalJSON decodes what v1.8.0's did
// (the same fields, the same error) and keeps a copy of its input.
func TestCallToolResultDecodedJSON(t *testing.T) {
	for i, data := range relayInputs(t) {
		var got, want CallToolResult
		gotErr, wantErr := got.UnmarshalJSON(data), unmarshalV180(&want, data)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("input %d %s: error %v, v1.8.0 %v", i, data, gotErr, wantErr)
		}
		if gotErr != nil {
			if got.DecodedJSON() != nil {
				t.Errorf("input %d: a failed decoding kept %s", i, got.DecodedJSON())
			}
			continue
		}
		if !bytes.Equal(got.DecodedJSON(), data) {
			t.Errorf("input %d: DecodedJSON %s, want %s", i, got.DecodedJSON(), data)
		}
		if len(data) > 0 {
			data[0] ^= 0xff // the copy is the result's own
			if bytes.Equal(got.DecodedJSON(), data) {
				t.Errorf("input %d: DecodedJSON shares the caller's bytes", i)
			}
			data[0] ^= 0xff
		}
		got.decoded, got.plain = nil, false // PATCH(toolgate): patch 21 (plain)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("input %d: decoded %#v, v1.8.0 %#v", i, got, want)
		}
		m, err := got.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if w := encodeV180(t, &want); !bytes.Equal(m, w) {
			t.Errorf("input %d: a decoded result marshals as\n%s\nnot as v1.8.0's\n%s", i, m, w)
		}
	}
}

// TestCallToolResultUnmarshalValidJSON: on every input that the SDK's
// decoder finds valid (patch 8), UnmarshalValidJSON decodes what v1.8.0's
// UnmarshalJSON did (the same fields, the same error) and keeps a copy of
// its input, as UnmarshalJSON does.
func TestCallToolResultUnmarshalValidJSON(t *testing.T) {
	valid := 0
	inputs := append(relayInputs(t), []byte("{\"content\":[{\"type\":\"text\",\"text\":\"caf\xe9\"}]}"))
	for i, data := range inputs {
		if !segjson.Valid(data) {
			continue
		}
		valid++
		var got, want CallToolResult
		gotErr, wantErr := got.UnmarshalValidJSON(data), unmarshalV180(&want, data)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("input %d %s: error %v, v1.8.0 %v", i, data, gotErr, wantErr)
		}
		if gotErr != nil {
			continue
		}
		if !bytes.Equal(got.DecodedJSON(), data) {
			t.Errorf("input %d: DecodedJSON %s, want %s", i, got.DecodedJSON(), data)
		}
		got.decoded, got.plain = nil, false // PATCH(toolgate): patch 21 (plain)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("input %d: decoded %#v, v1.8.0 %#v", i, got, want)
		}
	}
	if valid != len(inputs)-2 { // not the one cut short, nor the empty one
		t.Errorf("%d of %d inputs valid", valid, len(inputs))
	}
}

// TestRelayJSON: MarshalJSON ignores RelayJSON's bytes, and a server
// answers a tools/call with them, what the session adds written in front:
// a client decodes the same result as from the result encoded (v1.8.0's
// answer), from those bytes.
func TestRelayJSON(t *testing.T) {
	relays := []string{
		`{"content":[{"type":"text","text":"relayed <&>\u2028"}],"structuredContent":{"n":1,"s":["a",null,true]}}`,
		` { "content" : [ ] , "isError" : false } `,
		`{"content":[{"type":"text","text":"a"},{"type":"image","data":"AAEC","mimeType":"image/png"}]}`,
		`{}`,
	}
	for i, relay := range relays {
		var fields CallToolResult
		if err := fields.UnmarshalJSON([]byte(relay)); err != nil {
			t.Fatal(err)
		}
		fields.decoded, fields.plain = nil, false
		r := fields
		r.RelayJSON([]byte(relay))
		m, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if w := encodeV180(t, &fields); !bytes.Equal(m, w) {
			t.Errorf("relay %d: MarshalJSON with RelayJSON %s, want %s", i, m, w)
		}

		ctx := context.Background()
		server := NewServer(&Implementation{Name: "test", Version: "v1"}, nil)
		for name, res := range map[string]CallToolResult{"relay": r, "plain": fields} {
			server.AddTool(&Tool{Name: name, InputSchema: &jsonschema.Schema{Type: "object"}}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
				out := res
				return &out, nil
			})
		}
		// Patch 27: the same bytes with room before them, a new buffer
		// each call (the session writes in it).
		server.AddTool(&Tool{Name: "room", InputSchema: &jsonschema.Schema{Type: "object"}}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
			out := fields
			out.RelayJSONRoom(append(make([]byte, 300, 300+len(relay)+2), relay...), 300)
			return &out, nil
		})
		ct, st := NewInMemoryTransports()
		ss, err := server.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := NewClient(&Implementation{Name: "c", Version: "v1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := cs.CallTool(ctx, &CallToolParams{Name: "relay", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		want, err := cs.CallTool(ctx, &CallToolParams{Name: "plain", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(relay)); err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(got.DecodedJSON(), compact.Bytes()[1:]) || bytes.Equal(got.DecodedJSON(), want.DecodedJSON()) && relay != "{}" {
			t.Errorf("relay %d: the client decoded %s, not the relayed %s", i, got.DecodedJSON(), relay)
		}
		room, err := cs.CallTool(ctx, &CallToolParams{Name: "room", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(room.DecodedJSON(), got.DecodedJSON()) {
			t.Errorf("relay %d: with room the client decoded %s, without %s", i, room.DecodedJSON(), got.DecodedJSON())
		}
		got.decoded, want.decoded = nil, nil
		got.plain, want.plain = false, false
		if !reflect.DeepEqual(got, want) {
			t.Errorf("relay %d: relayed %#v, encoded %#v", i, got, want)
		}
		cs.Close()
		ss.Close()
	}
}

// TestRelayedHead: what the session adds goes in front of the relayed
// object; with nothing added the bytes are the relayed ones.
func TestRelayedHead(t *testing.T) {
	for _, c := range []struct {
		meta        Meta
		rt          resultType
		relay, want string
	}{
		{nil, "", ` {"content":[]} `, ` {"content":[]} `},
		{nil, resultTypeComplete, `{"content":[]}`, `{"resultType":"complete","content":[]}`},
		{Meta{"k": "v"}, resultTypeComplete, ` { } `, `{"_meta":{"k":"v"},"resultType":"complete" } `},
		{Meta{"k": "v"}, "", `{"a":1}`, `{"_meta":{"k":"v"},"a":1}`},
		{nil, resultTypeComplete, `[]`, ``},
		{nil, "", ``, ``},
		{Meta{}, "", ` {"a":1}`, ` {"a":1}`}, // an empty Meta adds nothing
		{nil, "", `[1]`, ``},
	} {
		x := &CallToolResult{Meta: c.meta, resultType: c.rt}
		x.RelayJSON([]byte(c.relay))
		frame, room, _ := x.relayed()
		if got := string(frame[room:]); got != c.want {
			t.Errorf("relayed(%q, %v, %q) = %q, want %q", c.relay, c.meta, c.rt, got, c.want)
		}
		// Patch 22: a new slice is laid as a jsonrpc2.Framed; the
		// relayed bytes as they are are not.
		if added := c.want != "" && c.want != c.relay; added != (room == jsonrpc2.FrameRoom) || !added && room != 0 ||
			added && cap(frame)-len(frame) < 2 {
			t.Errorf("relayed(%q, %v, %q): room %d, spare %d", c.relay, c.meta, c.rt, room, cap(frame)-len(frame))
		}
	}
}

// TestRelayedHeadInPlace: with RelayJSONRoom, relayed gives the bytes it
// gives for the same object through RelayJSON (a new slice), laid in the
// buffer given, exactly when its room holds the frame's room and the head
// and two bytes are spare after it (patch 27).
func TestRelayedHeadInPlace(t *testing.T) {
	for _, c := range []struct {
		meta  Meta
		rt    resultType
		relay string
	}{
		{nil, "", ` {"content":[]} `},
		{nil, resultTypeComplete, `{"content":[]}`},
		{Meta{"k": "v"}, resultTypeComplete, ` { } `},
		{Meta{"k": "v"}, resultTypeComplete, `{}`},
		{Meta{"k": "v"}, "", `{"a":1}`},
		{Meta{"k": "v", "server": &Implementation{Name: "s", Version: "1"}}, resultTypeComplete, "\t{\n\"a\":\"{\"}"},
		{nil, resultTypeComplete, `[]`},
		{nil, "", ``},
		{Meta{}, "", ` {"a":1}`},
	} {
		x := &CallToolResult{Meta: c.meta, resultType: c.rt}
		x.RelayJSON([]byte(c.relay))
		want, wantRoom, _ := x.relayed()
		for room := 0; room < 200; room++ {
			for spare := 0; spare < 4; spare++ {
				buf := make([]byte, room, room+len(c.relay)+spare)
				copy(buf, bytes.Repeat([]byte{'x'}, room))
				buf = append(buf, c.relay...)
				x := &CallToolResult{Meta: c.meta, resultType: c.rt}
				x.RelayJSONRoom(buf, room)
				frame, r, _ := x.relayed()
				if r != wantRoom || !bytes.Equal(frame[r:], want[wantRoom:]) {
					t.Errorf("relayed(%q, %v, %q) with room %d: %q (room %d), want %q (room %d)", c.relay, c.meta, c.rt, room, frame[r:], r, want[wantRoom:], wantRoom)
					continue
				}
				if r == 0 {
					continue
				}
				// In place, the frame is the end of buf.
				inPlace := len(frame) > 0 && len(buf) > 0 && &frame[len(frame)-1] == &buf[len(buf)-1]
				if fits := len(want) <= len(buf) && spare >= 2; inPlace != fits || cap(frame)-len(frame) < 2 {
					t.Errorf("relayed(%q, %v, %q) with room %d, spare %d: in place %v, spare %d", c.relay, c.meta, c.rt, room, spare, inPlace, cap(frame)-len(frame))
				}
			}
		}
	}
}

// TestIsCompact: white space outside strings, and only there, makes JSON
// text not compact (patch 9: relayed bytes that are compact are written as
// they are, the others compacted first).
func TestIsCompact(t *testing.T) {
	for text, want := range map[string]bool{
		`{"a":1,"b":[true,null,"x"]}`: true,
		`{"a":"x y\t"}`:               true,
		`{"a":"q\" ,"}`:               true,
		`{"a":"b\\","c":1}`:           true,
		`{"a":"b\\" ,"c":1}`:          false,
		`{"a": 1}`:                    false,
		"[1,\n2]":                     false,
		" {}":                         false,
		"{}\r":                        false,
		`"\u0020"`:                    true,
		`["\\\" ", 1]`:                false,
		`["\\\" ",1]`:                 true,
		`"a \\\\" `:                   false,
		`"open  `:                     true,
		``:                            true,
	} {
		if got := isCompact([]byte(text)); got != want {
			t.Errorf("isCompact(%q) = %v, want %v", text, got, want)
		}
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(text)) == nil && want != bytes.Equal(buf.Bytes(), []byte(text)) {
			t.Errorf("isCompact(%q) = %v, but json.Compact gives %q", text, want, buf.Bytes())
		}
	}
}
