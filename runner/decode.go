package runner

import (
	"encoding/json"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// DecodeAnswer decodes one line of the answer to a call, as
// json.Unmarshal(line, &a) does. A result of the common shape (the one
// flatLine writes: content blocks of strings, metadata of strings,
// numbers, booleans and nulls) is read in one pass by readFlat, without
// encoding/json's validating pass before its decoding one and its
// reflection over each value; any other line (progress, an error, a
// structured value, nested metadata, whitespace between tokens, a key
// twice or not exactly a field's, a string encoding/json would mend) is
// decoded by json.Unmarshal from its start, which gives the same value or
// the error.
func DecodeAnswer(line []byte) (Answer, error) {
	if r, ok := readFlat(line); ok {
		return Answer{Result: r}, nil
	}
	var a Answer
	err := json.Unmarshal(line, &a)
	return a, err
}

// DecodeCall decodes the body of a call, as json.Unmarshal(body, &c)
// does. The body a gateway sends (AppendCall: the name, then the
// arguments) is read by readCall, whose only pass over the arguments is
// json.Valid's; any other is decoded by json.Unmarshal from its start,
// which gives the same value or the error.
func DecodeCall(body []byte) (CallRequest, error) {
	if c, ok := readCall(body); ok {
		return c, nil
	}
	var c CallRequest
	err := json.Unmarshal(body, &c)
	return c, err
}

// readCall reads {"name":NAME} or {"name":NAME,"arguments":VALUE}, VALUE
// without whitespace around it, or gives up (ok false). The arguments are
// copied, as encoding/json copies a RawMessage: body may be a reused
// buffer's.
func readCall(body []byte) (CallRequest, bool) {
	r := flatReader{b: body}
	var c CallRequest
	if !r.take('{') {
		return c, false
	}
	k, ok := r.key()
	if !ok || k != "name" {
		return c, false
	}
	if c.Name, ok = r.str(); !ok {
		return c, false
	}
	if r.take('}') {
		return c, r.i == len(body)
	}
	if !r.take(',') {
		return c, false
	}
	if k, ok = r.key(); !ok || k != "arguments" || len(body)-r.i < 2 || body[len(body)-1] != '}' {
		return c, false
	}
	v := body[r.i : len(body)-1]
	if space(v[0]) || space(v[len(v)-1]) || !json.Valid(v) {
		return c, false
	}
	c.Arguments = append(json.RawMessage(nil), v...)
	return c, true
}

// space reports whether c is JSON's whitespace.
func space(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// readFlat reads {"result":{"content":[...],"meta":{...}}} (either member
// or none, in either order), or gives up (ok false).
func readFlat(line []byte) (*Result, bool) {
	r := flatReader{b: line}
	if !r.take('{') {
		return nil, false
	}
	if k, ok := r.key(); !ok || k != "result" || !r.take('{') {
		return nil, false
	}
	res := &Result{}
	if !r.take('}') {
		var seen [2]bool
		for {
			k, ok := r.key()
			if !ok {
				return nil, false
			}
			switch {
			case k == "content" && !seen[0]:
				seen[0] = true
				if res.Content, ok = r.content(); !ok {
					return nil, false
				}
			case k == "meta" && !seen[1]:
				seen[1] = true
				if res.Meta, ok = r.meta(); !ok {
					return nil, false
				}
			default:
				return nil, false
			}
			if r.take('}') {
				break
			}
			if !r.take(',') {
				return nil, false
			}
		}
	}
	if !r.take('}') || r.i != len(r.b) {
		return nil, false
	}
	return res, true
}

// flatReader reads a JSON text without whitespace from b[i:].
type flatReader struct {
	b []byte
	i int
}

// take reads c if it comes next.
func (r *flatReader) take(c byte) bool {
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

// key reads a member's name and its colon.
func (r *flatReader) key() (string, bool) {
	k, ok := r.str()
	return k, ok && r.take(':')
}

// content reads an array of content blocks whose members are strings
// (data, base64, is left to encoding/json).
func (r *flatReader) content() ([]Content, bool) {
	if !r.take('[') {
		return nil, false
	}
	out := []Content{}
	if r.take(']') {
		return out, true
	}
	for {
		if !r.take('{') {
			return nil, false
		}
		var (
			c    Content
			seen [4]bool
		)
		if !r.take('}') {
			for {
				k, ok := r.key()
				if !ok {
					return nil, false
				}
				var (
					f *string
					n int
				)
				switch k {
				case "type":
					f, n = &c.Type, 0
				case "text":
					f, n = &c.Text, 1
				case "mime_type":
					f, n = &c.MIMEType, 2
				case "uri":
					f, n = &c.URI, 3
				default:
					return nil, false
				}
				if seen[n] {
					return nil, false
				}
				seen[n] = true
				if *f, ok = r.str(); !ok {
					return nil, false
				}
				if r.take('}') {
					break
				}
				if !r.take(',') {
					return nil, false
				}
			}
		}
		out = append(out, c)
		if r.take(']') {
			return out, true
		}
		if !r.take(',') {
			return nil, false
		}
	}
}

// meta reads an object of strings, numbers (float64, as encoding/json
// decodes them into an interface), booleans and nulls.
func (r *flatReader) meta() (map[string]any, bool) {
	if !r.take('{') {
		return nil, false
	}
	out := map[string]any{}
	if r.take('}') {
		return out, true
	}
	for {
		k, ok := r.key()
		if !ok {
			return nil, false
		}
		if _, dup := out[k]; dup {
			return nil, false
		}
		if out[k], ok = r.scalar(); !ok {
			return nil, false
		}
		if r.take('}') {
			return out, true
		}
		if !r.take(',') {
			return nil, false
		}
	}
}

// scalar reads a string, a number, true, false or null.
func (r *flatReader) scalar() (any, bool) {
	if r.i >= len(r.b) {
		return nil, false
	}
	rest := r.b[r.i:]
	switch c := rest[0]; {
	case c == '"':
		return r.str()
	case c == '-' || c >= '0' && c <= '9':
		n := numberLen(rest)
		if n == 0 {
			return nil, false
		}
		v, err := strconv.ParseFloat(unsafe.String(&rest[0], n), 64)
		if err != nil {
			return nil, false // out of range: encoding/json's error
		}
		r.i += n
		return v, true
	}
	for _, l := range [...]struct {
		lit string
		v   any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if len(rest) >= len(l.lit) && string(rest[:len(l.lit)]) == l.lit {
			r.i += len(l.lit)
			return l.v, true
		}
	}
	return nil, false
}

// numberLen is the length of the JSON number at the start of b (0: none).
func numberLen(b []byte) int {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i, n = i+1, n+1
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return 0
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return 0
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0
		}
	}
	return i
}

// plainByte marks the bytes a JSON string holds as they are and that need
// no look: not '"', '\\', a control character or a byte of a multi-byte
// UTF-8 sequence.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads a JSON string: its escapes decoded as encoding/json decodes
// them. It gives up on a control character, invalid UTF-8 or a lone
// surrogate escape, which encoding/json refuses or replaces.
func (r *flatReader) str() (string, bool) {
	b, i := r.b, r.i
	if i >= len(b) || b[i] != '"' {
		return "", false
	}
	i++
	start, escaped, ascii := i, false, true
	for ; i < len(b); i++ {
		c := b[i]
		if plainByte[c] {
			continue
		}
		switch {
		case c == '"':
			raw := b[start:i]
			r.i = i + 1
			switch {
			case !ascii && !utf8.Valid(raw):
				return "", false
			case escaped:
				return unescape(raw)
			}
			return string(raw), true
		case c == '\\':
			escaped = true
			i++ // the escaped byte: unescape checks it
		case c < 0x20:
			return "", false
		default:
			ascii = false
		}
	}
	return "", false
}

// unescape decodes the escapes of raw, a JSON string's contents between
// its quotes (valid UTF-8, no control character).
func unescape(raw []byte) (string, bool) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			return "", false
		}
		switch e := raw[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r1, ok := hex4(raw[i+2:])
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r1) {
				// A pair, or given up: encoding/json makes a lone one U+FFFD.
				if len(raw)-i < 2 || raw[i] != '\\' || raw[i+1] != 'u' {
					return "", false
				}
				r2, ok := hex4(raw[i+2:])
				if r1 = utf16.DecodeRune(r1, r2); !ok || r1 == unicode.ReplacementChar {
					return "", false
				}
				i += 6
			}
			out = utf8.AppendRune(out, r1)
			continue
		default:
			return "", false
		}
		i += 2
	}
	if len(out) == 0 {
		return "", true
	}
	return unsafe.String(unsafe.SliceData(out), len(out)), true
}

// hex4 is the rune of the four hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
