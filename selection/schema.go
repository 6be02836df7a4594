package selection

import (
	"encoding/json"
	"maps"
	"slices"
)

// Limits of the walk over an input schema. A schema is untrusted text: the
// walk reads a bounded part of it and ignores whatever has the wrong shape.
const (
	maxSchemaDepth  = 3   // levels of nested properties read
	maxSchemaParams = 128 // parameters read per schema
)

// schemaNode is the part of a JSON Schema the index reads.
type schemaNode struct {
	title, description string
	properties         map[string]*schemaNode
	items              *schemaNode
}

// params calls emit for each parameter of an input schema, with its name,
// title and description. It reads "properties", and below each property
// its own "properties" and those of its "items" (each a level down), down to
// maxSchemaDepth levels and maxSchemaParams parameters, in name order at
// each level.
//
// A value of the wrong type (a numeric description, an array of items, a
// boolean property schema) is skipped and the rest still read; reading stops
// at the first byte that is not JSON, keeping what came before.
func params(schema json.RawMessage, emit func(name, title, desc string)) {
	s := schemaScanner{b: schema}
	root := s.node(1)
	budget := maxSchemaParams
	walk(root, 1, &budget, emit)
}

func walk(n *schemaNode, depth int, budget *int, emit func(name, title, desc string)) {
	if n == nil || depth > maxSchemaDepth {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(n.properties)) {
		if *budget <= 0 {
			return
		}
		*budget--
		p := n.properties[name]
		if p == nil {
			emit(name, "", "")
			continue
		}
		emit(name, p.title, p.description)
		walk(p, depth+1, budget, emit)
	}
	walk(n.items, depth+1, budget, emit)
}

// schemaScanner reads the schemaNode tree out of JSON text in one pass.
// encoding/json would decode the same (and validate), but several times
// slower, and building an index is mostly this. Every step either consumes
// a byte or gives up, so no input can make it loop; it recurses only
// through maxSchemaDepth levels and skips deeper values iteratively.
type schemaScanner struct {
	b   []byte
	i   int
	bad bool // hit text that is not JSON: stop everywhere
}

// node reads a schema object at nesting level depth (1 is the root; a
// property or items is a level below its parent), or skips any other value
// and returns nil. Below maxSchemaDepth only title and description are read.
func (s *schemaScanner) node(depth int) *schemaNode {
	if s.peek() != '{' || depth > maxSchemaDepth+1 {
		s.skip()
		return nil
	}
	n := &schemaNode{}
	s.i++
	for first := true; !s.bad; first = false {
		if s.peek() == '}' {
			s.i++
			return n
		}
		if !first && !s.expect(',') {
			break
		}
		key, ok := s.raw()
		if !ok || !s.expect(':') {
			break
		}
		switch string(key) { // compiled without a copy
		case "title":
			n.title = s.text()
		case "description":
			n.description = s.text()
		case "items":
			n.items = s.node(depth + 1)
		case "properties":
			n.properties = s.properties(depth)
		default:
			s.skip()
		}
	}
	s.bad = true
	return n
}

// properties reads a "properties" object: parameter name → schema.
func (s *schemaScanner) properties(depth int) map[string]*schemaNode {
	if s.peek() != '{' || depth > maxSchemaDepth {
		s.skip()
		return nil
	}
	props := map[string]*schemaNode{}
	s.i++
	for first := true; !s.bad; first = false {
		if s.peek() == '}' {
			s.i++
			return props
		}
		if !first && !s.expect(',') {
			break
		}
		name, ok := s.str()
		if !ok || !s.expect(':') {
			break
		}
		props[name] = s.node(depth + 1)
	}
	s.bad = true
	return props
}

// text reads a string value, or skips any other value and returns "".
func (s *schemaScanner) text() string {
	if s.peek() != '"' {
		s.skip()
		return ""
	}
	t, _ := s.str()
	return t
}

// str reads a JSON string.
func (s *schemaScanner) str() (string, bool) {
	raw, ok := s.raw()
	if !ok {
		return "", false
	}
	if !slices.Contains(raw, '\\') {
		return string(raw), true
	}
	var t string
	if json.Unmarshal(s.b[s.i-len(raw)-2:s.i], &t) != nil {
		s.bad = true
		return "", false
	}
	return t, true
}

// raw reads a JSON string and returns its bytes between the quotes, escapes
// undecoded.
func (s *schemaScanner) raw() ([]byte, bool) {
	if s.peek() != '"' {
		s.bad = true
		return nil, false
	}
	start := s.i + 1
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			return s.b[start : s.i-1], true
		}
	}
	s.bad = true
	return nil, false
}

// skip passes over one value of any kind and depth without reading it,
// stopping after it (or at the end of the enclosing value if there is none).
func (s *schemaScanner) skip() {
	depth := 0
	for !s.bad && s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			s.raw() // consumes the closing quote
			if depth == 0 {
				return
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return
			}
			depth--
			if depth == 0 {
				s.i++
				return
			}
		case ',', ':':
			if depth == 0 {
				return
			}
		}
		s.i++
	}
}

// peek skips white space and returns the next byte, or 0 at the end.
func (s *schemaScanner) peek() byte {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return s.b[s.i]
		}
	}
	return 0
}

// expect consumes c or marks the text bad.
func (s *schemaScanner) expect(c byte) bool {
	if s.peek() != c {
		s.bad = true
		return false
	}
	s.i++
	return true
}
