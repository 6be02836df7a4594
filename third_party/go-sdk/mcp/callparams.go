// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"encoding/json"
	"strconv"
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
	if p == nil || len(p.InputResponses) > 0 || p.RequestState != "" || !plainString(p.Name) {
		return nil
	}
	var args json.RawMessage
	switch a := p.Arguments.(type) {
	case nil:
	case json.RawMessage:
		if len(a) == 0 || !isCompact(a) || !json.Valid(a) {
			return nil
		}
		args = a
	default:
		return nil
	}
	b := make([]byte, 0, 64+len(p.Name)+len(args))
	b = append(b, '{')
	if len(p.Meta) > 0 {
		tok, ok := p.Meta[progressTokenKey]
		if len(p.Meta) != 1 || !ok {
			return nil
		}
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
