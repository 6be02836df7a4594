package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/tool"
)

// Limits on a call's arguments. Larger or deeper arguments are refused with
// a too_large error before anything else looks at them.
const (
	MaxArgumentBytes = 8 << 20 // 8 MiB of JSON text
	MaxArgumentDepth = 64      // nested objects and arrays
)

// ParseArguments parses a call's raw arguments into a JSON object.
//
// Empty, whitespace-only or null arguments are an empty object (whether that
// is acceptable is the schema's business: see Schema.Validate). Anything
// else must be exactly one JSON object: malformed JSON is an
// invalid_arguments error giving the byte offset, line and column and a hint
// on how to fix it; valid JSON that is not an object is an invalid_arguments
// error saying what was received. Numbers decode as json.Number, so large
// integers keep every digit. Arguments over MaxArgumentBytes or nested deeper
// than MaxArgumentDepth are a too_large error.
//
// The parser is strict where parsers disagree: duplicate keys, invalid UTF-8
// and exponents beyond ±1000 are refused, so that every later stage sees the
// same value.
func ParseArguments(raw []byte) (map[string]any, *tool.Error) {
	args, _, err := parseArguments(raw, nil)
	return args, err
}

// ParseArguments is the package's ParseArguments for the arguments of a
// tool with this input schema; it also reports whether s.Repair could
// change them. When repairable is false, Repair would return args itself
// and no repairs: the caller need not call it. The answer errs on the side
// of true: Repair decides.
//
// It costs little: each member of the object is looked at against the
// schema's repair plan as it is decoded, rather than by a second walk over
// the map (which Repair would take).
func (s *Schema) ParseArguments(raw []byte) (args map[string]any, repairable bool, err *tool.Error) {
	if s.repair == nil {
		args, _, err = parseArguments(raw, nil)
		return args, false, err
	}
	args, repairable, err = parseArguments(raw, s.repair)
	if err == nil && s.repair.wanted != 0 && !typeMatches(s.repair.wanted, args) {
		repairable = true // a schema that wants no object: let Repair see
	}
	return args, repairable, err
}

// parseArguments is ParseArguments, looking at each top-level member
// against plan when plan is not nil.
func parseArguments(raw []byte, plan *rnode) (map[string]any, bool, *tool.Error) {
	if len(raw) > MaxArgumentBytes {
		return nil, false, tool.Errorf(tool.TooLarge, "the arguments are %d bytes, over the limit of %d bytes", len(raw), MaxArgumentBytes).
			WithSuggestion("send smaller arguments: pass large content by reference (a path or URL) instead of inline").
			WithDetail("size", len(raw)).WithDetail("limit", MaxArgumentBytes)
	}
	if isBlankOrNull(raw) {
		return map[string]any{}, false, nil
	}
	d := decoder{src: string(raw), maxDepth: MaxArgumentDepth, plan: plan}
	v, serr := d.top()
	if serr != nil {
		return nil, false, syntaxToolError(raw, serr)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, false, notObjectError(v)
	}
	return obj, d.repairable, nil
}

func isBlankOrNull(raw []byte) bool {
	i, j := 0, len(raw)
	for i < j && isSpace(raw[i]) {
		i++
	}
	for j > i && isSpace(raw[j-1]) {
		j--
	}
	return i == j || string(raw[i:j]) == "null"
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// syntaxToolError turns a syntax error into the model-facing error.
func syntaxToolError(raw []byte, e *syntaxError) *tool.Error {
	line, col := lineCol(raw, e.Offset)
	typ, what := tool.InvalidArguments, "malformed JSON arguments"
	if e.Deep {
		typ, what = tool.TooLarge, "arguments nested too deeply"
	}
	return tool.Errorf(typ, "%s at byte %d (line %d, column %d): %s, near %s", what, e.Offset, line, col, e.Msg, excerpt(raw, e.Offset)).
		WithSuggestion("%s", e.Hint).
		WithDetail("offset", e.Offset).WithDetail("line", line).WithDetail("column", col)
}

// lineCol returns the 1-based line and column (in characters) of offset.
func lineCol(raw []byte, offset int) (line, col int) {
	if offset > len(raw) {
		offset = len(raw)
	}
	line, start := 1, 0
	for i := 0; i < offset; i++ {
		if raw[i] == '\n' {
			line, start = line+1, i+1
		}
	}
	return line, utf8.RuneCount(raw[start:offset]) + 1
}

// excerpt quotes up to 20 bytes either side of offset, marking the offset
// with ⟨here⟩.
func excerpt(raw []byte, offset int) string {
	const span = 20
	lo, hi := max(offset-span, 0), min(offset+span, len(raw))
	for lo > 0 && lo < len(raw) && !utf8.RuneStart(raw[lo]) {
		lo--
	}
	for hi < len(raw) && !utf8.RuneStart(raw[hi]) {
		hi++
	}
	if offset > len(raw) {
		offset = len(raw)
	}
	var b strings.Builder
	b.WriteByte('`')
	if lo > 0 {
		b.WriteString("…")
	}
	b.WriteString(strings.ToValidUTF8(string(raw[lo:offset]), "\uFFFD"))
	b.WriteString("⟨here⟩")
	b.WriteString(strings.ToValidUTF8(string(raw[offset:hi]), "\uFFFD"))
	if hi < len(raw) {
		b.WriteString("…")
	}
	b.WriteByte('`')
	return b.String()
}

// notObjectError says what was received instead of an object.
func notObjectError(v any) *tool.Error {
	got := jsonKind(v)
	e := tool.Errorf(tool.InvalidArguments, "the arguments must be a JSON object, got %s %s", article(got), got).
		WithDetail("got", got)
	if s, ok := v.(string); ok {
		if inner, err := decodeJSON([]byte(s), MaxArgumentDepth); err == nil {
			if _, isObj := inner.(map[string]any); isObj {
				return e.WithSuggestion("the object was sent encoded inside a JSON string: send the object itself, not a string holding it")
			}
		}
	}
	return e.WithSuggestion(`send the arguments as one JSON object that names each parameter, e.g. {"name": value}`)
}

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// jsonKind names the JSON type of a decoded value ("integer" for a number
// without fraction or exponent).
func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number:
		if scanNumber(string(v)).integral {
			return "integer"
		}
		return "number"
	case float64, float32:
		return "number"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "integer"
	}
	return fmt.Sprintf("%T", v)
}
