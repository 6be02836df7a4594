// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2"
)

// PATCH(toolgate): patch 23. A tools/call's params written by hand are the
// bytes v1.8.0's path makes of them (jsonrpc2.NewCall's encoding/json), and
// so is the whole request frame; every other shape is left to that path.
func TestCallParamsPlainJSON(t *testing.T) {
	strs := []string{"", "read_text_file", "bare__read_text_file", "a b", "toolgate-bare-17", "x\"y", `x\y`, "tab\there",
		"new\nline", "<&>", "é", "\u2028", "\x7f", "\x00", "\xff", "~!@#$%^*()_+={}[]|:;',.?/"}
	argss := []any{nil, json.RawMessage(nil), json.RawMessage(``), json.RawMessage(`{}`), json.RawMessage(`{"path":"/tmp/a b.txt"}`),
		json.RawMessage(`{"path": "x"}`), json.RawMessage(`{"a":[1,2.5e3,true,null,{"b":"<&>\u2028"}]}`), json.RawMessage("{\"s\":\"\u2028<\"}"),
		json.RawMessage(`{"a":`), json.RawMessage(`[1,2]`), json.RawMessage(`"str"`), json.RawMessage(`12`), json.RawMessage(` {}`),
		json.RawMessage(`{} `), json.RawMessage(`{}{}`), json.RawMessage("{\"a\":\"\xff\"}"), json.RawMessage(`nul`),
		map[string]any{"path": "x"}, "text", 3}
	tokens := []any{nil, "toolgate-bare-1", "a\"b", "é", 7, -12, int64(3), int32(4), 1.5}
	rng := rand.New(rand.NewPCG(1, 2))
	plain := 0
	for i := 0; i < 20000; i++ {
		p := &CallToolParams{Name: strs[rng.IntN(len(strs))], Arguments: argss[rng.IntN(len(argss))]}
		switch rng.IntN(6) {
		case 0:
			p.Meta = Meta{}
		case 1, 2, 3:
			if tok := tokens[rng.IntN(len(tokens))]; tok != nil {
				p.Meta = Meta{progressTokenKey: tok} // any type a peer's Meta may hold
			}
		case 4:
			p.Meta = Meta{"other": "x"}
			if rng.IntN(2) == 0 {
				p.SetProgressToken("t")
			}
		}
		switch rng.IntN(10) {
		case 0:
			p.RequestState = "state"
		case 1:
			p.InputResponses = InputResponseMap{"r": nil}
		}
		want, werr := jsonrpc2.NewCall(jsonrpc2.Int64ID(9), "tools/call", p)
		got := p.plainJSON()
		if got == nil {
			continue
		}
		plain++
		if werr != nil {
			t.Fatalf("%+v: encoding/json fails (%v), the plain path wrote %s", p, werr, got)
		}
		if !bytes.Equal(got, want.Params) {
			t.Fatalf("%+v:\nplain %s\nwant  %s", p, got, want.Params)
		}
		fast, err := jsonrpc2.NewCall(jsonrpc2.Int64ID(9), "tools/call", jsonrpc2.Compact(got))
		if err != nil {
			t.Fatal(err)
		}
		a, err1 := jsonrpc2.EncodeMessage(fast)
		b, err2 := jsonrpc2.EncodeMessage(want)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Fatalf("%+v: frames differ:\n%s (%v)\n%s (%v)", p, a, err1, b, err2)
		}
	}
	if plain < 1000 {
		t.Fatalf("only %d of 20000 params took the plain path", plain)
	}
	// The shape a gateway sends always does.
	p := &CallToolParams{Name: "read_text_file", Arguments: json.RawMessage(`{"path":"/tmp/small.txt"}`)}
	p.SetProgressToken("toolgate-bare-1")
	if p.plainJSON() == nil {
		t.Error("a gateway's tools/call is not written by hand")
	}
}
