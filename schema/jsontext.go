package schema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/jsonstr"
)

// syntaxError is where and why a JSON text is malformed, with a hint that
// tells the sender how to fix it.
type syntaxError struct {
	Offset int    // byte offset of the offending byte
	Msg    string // what is wrong
	Hint   string // what to do
	Deep   bool   // the nesting limit was exceeded (a size problem, not a syntax one)
}

// decoder is a strict JSON (RFC 8259) parser that decodes into the shapes
// encoding/json produces with UseNumber (map[string]any, []any, string,
// json.Number, bool, nil). It is written by hand so that every error carries
// an exact offset and a hint aimed at a model, and so that small objects
// decode with few allocations: unescaped strings and numbers are slices of
// one string copy of the input.
//
// It is stricter than encoding/json: invalid UTF-8, duplicate keys and
// exponents beyond ±maxExponent are errors, because the validator, the
// repairer and the tool must all see exactly the same value.
type decoder struct {
	src      string
	pos      int
	depth    int
	maxDepth int
	objects  int // objects decoded so far
	// plan, when set, is looked at for each member of the top-level
	// object as it is decoded: repairable is set when one might need a
	// repair (see Schema.ParseArguments).
	plan       *rnode
	repairable bool
}

// maxExponent bounds number exponents: validation turns numbers into exact
// rationals, and 1e999999 would cost megabytes per number.
const maxExponent = 1000

func decodeJSON(data []byte, maxDepth int) (any, *syntaxError) {
	v, _, err := decodeCounting(data, maxDepth)
	return v, err
}

// decodeCounting is decodeJSON that also counts the objects in the text.
func decodeCounting(data []byte, maxDepth int) (any, int, *syntaxError) {
	d := decoder{src: string(data), maxDepth: maxDepth}
	v, err := d.top()
	return v, d.objects, err
}

func (d *decoder) top() (any, *syntaxError) {
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

func (d *decoder) fail(msg, hint string) *syntaxError {
	return &syntaxError{Offset: d.pos, Msg: msg, Hint: hint}
}

func (d *decoder) eof() *syntaxError {
	return d.fail("unexpected end of input", "the JSON was cut off: send the complete object, with every string, array and object closed")
}

// describe names the byte at pos for an error message.
func (d *decoder) describe() string {
	if d.pos >= len(d.src) {
		return "end of input"
	}
	r, _ := utf8.DecodeRuneInString(d.src[d.pos:])
	if r == utf8.RuneError {
		return fmt.Sprintf("byte 0x%02x", d.src[d.pos])
	}
	return strconv.QuoteRune(r)
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.src) {
		switch d.src[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value() (any, *syntaxError) {
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
func (d *decoder) badValue() *syntaxError {
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

func (d *decoder) literal(word string) *syntaxError {
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

func (d *decoder) enter() *syntaxError {
	d.depth++
	if d.depth > d.maxDepth {
		e := d.fail(fmt.Sprintf("nested deeper than %d levels", d.maxDepth), fmt.Sprintf("flatten the arguments: at most %d nested objects and arrays", d.maxDepth))
		e.Deep = true
		return e
	}
	return nil
}

func (d *decoder) object() (any, *syntaxError) {
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
		if d.plan != nil && d.depth == 1 && !d.repairable {
			d.repairable = d.plan.memberRepairable(key, v)
		}
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

func (d *decoder) array() (any, *syntaxError) {
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
func (d *decoder) str() (string, *syntaxError) {
	start := d.pos + 1
	i := start
	i += jsonstr.Plain(d.src[i:]) // the loop below takes over where a byte needs a look
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
func (d *decoder) strSlow(start, i int) (string, *syntaxError) {
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

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// number decodes the number at pos as a json.Number holding its exact text.
func (d *decoder) number() (any, *syntaxError) {
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

const errCut = "cut off"

type numScan struct {
	end      int // bytes consumed
	exp      int // the exponent's value (clamped)
	integral bool
	err      string
}

// scanNumber reads the longest JSON number grammar prefix of s.
func scanNumber(s string) numScan {
	r := numScan{integral: true}
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i >= len(s) {
		r.end, r.err = i, errCut
		return r
	}
	switch {
	case s[i] == '0':
		i++
		if i < len(s) && s[i] >= '0' && s[i] <= '9' {
			r.end, r.err = i, "leading zero"
			return r
		}
	case s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		r.end, r.err = i, "a digit must follow '-'"
		return r
	}
	if i < len(s) && s[i] == '.' {
		r.integral = false
		i++
		if i >= len(s) {
			r.end, r.err = i, errCut
			return r
		}
		if s[i] < '0' || s[i] > '9' {
			r.end, r.err = i, "a digit must follow '.'"
			return r
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		r.integral = false
		i++
		neg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			neg = s[i] == '-'
			i++
		}
		if i >= len(s) {
			r.end, r.err = i, errCut
			return r
		}
		if s[i] < '0' || s[i] > '9' {
			r.end, r.err = i, "a digit must follow the exponent"
			return r
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if r.exp <= maxExponent {
				r.exp = r.exp*10 + int(s[i]-'0')
			}
			i++
		}
		if neg {
			r.exp = -r.exp
		}
	}
	r.end = i
	return r
}
