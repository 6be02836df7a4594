// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
)

// PATCH(toolgate): patch 11. plainResult decodes data into what v1.8.0's
// CallToolResult.UnmarshalJSON decodes it into, in one pass, when data is a
// plain result: valid JSON, an object with only the members content (an
// array of objects with only the members type, "text", and text),
// structuredContent (any value nested at most maxPlainDepth deep) and
// isError (true or false), each once, no key of these objects with an
// escape, no string with invalid UTF-8 or an escaped surrogate, and no
// number that strconv.ParseFloat refuses. ok is false for anything else,
// which the SDK's decoder decodes (and checks) as before. Since it checks
// what it reads as JSON's grammar says, data it decodes needs no other
// check; and it reads each string once and copies its unescaped runs whole,
// where the SDK's decoder walks them rune by rune.
func plainResult(data []byte) (r CallToolResult, ok bool) {
	p := plainParser{b: data}
	var content, structured, isError bool
	ok = p.object(func(key string) bool {
		switch {
		case key == "content" && !content:
			content = true
			r.Content, ok = p.textBlocks()
			return ok
		case key == "structuredContent" && !structured:
			structured = true
			r.StructuredContent, ok = p.value(0)
			return ok
		case key == "isError" && !isError:
			isError = true
			switch {
			case p.literal("true"):
				r.IsError = true
				return true
			case p.literal("false"):
				return true
			}
		}
		return false
	})
	p.space()
	if !ok || p.i != len(p.b) {
		return CallToolResult{}, false
	}
	if r.Content == nil {
		r.Content = []Content{} // what contentsFromWire makes of no content
	}
	return r, true
}

// UnmarshalPlainJSON decodes data, with no white space around it, when it
// is a plain result (plainResult), keeping a copy of it (DecodedJSON), and
// reports whether it did; else it leaves x as it is. PATCH(toolgate):
// patch 11.
func (x *CallToolResult) UnmarshalPlainJSON(data []byte) bool {
	r, ok := plainResult(data)
	if ok {
		*x = r
		x.decoded = append([]byte(nil), data...)
	}
	return ok
}

// maxPlainDepth bounds the nesting of a plain result's structuredContent,
// far below the SDK's depth limit.
const maxPlainDepth = 64

// plainParser reads JSON; each method reports false for what is not valid
// JSON or not what plainResult decodes.
type plainParser struct {
	b []byte
	i int
}

func (p *plainParser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *plainParser) next(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *plainParser) literal(lit string) bool {
	if bytes.HasPrefix(p.b[p.i:], []byte(lit)) {
		p.i += len(lit)
		return true
	}
	return false
}

// object reads an object whose keys have no escape, calling member with
// each key to read its value (with the white space before it skipped).
func (p *plainParser) object(member func(key string) bool) bool {
	p.space()
	if !p.next('{') {
		return false
	}
	p.space()
	if p.next('}') {
		return true
	}
	for {
		p.space()
		if !p.next('"') {
			return false
		}
		j := bytes.IndexByte(p.b[p.i:], '"')
		if j < 0 {
			return false
		}
		key := p.b[p.i : p.i+j]
		// A key with an escape is not a member plainResult knows (nor is
		// one with a control byte, which JSON does not allow: member
		// refuses it).
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		p.i += j + 1
		p.space()
		if !p.next(':') {
			return false
		}
		p.space()
		if !member(string(key)) {
			return false
		}
		p.space()
		if p.next('}') {
			return true
		}
		if !p.next(',') {
			return false
		}
	}
}

// textBlocks reads content: text blocks, each with the members type
// ("text") and text (possibly left out), in any order.
func (p *plainParser) textBlocks() ([]Content, bool) {
	if !p.next('[') {
		return nil, false
	}
	blocks := []Content{}
	p.space()
	if p.next(']') {
		return blocks, true
	}
	for {
		block := new(TextContent)
		var typ, text, ok bool
		if !p.object(func(key string) bool {
			switch {
			case key == "type" && !typ:
				typ = true
				return p.literal(`"text"`)
			case key == "text" && !text:
				text = true
				block.Text, ok = p.str()
				return ok
			}
			return false
		}) || !typ {
			return nil, false
		}
		blocks = append(blocks, block)
		p.space()
		if p.next(']') {
			return blocks, true
		}
		if !p.next(',') {
			return nil, false
		}
		p.space()
	}
}

// value reads any value as the SDK's decoder reads it into an any.
func (p *plainParser) value(depth int) (any, bool) {
	if p.i >= len(p.b) || depth > maxPlainDepth {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		m := make(map[string]any)
		p.space()
		if p.next('}') {
			return m, true
		}
		for {
			p.space()
			k, ok := p.str()
			if !ok {
				return nil, false
			}
			p.space()
			if !p.next(':') {
				return nil, false
			}
			p.space()
			if m[k], ok = p.value(depth + 1); !ok {
				return nil, false
			}
			p.space()
			if p.next('}') {
				return m, true
			}
			if !p.next(',') {
				return nil, false
			}
		}
	case c == '[':
		p.i++
		a := []any{}
		p.space()
		if p.next(']') {
			return a, true
		}
		for {
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			a = append(a, v)
			p.space()
			if p.next(']') {
				return a, true
			}
			if !p.next(',') {
				return nil, false
			}
		}
	case c == '"':
		return p.str()
	case c == 't' && p.literal("true"):
		return true, true
	case c == 'f' && p.literal("false"):
		return false, true
	case c == 'n' && p.literal("null"):
		return nil, true
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		if !p.number() {
			return nil, false
		}
		f, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
		return f, err == nil
	}
	return nil, false
}

// number reads a number as JSON's grammar has it:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *plainParser) number() bool {
	p.next('-')
	if !p.next('0') && !p.digits() {
		return false
	}
	if p.next('.') && !p.digits() {
		return false
	}
	if p.next('e') || p.next('E') {
		if !p.next('+') {
			p.next('-')
		}
		return p.digits()
	}
	return true
}

// digits reads one digit or more.
func (p *plainParser) digits() bool {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

// str reads a string and unescapes it, copying each run between escapes
// whole; a control byte (which JSON does not allow in a string), invalid
// UTF-8 and an escaped surrogate (which the SDK's decoder replaces) are
// refused.
func (p *plainParser) str() (string, bool) {
	if !p.next('"') {
		return "", false
	}
	var s strings.Builder // only for a string with an escape
	b := p.b
	for start, i, ascii := p.i, p.i, true; ; {
		if i >= len(b) {
			return "", false
		}
		c := b[i]
		if c != '"' && c != '\\' {
			if c < 0x20 {
				return "", false
			}
			if c >= 0x80 {
				ascii = false
			}
			i++
			continue
		}
		run := b[start:i]
		if !ascii && !utf8.Valid(run) {
			return "", false
		}
		if c == '"' {
			p.i = i + 1
			if s.Cap() == 0 {
				return string(run), true
			}
			s.Write(run)
			return s.String(), true
		}
		if s.Cap() == 0 { // room for the string up to the next quote
			s.Grow(i - start + bytes.IndexByte(b[i:], '"') + 1)
		}
		s.Write(run)
		if i+1 >= len(b) {
			return "", false
		}
		switch e := b[i+1]; e {
		case '"', '\\', '/':
			s.WriteByte(e)
		case 'b':
			s.WriteByte('\b')
		case 'f':
			s.WriteByte('\f')
		case 'n':
			s.WriteByte('\n')
		case 'r':
			s.WriteByte('\r')
		case 't':
			s.WriteByte('\t')
		case 'u':
			if i+6 > len(b) {
				return "", false
			}
			u, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
			if err != nil || u >= 0xd800 && u < 0xe000 {
				return "", false
			}
			s.WriteRune(rune(u))
			i += 4
		default:
			return "", false
		}
		i += 2
		start, ascii = i, true
	}
}
