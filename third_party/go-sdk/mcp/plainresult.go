// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	internaljson "github.com/modelcontextprotocol/go-sdk/internal/json"
)

// PATCH(toolgate): patch 11. plainResult decodes data into what v1.8.0's
// CallToolResult.UnmarshalJSON decodes it into, in one pass, when data is a
// plain result: valid JSON, an object with only the members content (an
// array of objects with only the members type, "text", and text),
// structuredContent (any value, nested at most internaljson.MaxPlainDepth
// deep) and isError (true or false), each once, no key of these objects with an
// escape, no string with invalid UTF-8 or an escaped surrogate, and no
// number that strconv.ParseFloat refuses. ok is false for anything else,
// which the SDK's decoder decodes (and checks) as before. Since it checks
// what it reads as JSON's grammar says, data it decodes needs no other
// check; and it reads each string once and copies its unescaped runs whole,
// where the SDK's decoder walks them rune by rune.
func plainResult(data []byte) (r CallToolResult, ok bool) {
	return plainResultOf(internaljson.NewPlain(data))
}

// PATCH(toolgate): patch 39. plainResultOf is plainResult of p's bytes
// (a Plain at their start).
func plainResultOf(p *internaljson.Plain) (r CallToolResult, ok bool) {
	var content, structured, isError bool
	ok = p.Object(func(key string) bool {
		switch {
		case key == "content" && !content:
			content = true
			r.Content, ok = textBlocks(p)
			return ok
		case key == "structuredContent" && !structured:
			structured = true
			r.StructuredContent, ok = p.Value(0)
			return ok
		case key == "isError" && !isError:
			isError = true
			switch {
			case p.Literal("true"):
				r.IsError = true
				return true
			case p.Literal("false"):
				return true
			}
		}
		return false
	})
	if !ok || !p.End() {
		return CallToolResult{}, false
	}
	if r.Content == nil {
		r.Content = []Content{} // what contentsFromWire makes of no content
	}
	return r, true
}

// UnmarshalPlainJSON decodes data when it is a plain result (plainResult),
// keeping a copy of it (DecodedJSON), and reports whether it did; else it
// leaves x as it is. PATCH(toolgate): patch 11.
func (x *CallToolResult) UnmarshalPlainJSON(data []byte) bool {
	return x.unmarshalPlain(data, false, false)
}

// UnmarshalKeptJSON is UnmarshalPlainJSON of bytes that x may keep: they
// are nothing else's, and their capacity ends at their end
// (internaljson.KeptUnmarshaler). DecodedJSON then returns data itself, not
// a copy. PATCH(toolgate): patch 29. It is the SDK's (jsonrpc2's
// UnmarshalResult calls it), exported only because that interface lives in
// another package: not for callers, since bytes a caller still uses would
// be aliased by DecodedJSON. Patch 39: with ascii set, data lies in a
// frame a Plain's Skip read whole and found all ASCII, and its strings'
// bytes are not checked again (internaljson.NewASCIIPlain); a caller that
// cannot promise it passes false.
func (x *CallToolResult) UnmarshalKeptJSON(data []byte, ascii bool) bool {
	return x.unmarshalPlain(data, true, ascii)
}

func (x *CallToolResult) unmarshalPlain(data []byte, keep, ascii bool) bool {
	p := internaljson.NewPlain(data)
	if ascii { // PATCH(toolgate): patch 39
		p = internaljson.NewASCIIPlain(data)
	}
	r, ok := plainResultOf(p)
	if ok {
		*x = r
		if keep && cap(data) == len(data) {
			x.decoded = data // PATCH(toolgate): patch 29
		} else {
			x.decoded = append([]byte(nil), data...)
		}
		x.plain = true // PATCH(toolgate): patch 21
	}
	return ok
}

// textBlocks reads content: text blocks, each with the members type
// ("text") and text (possibly left out), in any order.
func textBlocks(p *internaljson.Plain) ([]Content, bool) {
	if !p.Next('[') {
		return nil, false
	}
	blocks := []Content{}
	p.Space()
	if p.Next(']') {
		return blocks, true
	}
	for first := true; ; first = false {
		// PATCH(toolgate): patch 38. The first block is allocated with
		// the slice that holds it (of one, as append makes it), in one
		// allocation; a second is appended to a new slice as before.
		var block *TextContent
		if first {
			one := new(oneBlock)
			block, blocks = &one.text, one.content[:0:1]
		} else {
			block = new(TextContent)
		}
		var typ, text, ok bool
		if !p.Object(func(key string) bool {
			switch {
			case key == "type" && !typ:
				typ = true
				return p.Literal(`"text"`)
			case key == "text" && !text:
				text = true
				block.Text, ok = p.KeptString() // PATCH(toolgate): patch 20
				return ok
			}
			return false
		}) || !typ {
			return nil, false
		}
		blocks = append(blocks, block)
		p.Space()
		if p.Next(']') {
			return blocks, true
		}
		if !p.Next(',') {
			return nil, false
		}
		p.Space()
	}
}

// PATCH(toolgate): patch 38. oneBlock is the slice of textBlocks's first
// block and the block, allocated together.
type oneBlock struct {
	content [1]Content
	text    TextContent
}
