package tool

// Relay is the bytes a gateway received a result as, tied to what they were
// decoded into: For gives them back only for a Result that says exactly
// that, so a stage that changes a result in any way (a redaction, a cut, a
// mark, metadata, an error) makes a gateway encode it again instead of
// sending the bytes on. Whoever makes a Relay answers for the bytes saying
// no more and no less than the Result it was made with, and for the
// structured bytes being the JSON text its structured value was decoded
// from.
type Relay struct {
	bytes      []byte
	content    []Content // a copy: a change in place to the result's is seen
	structured any       // a deep copy
	rawValue   []byte    // the JSON text structured was decoded from
}

// NewRelay ties data to r, or returns nil when r cannot be tied: a block
// other than text, an error, metadata, or a structured value that is not
// made of JSON's own types (maps of any, slices of any, strings, float64,
// bools, nil). structured is the part of data r.Structured was decoded
// from (nil when r has none).
func NewRelay(data, structured []byte, r Result) *Relay {
	if r.Error != nil || len(r.Meta) > 0 {
		return nil
	}
	for _, c := range r.Content {
		if c.Type != "text" || c.Data != nil || c.MIMEType != "" || c.URI != "" {
			return nil
		}
	}
	s, ok := copyJSON(r.Structured)
	if !ok {
		return nil
	}
	return &Relay{bytes: data, content: append([]Content(nil), r.Content...), structured: s, rawValue: structured}
}

// For returns the bytes when r says exactly what they were decoded into.
func (x *Relay) For(r Result) ([]byte, bool) {
	if x == nil || r.Error != nil || len(r.Meta) > 0 || len(r.Content) != len(x.content) {
		return nil, false
	}
	for i, c := range r.Content {
		if c.Type != x.content[i].Type || c.Text != x.content[i].Text || c.Data != nil || c.MIMEType != "" || c.URI != "" {
			return nil, false
		}
	}
	if !equalJSON(r.Structured, x.structured) {
		return nil, false
	}
	return x.bytes, true
}

// StructuredFor returns the JSON text the structured value was decoded
// from, when v is still what it was decoded into (a stage that reads a
// result's structured value as JSON may read these bytes instead of
// encoding v).
func (x *Relay) StructuredFor(v any) ([]byte, bool) {
	if x == nil || x.rawValue == nil || !equalJSON(v, x.structured) {
		return nil, false
	}
	return x.rawValue, true
}

// copyJSON deep-copies a value made of JSON's own types.
func copyJSON(v any) (any, bool) {
	switch v := v.(type) {
	case nil, string, float64, bool:
		return v, true
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			c, ok := copyJSON(e)
			if !ok {
				return nil, false
			}
			m[k] = c
		}
		return m, true
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			c, ok := copyJSON(e)
			if !ok {
				return nil, false
			}
			s[i] = c
		}
		return s, true
	}
	return nil, false
}

// equalJSON compares a value with one copyJSON made.
func equalJSON(a, b any) bool {
	switch b := b.(type) {
	case nil:
		return a == nil
	case string:
		s, ok := a.(string)
		return ok && s == b
	case float64:
		f, ok := a.(float64)
		return ok && f == b
	case bool:
		t, ok := a.(bool)
		return ok && t == b
	case map[string]any:
		m, ok := a.(map[string]any)
		if !ok || len(m) != len(b) {
			return false
		}
		for k, e := range b {
			if f, ok := m[k]; !ok || !equalJSON(f, e) {
				return false
			}
		}
		return true
	case []any:
		s, ok := a.([]any)
		if !ok || len(s) != len(b) {
			return false
		}
		for i, e := range b {
			if !equalJSON(s[i], e) {
				return false
			}
		}
		return true
	}
	return false
}
