// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// PATCH(toolgate): patch 38. Allocations off a relayed tools/call, on the
// mcp side: handle stores a pointer to its request's ID in its context
// (requestIDOf reads either form), textBlocks allocates its first block
// with its slice, validateMeta's old-protocol answer is shared, plainJSON
// sizes its slice for a _meta token, and call sends plain params through
// CallCompact. These tests check that what is decoded and read is
// v1.8.0's.

// TestRequestIDOf: the ID a context holds, as v1.8.0's handle stored it
// (the ID) or as this one does (a pointer to it), and none.
func TestRequestIDOf(t *testing.T) {
	ctx := context.Background()
	if id, ok := requestIDOf(ctx); ok || id.IsValid() {
		t.Errorf("no ID: %v, %v", id, ok)
	}
	for _, id := range []jsonrpc.ID{jsonrpc2.Int64ID(7), jsonrpc2.Int64ID(70000), jsonrpc2.StringID("x"), {}} {
		for _, v := range []any{id, &id} {
			got, ok := requestIDOf(context.WithValue(ctx, idContextKey{}, v))
			if !ok || got != id {
				t.Errorf("%#v: %v, %v", v, got, ok)
			}
		}
	}
}

// TestTextBlocksMatchV180: results of no block, one, two and three (the
// first is allocated with its slice) decode as v1.8.0 decoded them.
func TestTextBlocksMatchV180(t *testing.T) {
	block := `{"type":"text","text":"line 1\nline 2"}`
	for n := 0; n <= 3; n++ {
		blocks := strings.TrimSuffix(strings.Repeat(block+",", n), ",")
		for _, data := range []string{`{"content":[` + blocks + `]}`, `{"content":[` + blocks + `],"structuredContent":{"content":"line 1\nline 2"}}`} {
			if !checkPlain(t, []byte(data)) {
				t.Errorf("%s: not decoded plain", data)
			}
			r, _ := plainResult([]byte(data))
			if len(r.Content) != n || n > 0 && cap(r.Content) < n {
				t.Errorf("%s: %d blocks", data, len(r.Content))
			}
		}
	}
}

// TestOldProtocolMeta: a request without the new protocol's _meta is
// validated as v1.8.0 validated it (usesNewProtocol false, no params).
func TestOldProtocolMeta(t *testing.T) {
	for _, meta := range []Meta{nil, {"other": 1}, {MetaKeyProtocolVersion: "2025-06-18"}, {MetaKeyProtocolVersion: 3}} {
		var memo metaMemo
		got, err := validateMeta(meta, &memo, false)
		if err != nil || got.usesNewProtocol || got.initializeParams != nil || got.logLevel != "" {
			t.Errorf("%v: %+v, %v", meta, got, err)
		}
	}
}

// TestPlainJSONNotGrown: plainJSON's slice holds the params it writes,
// whatever the token (a long string, the longest int), in one allocation;
// the bytes are v1.8.0's.
func TestPlainJSONNotGrown(t *testing.T) {
	for _, tok := range []any{"t", strings.Repeat("toolgate-bare-", 20), 0, math.MinInt, math.MaxInt, nil} {
		p := &CallToolParams{Name: "bare__read_text_file", Arguments: json.RawMessage(`{"path":"/tmp/small.txt"}`)}
		if tok != nil {
			p.Meta = Meta{progressTokenKey: tok}
		}
		want, err := jsonrpc2.NewCall(jsonrpc2.Int64ID(9), "tools/call", p)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.plainJSON(); string(got) != string(want.Params) {
			t.Errorf("%v: %s; v1.8.0 %s", tok, got, want.Params)
		}
		if n := testing.AllocsPerRun(10, func() { p.plainJSON() }); n > 1 {
			t.Errorf("%v: %v allocations", tok, n)
		}
		// PATCH(toolgate): patch 39. After a call's room, with two bytes
		// after: the same bytes, one allocation.
		room := jsonrpc2.CallRoom("tools/call")
		if got := p.plainJSONIn(room); len(got) < room || string(got[room:]) != string(want.Params) || cap(got)-len(got) < 2 {
			t.Errorf("%v: after room %d: %q (cap %d)", tok, room, got, cap(got))
		}
		if n := testing.AllocsPerRun(10, func() { p.plainJSONIn(room) }); n > 1 {
			t.Errorf("%v: %v allocations after room", tok, n)
		}
	}
}
