package schema

// The decoder, Repair's needsRepair and the fast validator's valid as they
// were before session 48's changes (main 5df15e1), kept for the
// differential tests in differential_test.go: the new code must answer
// exactly as the old did, error for error and byte for byte.

import (
	"errors"

	"encoding/json"
	"fmt"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

type oldDecoder struct {
	src      string
	pos      int
	depth    int
	maxDepth int
	objects  int // objects decoded so far
}

func oldDecodeJSON(data []byte, maxDepth int) (any, *syntaxError) {
	v, _, err := oldDecodeCounting(data, maxDepth)
	return v, err
}

// oldDecodeCounting is decodeJSON that also counts the objects in the text.
func oldDecodeCounting(data []byte, maxDepth int) (any, int, *syntaxError) {
	d := oldDecoder{src: string(data), maxDepth: maxDepth}
	v, err := d.top()
	return v, d.objects, err
}

func (d *oldDecoder) top() (any, *syntaxError) {
	d.skipSpace()
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.pos < len(d.src) {
		if c := d.src[d.pos]; c == '{' || c == '[' {
			return nil, d.fail("a second JSON value follows the first", "trailing data after the object: send exactly one JSON object (merge the two into one)")
		}
		return nil, d.fail(fmt.Sprintf("unexpected %s after the end of the JSON value", d.describe()), "trailing data after the object: send exactly one JSON object and nothing after it")
	}
	return v, nil
}

func (d *oldDecoder) fail(msg, hint string) *syntaxError {
	return &syntaxError{Offset: d.pos, Msg: msg, Hint: hint}
}

func (d *oldDecoder) eof() *syntaxError {
	return d.fail("unexpected end of input", "the JSON was cut off: send the complete object, with every string, array and object closed")
}

// describe names the byte at pos for an error message.
func (d *oldDecoder) describe() string {
	if d.pos >= len(d.src) {
		return "end of input"
	}
	r, _ := utf8.DecodeRuneInString(d.src[d.pos:])
	if r == utf8.RuneError {
		return fmt.Sprintf("byte 0x%02x", d.src[d.pos])
	}
	return strconv.QuoteRune(r)
}

func (d *oldDecoder) skipSpace() {
	for d.pos < len(d.src) {
		switch d.src[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *oldDecoder) value() (any, *syntaxError) {
	if d.pos >= len(d.src) {
		return nil, d.eof()
	}
	switch c := d.src[d.pos]; c {
	case '{':
		return d.object()
	case '[':
		return d.array()
	case '"':
		str, err := d.str()
		if err != nil {
			return nil, err
		}
		return str, nil
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	case 'n':
		return nil, d.literal("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return d.number()
	default:
		return nil, d.badValue()
	}
}

// badValue explains a byte that cannot start a JSON value.
func (d *oldDecoder) badValue() *syntaxError {
	rest := d.src[d.pos:]
	word := rest
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			word = rest[:i]
			break
		}
	}
	switch {
	case rest[0] == '\'':
		return d.fail("single-quoted string", "single quotes are not JSON: use double quotes for strings and keys")
	case word == "NaN" || word == "Infinity" || word == "undefined":
		return d.fail(word+" is not a JSON value", "JSON has no NaN, Infinity or undefined: send a finite number, or null")
	case word == "True" || word == "False" || word == "None" || word == "TRUE" || word == "FALSE" || word == "NULL" || word == "Null":
		return d.fail(word+" is not a JSON literal", "JSON literals are lowercase: true, false, null")
	case rest[0] == '+' || rest[0] == '.':
		return d.fail("invalid number", "JSON numbers start with a digit or '-': write 0.5, not .5 or +1")
	case rest[0] == '/':
		return d.fail("comment", "comments are not allowed in JSON: remove them")
	case rest[0] == '`':
		return d.fail("backtick", "send the raw JSON object, without Markdown code fences or backticks")
	case rest[0] == '}' || rest[0] == ']':
		return d.fail("unexpected "+d.describe()+" where a value was expected", "a value is missing here (a trailing comma?): remove the comma or add the value")
	case word != "":
		return d.fail("unquoted word "+strconv.Quote(word), "strings must be in double quotes: \""+word+"\"")
	}
	return d.fail("unexpected "+d.describe()+" where a value was expected", "send valid JSON: a value is a string in double quotes, a number, true, false, null, an object or an array")
}

func (d *oldDecoder) literal(word string) *syntaxError {
	rest := d.src[d.pos:]
	if len(rest) >= len(word) && rest[:len(word)] == word {
		d.pos += len(word)
		return nil
	}
	if len(rest) < len(word) && word[:len(rest)] == rest {
		d.pos = len(d.src)
		return d.eof()
	}
	return d.badValue()
}

func (d *oldDecoder) enter() *syntaxError {
	d.depth++
	if d.depth > d.maxDepth {
		e := d.fail(fmt.Sprintf("nested deeper than %d levels", d.maxDepth), fmt.Sprintf("flatten the arguments: at most %d nested objects and arrays", d.maxDepth))
		e.Deep = true
		return e
	}
	return nil
}

func (d *oldDecoder) object() (any, *syntaxError) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++ // '{'
	d.objects++
	d.skipSpace()
	if d.pos < len(d.src) && d.src[d.pos] == '}' {
		d.pos++
		d.depth--
		return map[string]any{}, nil
	}
	m := make(map[string]any, 4)
	for {
		if d.pos >= len(d.src) {
			return nil, d.eof()
		}
		switch c := d.src[d.pos]; {
		case c == '"':
		case c == '}':
			return nil, d.fail("trailing comma before '}'", "remove the comma after the last property")
		case c == '\'':
			return nil, d.fail("single-quoted key", "single quotes are not JSON: use double quotes for strings and keys")
		default:
			return nil, d.fail("expected a property name in double quotes, found "+d.describe(), "object keys must be strings in double quotes, e.g. {\"name\": 1}")
		}
		keyAt := d.pos
		key, err := d.str()
		if err != nil {
			return nil, err
		}
		if _, dup := m[key]; dup {
			d.pos = keyAt
			return nil, d.fail("duplicate key "+strconv.Quote(key), "send each property once")
		}
		d.skipSpace()
		if d.pos >= len(d.src) {
			return nil, d.eof()
		}
		if d.src[d.pos] != ':' {
			return nil, d.fail("expected ':' after the key "+strconv.Quote(key)+", found "+d.describe(), "write each property as \"key\": value")
		}
		d.pos++
		d.skipSpace()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		m[key] = v
		d.skipSpace()
		if d.pos >= len(d.src) {
			return nil, d.eof()
		}
		switch d.src[d.pos] {
		case ',':
			d.pos++
			d.skipSpace()
		case '}':
			d.pos++
			d.depth--
			return m, nil
		case '/':
			return nil, d.fail("comment", "comments are not allowed in JSON: remove them")
		default:
			return nil, d.fail("expected ',' or '}' after the value of "+strconv.Quote(key)+", found "+d.describe(), "separate properties with commas and close the object with '}'")
		}
	}
}

func (d *oldDecoder) array() (any, *syntaxError) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++ // '['
	d.skipSpace()
	a := []any{}
	if d.pos < len(d.src) && d.src[d.pos] == ']' {
		d.pos++
		d.depth--
		return a, nil
	}
	for {
		if d.pos < len(d.src) && d.src[d.pos] == ']' && len(a) > 0 {
			return nil, d.fail("trailing comma before ']'", "remove the comma after the last item")
		}
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		d.skipSpace()
		if d.pos >= len(d.src) {
			return nil, d.eof()
		}
		switch d.src[d.pos] {
		case ',':
			d.pos++
			d.skipSpace()
		case ']':
			d.pos++
			d.depth--
			return a, nil
		case '/':
			return nil, d.fail("comment", "comments are not allowed in JSON: remove them")
		default:
			return nil, d.fail("expected ',' or ']' after an array item, found "+d.describe(), "separate items with commas and close the array with ']'")
		}
	}
}

// str decodes the string at pos (which holds '"').
func (d *oldDecoder) str() (string, *syntaxError) {
	start := d.pos + 1
	i := start
	for i < len(d.src) {
		c := d.src[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return d.src[start:i], nil
		case c == '\\':
			return d.strSlow(start, i)
		case c < 0x20:
			d.pos = i
			return "", d.fail("control character in a string", "escape control characters in strings: \\n, \\t, \\r or \\u00XX")
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRuneInString(d.src[i:])
			if r == utf8.RuneError && n == 1 {
				d.pos = i
				return "", d.fail("invalid UTF-8 in a string", "send text encoded as UTF-8")
			}
			i += n
		}
	}
	d.pos = len(d.src)
	return "", d.eof()
}

// strSlow decodes a string with escapes; i is the first backslash.
func (d *oldDecoder) strSlow(start, i int) (string, *syntaxError) {
	b := make([]byte, 0, i-start+16)
	b = append(b, d.src[start:i]...)
	for i < len(d.src) {
		c := d.src[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return string(b), nil
		case c == '\\':
			if i+1 >= len(d.src) {
				d.pos = len(d.src)
				return "", d.eof()
			}
			switch e := d.src[i+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
				i += 2
			case 'b':
				b, i = append(b, '\b'), i+2
			case 'f':
				b, i = append(b, '\f'), i+2
			case 'n':
				b, i = append(b, '\n'), i+2
			case 'r':
				b, i = append(b, '\r'), i+2
			case 't':
				b, i = append(b, '\t'), i+2
			case 'u':
				r, ok := hex4(d.src, i+2)
				if !ok {
					d.pos = i
					if i+6 > len(d.src) {
						return "", d.eof()
					}
					return "", d.fail("invalid \\u escape", "write \\u followed by exactly four hex digits")
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r2, ok := hex4(d.src, i+2); ok && i+1 < len(d.src) && d.src[i] == '\\' && d.src[i+1] == 'u' {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							r = dec
							i += 6
						} else {
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError // a lone surrogate, as encoding/json decodes it
					}
				}
				b = utf8.AppendRune(b, r)
			default:
				d.pos = i
				return "", d.fail("invalid escape \\"+string(rune(e)), "valid escapes are \\\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX")
			}
		case c < 0x20:
			d.pos = i
			return "", d.fail("control character in a string", "escape control characters in strings: \\n, \\t, \\r or \\u00XX")
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(d.src[i:])
			if r == utf8.RuneError && n == 1 {
				d.pos = i
				return "", d.fail("invalid UTF-8 in a string", "send text encoded as UTF-8")
			}
			b = append(b, d.src[i:i+n]...)
			i += n
		}
	}
	d.pos = len(d.src)
	return "", d.eof()
}

func (s *Schema) oldRepair(args map[string]any) (map[string]any, []Repair) {
	if s.repair == nil || len(args) == 0 {
		return args, nil
	}
	if !oldNeedsRepair(s.repair, args, 0) {
		return args, nil // the common case: no allocation
	}
	r := repairer{}
	out, changed := r.value(s.repair, args, nil, 0)
	if !changed {
		return args, nil
	}
	m, ok := out.(map[string]any)
	if !ok { // cannot happen: the root is an object and is never replaced by another type
		return args, nil
	}
	return m, r.done
}

// needsRepair reports whether value would change anything, without
// recording where (that would cost allocations on every call).
func oldNeedsRepair(n *rnode, v any, depth int) bool {
	if n == nil || depth > MaxArgumentDepth {
		return false
	}
	if n.wanted != 0 && v != nil && !typeMatches(n.wanted, v) {
		if _, kind := convert(n, v, depth); kind != "" {
			return true
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for k, item := range x {
			for _, mb := range n.members {
				child := mb.extra
				if p, ok := mb.props[k]; ok {
					child = p
				}
				if oldNeedsRepair(child, item, depth+1) {
					return true
				}
			}
		}
	case []any:
		for i, item := range x {
			for _, mb := range n.members {
				child := mb.rest
				if i < len(mb.prefix) {
					child = mb.prefix[i]
				}
				if oldNeedsRepair(child, item, depth+1) {
					return true
				}
			}
		}
	}
	return false
}

// valid reports whether v is valid against n. depth bounds the recursion
// (values are at most MaxArgumentDepth deep, and in-place cycles are refused
// at compile time, so it only matters for values built by hand).
func (n *fnode) oldValid(v any, depth int) bool {
	if depth > 4*MaxArgumentDepth+MaxFanOut {
		return false
	}
	switch v.(type) {
	case nil, bool, string, json.Number, []any, map[string]any:
	default:
		return false // a Go value the parser never produces: leave it to the full validator
	}
	if n.always != nil {
		return *n.always
	}
	if n.types != 0 && !typeMatches(n.types, v) {
		return false
	}
	if n.hasConst && !equal(v, n.constV) {
		return false
	}
	if n.enum != nil {
		found := false
		for _, e := range n.enum {
			if equal(v, e) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if n.ref != nil && !n.ref.oldValid(v, depth+1) {
		return false
	}
	if n.refOnly {
		return true
	}
	switch v := v.(type) {
	case map[string]any:
		if len(v) < n.minProps || n.maxProps >= 0 && len(v) > n.maxProps {
			return false
		}
		for _, r := range n.required {
			if _, ok := v[r]; !ok {
				return false
			}
		}
		for k, x := range v {
			if p, ok := n.props[k]; ok {
				if !p.oldValid(x, depth+1) {
					return false
				}
			} else if n.noExtra {
				return false
			} else if n.extra != nil && !n.extra.oldValid(x, depth+1) {
				return false
			}
		}
	case []any:
		if len(v) < n.minItems || n.maxItems >= 0 && len(v) > n.maxItems {
			return false
		}
		if n.items != nil {
			for _, x := range v {
				if !n.items.oldValid(x, depth+1) {
					return false
				}
			}
		}
	case string:
		if n.minLen > 0 || n.maxLen >= 0 {
			l := utf8.RuneCountInString(v)
			if l < n.minLen || n.maxLen >= 0 && l > n.maxLen {
				return false
			}
		}
		if n.pattern != nil && !n.pattern.MatchString(v) {
			return false
		}
	case json.Number:
		if !n.numberOK(v) {
			return false
		}
	}
	for _, a := range n.allOf {
		if !a.oldValid(v, depth+1) {
			return false
		}
	}
	if len(n.anyOf) > 0 {
		ok := false
		for _, a := range n.anyOf {
			if a.oldValid(v, depth+1) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(n.oneOf) > 0 {
		matched := 0
		for _, a := range n.oneOf {
			if a.oldValid(v, depth+1) {
				matched++
			}
		}
		if matched != 1 {
			return false
		}
	}
	if n.not != nil && n.not.oldValid(v, depth+1) {
		return false
	}
	return true
}

func (s *Schema) oldValidate(args map[string]any) []FieldError {
	if args == nil {
		args = map[string]any{}
	}
	if len(args) == 0 && s.emptyOK {
		return nil
	}
	if s.fast != nil && s.fast.oldValid(args, 0) {
		return nil
	}
	err := s.root.Validate(args)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []FieldError{{Pointer: "", Expected: "valid arguments", Got: "an error", Message: err.Error()}}
	}
	c := collector{s: s, args: args}
	c.collect(ve)
	if len(c.out) == 0 { // never report invalid arguments as valid
		c.add(nil, "valid arguments", "invalid arguments", truncate(err.Error(), 300))
	}
	return sortFields(c.out)
}

// number decodes the number at pos as a json.Number holding its exact text.
func (d *oldDecoder) number() (any, *syntaxError) {
	n := scanNumber(d.src[d.pos:])
	switch {
	case n.err == "" && n.end > 0:
	case n.end >= len(d.src)-d.pos && n.err == errCut:
		d.pos = len(d.src)
		return nil, d.eof()
	default:
		d.pos += n.end
		return nil, d.fail("invalid number: "+n.err, "write numbers as JSON does: -12, 0.5, 1e3 (no leading zeros, no trailing '.', no hex)")
	}
	if n.exp > maxExponent || n.exp < -maxExponent {
		return nil, d.fail("number exponent out of range", fmt.Sprintf("send numbers with exponents within ±%d", maxExponent))
	}
	s := d.src[d.pos : d.pos+n.end]
	d.pos += n.end
	// A number must end where a value may end.
	if d.pos < len(d.src) {
		if c := d.src[d.pos]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '.' {
			return nil, d.fail("invalid number: unexpected "+d.describe(), "write numbers as JSON does: -12, 0.5, 1e3 (no units, no hex, no trailing text)")
		}
	}
	return json.Number(s), nil
}
