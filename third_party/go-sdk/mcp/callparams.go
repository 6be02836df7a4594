// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"encoding/json"
	"strconv"

	internaljson "github.com/modelcontextprotocol/go-sdk/internal/json"
)

// PATCH(toolgate): patch 23. plainJSON is the JSON text jsonrpc2's
// marshalToRaw makes of p (encoding/json without HTML escaping), written
// by hand for the shape a client sends most, or nil for any other shape:
// no InputResponses or RequestState, a Meta that is empty or holds only a
// progress token (a plain string or an int), a plain name, and Arguments
// absent or a json.RawMessage that is valid and compact (encoding/json
// writes it compacted: here it is already). A plain string is printable
// ASCII without a quote or backslash, which encoding/json writes as it is.
// encoding/json spent ~9.7k instructions (reflection over the struct, the
// map, the interface, and a compaction of the arguments) on a gateway's
// tools/call of ~150 bytes.
func (p *CallToolParams) plainJSON() []byte {
	if b := p.plainJSONIn(0); b != nil {
		return b
	}
	return nil
}

// PATCH(toolgate): patch 39. plainJSONIn is plainJSON laid in a buffer
// after room bytes, with room for two more after it (the request's closing
// brace and a stream's newline): the params are its bytes from room on
// (jsonrpc2.Connection.CallFramed).
func (p *CallToolParams) plainJSONIn(room int) []byte {
	if p == nil || len(p.InputResponses) > 0 || p.RequestState != "" || !plainString(p.Name) {
		return nil
	}
	var args json.RawMessage
	switch a := p.Arguments.(type) {
	case nil:
	case json.RawMessage:
		if len(a) == 0 || !isCompact(a) || !plainValid(a) { // PATCH(toolgate): patch 36 (was json.Valid)
			return nil
		}
		args = a
	default:
		return nil
	}
	// PATCH(toolgate): patch 38. Room for all of it: a _meta's token
	// (a quoted string, or an int of at most 20 bytes) is counted too, so
	// that the slice is never grown.
	size := room + len(`{"name":"","arguments":}`) + len(p.Name) + len(args) + 2 // PATCH(toolgate): patch 39, room and two
	var tok any
	if len(p.Meta) > 0 {
		var ok bool
		tok, ok = p.Meta[progressTokenKey]
		if len(p.Meta) != 1 || !ok {
			return nil
		}
		size += len(`"_meta":{"`+progressTokenKey+`":},`) + 20
		if t, ok := tok.(string); ok {
			size += len(t)
		}
	}
	b := make([]byte, room, size)
	b = append(b, '{')
	if len(p.Meta) > 0 {
		b = append(b, `"_meta":{"`+progressTokenKey+`":`...)
		switch t := tok.(type) {
		case string:
			if !plainString(t) {
				return nil
			}
			b = append(b, '"')
			b = append(b, t...)
			b = append(b, '"')
		case int:
			b = strconv.AppendInt(b, int64(t), 10)
		default:
			return nil
		}
		b = append(b, "},"...)
	}
	b = append(b, `"name":"`...)
	b = append(b, p.Name...)
	b = append(b, '"')
	if args != nil {
		b = append(b, `,"arguments":`...)
		b = append(b, args...)
	}
	return append(b, '}')
}

// PATCH(toolgate): patch 36. plainValid reports whether a is one JSON
// value as internaljson.Plain reads it (Skip: JSON's grammar, strings with
// their escapes checked and invalid UTF-8 let through, as json.Valid
// does), nested at most internaljson.MaxPlainDepth deep, with nothing
// after it. What it refuses (deeper, or not JSON) goes encoding/json's
// way, which checks it as before. encoding/json's scanner calls a function
// a byte: ~1,600 instructions for a gateway's ~40 bytes of arguments,
// where Plain reads a string 8 bytes at a time.
func plainValid(a []byte) bool {
	p := internaljson.NewPlain(a)
	_, ok := p.Skip(0)
	return ok && p.End()
}

// plainString reports whether encoding/json writes s as it is between
// quotes: printable ASCII without '"' or '\\'.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// PATCH(toolgate): patch 26. UnmarshalPlainJSON decodes data, in one pass
// that checks it (internaljson.Plain), when it is the params of a plain
// tools/call: an object with only the members _meta (an object, nested at
// most internaljson.MaxPlainDepth deep), name (a string) and arguments (any
// value), each once, no key escaped, no string with invalid UTF-8 or an
// escaped surrogate, no number strconv.ParseFloat refuses. It decodes them
// as segmentio's decoder does (the arguments' bytes copied), and reports
// whether it did; else it leaves x as it is. The decoder built a map of 64
// entries for each object of the _meta (the SEP-2575 triple a v1.8.0
// client sends with every call has four) and walked the struct by
// reflection: ~22,000 instructions and 3.3 KB for a gateway's tools/call.
func (x *CallToolParamsRaw) UnmarshalPlainJSON(data []byte) bool {
	p := internaljson.NewPlain(data)
	var r CallToolParamsRaw
	var meta, name, args bool
	ok := p.Object(func(key string) bool {
		switch {
		case key == "_meta" && !meta:
			meta = true
			if p.Peek() != '{' {
				return false
			}
			v, ok := p.Value(0)
			r.Meta, _ = v.(map[string]any)
			return ok
		case key == "name" && !name:
			name = true
			if p.Peek() != '"' {
				return false
			}
			var ok bool
			r.Name, ok = p.String()
			return ok
		case key == "arguments" && !args:
			args = true
			v, ok := p.Skip(0)
			r.Arguments = append(make(json.RawMessage, 0, len(v)), v...)
			return ok
		}
		return false
	})
	if !ok || !p.End() {
		return false
	}
	*x = r
	return true
}
