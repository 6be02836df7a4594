package policy

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/toolgate/toolgate/tool"
)

// callKey is the tool name and the canonical form of the arguments: objects
// with sorted keys, no insignificant space, written as json.Marshal writes
// the decoded value (numbers as given); no arguments (none, null) are {},
// as the engine parses them and whichever form the audit log recorded.
// args are the arguments already parsed, or nil to parse call.Args.
func callKey(call tool.Call, args map[string]any) string {
	// Written on the stack when it fits: only the string is made.
	var room [256]byte
	return string(appendCallKey(room[:0], call, args))
}

// appendCallKey appends callKey(call, args) to b, growing it once to the
// size the key most likely has when it is too short.
func appendCallKey(b []byte, call tool.Call, args map[string]any) []byte {
	if n := len(b) + len(call.Name) + 1 + len(call.Args); n > cap(b) {
		b = append(make([]byte, 0, n), b...)
	}
	b = append(append(b, call.Name...), 0)
	if args != nil {
		return appendCanonical(b, args)
	}
	raw := bytes.TrimSpace(call.Args)
	if len(raw) == 0 || string(raw) == "null" {
		return append(b, "{}"...)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(call.Args)) // not raw: JSON space is narrower than TrimSpace's
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return append(b, call.Args...)
	}
	return appendCanonical(b, v)
}

// appendCanonical appends v, a decoded JSON value, as json.Marshal writes
// it (map keys sorted, HTML characters escaped).
func appendCanonical(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case string:
		return tool.AppendJSONString(b, v)
	case json.Number:
		if v == "" {
			return append(b, '0')
		}
		return append(b, v...)
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonical(b, e)
		}
		return append(b, ']')
	case map[string]any:
		var small [16]string
		keys := small[:0]
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = tool.AppendJSONString(b, k)
			b = append(b, ':')
			b = appendCanonical(b, v[k])
		}
		return append(b, '}')
	}
	out, err := json.Marshal(v) // not a shape the parsers make: as json.Marshal writes it
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, out...)
}
