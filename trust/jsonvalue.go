package trust

import (
	"bytes"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/jsonstr"
)

// parseJSON decodes data as encoding/json's Unmarshal decodes it into an
// any (maps of any, slices of any, strings, float64, bools, nil), with the
// same value, without Unmarshal's first pass over data to check it and
// its byte-at-a-time scan of strings: asJSON decodes every structured
// result, whose strings are most of its bytes (a process's output, a
// file's text). It reports false for what it does not decode (data that is
// not JSON, a number float64 cannot hold, nesting deeper than maxParseDepth)
// and the caller then asks Unmarshal, whose answer it is.
func parseJSON(data []byte) (any, bool) {
	p := jsonParser{data: data}
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	return v, p.i == len(p.data)
}

// maxParseDepth is how deeply parseJSON follows nested arrays and objects
// (Unmarshal's own limit is 10,000).
const maxParseDepth = 100

type jsonParser struct {
	data []byte
	i    int
}

func (p *jsonParser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value decodes the value at p.i.
func (p *jsonParser) value(depth int) (any, bool) {
	p.space()
	if p.i >= len(p.data) || depth > maxParseDepth {
		return nil, false
	}
	switch c := p.data[p.i]; {
	case c == '"':
		return p.string()
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	}
	return nil, false
}

func (p *jsonParser) literal(word string) bool {
	if !bytes.HasPrefix(p.data[p.i:], []byte(word)) {
		return false
	}
	p.i += len(word)
	return true
}

func (p *jsonParser) object(depth int) (any, bool) {
	p.i++ // {
	m := map[string]any{}
	p.space()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return m, true
	}
	for {
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != '"' {
			return nil, false
		}
		k, ok := p.string()
		if !ok {
			return nil, false
		}
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return nil, false
		}
		p.i++
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[k.(string)] = v // a key given twice: the last value, as Unmarshal
		if end, ok := p.next('}'); !ok {
			return nil, false
		} else if end {
			return m, true
		}
	}
}

func (p *jsonParser) array(depth int) (any, bool) {
	p.i++ // [
	a := []any{}
	p.space()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return a, true
	}
	for {
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if end, ok := p.next(']'); !ok {
			return nil, false
		} else if end {
			return a, true
		}
	}
}

// next reads what follows a member of an object or an array: a comma
// (another member) or close (the end); anything else is not JSON.
func (p *jsonParser) next(close byte) (end, ok bool) {
	p.space()
	if p.i >= len(p.data) {
		return false, false
	}
	switch p.data[p.i] {
	case ',':
		p.i++
		return false, true
	case close:
		p.i++
		return true, true
	}
	return false, false
}

// number decodes a number of JSON's grammar as Unmarshal does into an any
// (strconv.ParseFloat; out of float64's range: not decoded).
func (p *jsonParser) number() (any, bool) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.data) && '0' <= p.data[p.i] && p.data[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.data[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.data) && p.data[p.i] == '0':
		p.i++
	case digits() == 0:
		return nil, false
	}
	if p.i < len(p.data) && p.data[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if p.i < len(p.data) && (p.data[p.i] == 'e' || p.data[p.i] == 'E') {
		p.i++
		if p.i < len(p.data) && (p.data[p.i] == '+' || p.data[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	f, err := strconv.ParseFloat(string(p.data[start:p.i]), 64)
	return f, err == nil
}

// string decodes the string at p.i as Unmarshal does: escapes resolved, a
// lone or broken surrogate and each byte of invalid UTF-8 replaced by
// U+FFFD. A control character or an unknown escape is not decoded.
func (p *jsonParser) string() (any, bool) {
	p.i++ // "
	start := p.i
	// Most strings, and most of long ones, need no change: find where the
	// first that does is.
	for p.i < len(p.data) {
		c := p.data[p.i]
		if c == '"' {
			s := string(p.data[start:p.i])
			p.i++
			return s, true
		}
		if !plain[c] {
			break
		}
		p.i++
	}
	// What is left decodes to at most its bytes up to the closing quote
	// (but invalid UTF-8, which grows: the Builder makes room).
	var out strings.Builder // its String is not a copy
	out.Grow(jsonstr.End(p.data, p.i) - start)
	out.Write(p.data[start:p.i])
	for p.i < len(p.data) {
		// A run of bytes that stay as they are is copied at once.
		run := p.i
		for run < len(p.data) && plain[p.data[run]] {
			run++
		}
		out.Write(p.data[p.i:run])
		p.i = run
		if p.i >= len(p.data) {
			break
		}
		c := p.data[p.i]
		switch {
		case c == '"':
			p.i++
			return out.String(), true
		case c < ' ':
			return nil, false
		case c == '\\':
			if p.i+1 >= len(p.data) {
				return nil, false
			}
			e := p.data[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				out.WriteByte(e)
			case 'b':
				out.WriteByte('\b')
			case 'f':
				out.WriteByte('\f')
			case 'n':
				out.WriteByte('\n')
			case 'r':
				out.WriteByte('\r')
			case 't':
				out.WriteByte('\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return nil, false
				}
				if utf16.IsSurrogate(r) {
					// A pair when a \u of its second half follows; else U+FFFD
					// and what follows is read on its own.
					save := p.i
					if p.i+1 < len(p.data) && p.data[p.i] == '\\' && p.data[p.i+1] == 'u' {
						p.i += 2
						if r2, ok := p.hex4(); ok {
							if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
								out.WriteRune(d)
								continue
							}
						}
					}
					p.i = save
					r = unicode.ReplacementChar
				}
				out.WriteRune(r)
			default:
				return nil, false
			}
		default: // not ASCII
			r, size := utf8.DecodeRune(p.data[p.i:])
			p.i += size
			out.WriteRune(r) // invalid UTF-8: U+FFFD per byte
		}
	}
	return nil, false
}

// plain says which bytes of a string stay as they are: printable ASCII
// but the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// hex4 reads the four hex digits of a \u escape.
func (p *jsonParser) hex4() (rune, bool) {
	if p.i+4 > len(p.data) {
		return 0, false
	}
	var r rune
	for _, c := range p.data[p.i : p.i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	p.i += 4
	return r, true
}
