package tool

// Relay is the bytes a gateway received a result as, tied to what they were
// decoded into: For gives them back only for a Result that says exactly
// that, so a stage that changes a result in any way (a redaction, a cut, a
// mark, metadata, an error) makes a gateway encode it again instead of
// sending the bytes on. Whoever makes a Relay answers for the bytes saying
// no more and no less than the Result it was made with.
type Relay struct {
	bytes      []byte
	content    []Content // a copy: a change in place to the result's is seen
	structured any       // a deep copy
}

// NewRelay ties data to r, or returns nil when r cannot be tied: a block
// other than text, an error, metadata, or a structured value that is not
// made of JSON's own types (maps of any, slices of any, strings, float64,
// bools, nil).
func NewRelay(data []byte, r Result) *Relay {
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
	return &Relay{bytes: data, content: append([]Content(nil), r.Content...), structured: s}
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
