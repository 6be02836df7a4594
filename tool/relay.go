package tool

// Relay is the bytes a gateway received a result as, tied to what they were
// decoded into: For gives them back only for a Result that says exactly
// that, so a stage that changes a result in any way (a redaction, a cut, a
// mark, metadata, an error) makes a gateway encode it again instead of
// sending the bytes on. Whoever makes a Relay answers for the bytes saying
// no more and no less than the Result it was made with, and for the
// structured bytes being the JSON text its structured value was decoded
// from.
//
// What the result said is kept as a record (its texts, its structured
// value's nodes), not as a copy of the result: a change in place to the
// result's content or structured value is seen, and the record of a result
// of a few blocks and a small value is made in the Relay's one allocation.
type Relay struct {
	bytes    []byte
	rawValue []byte   // the JSON text the structured value was decoded from
	texts    []string // each block's text (every block is a text block)
	shape    []node   // the structured value (see record)
	textBuf  [2]string
	shapeBuf [4]node
	compact  bool // no white space outside the bytes' strings (MarkCompact)
}

// node is one value of a structured value made of JSON's own types: what
// record keeps of it and same compares.
type node struct {
	kind  kind
	truth bool    // a bool's
	n     int     // a map's or slice's length: the nodes of its elements follow
	key   string  // the key it is under, when it is a map's element
	str   string  // a string's
	num   float64 // a number's
}

type kind uint8

const (
	kindNull kind = iota
	kindString
	kindNumber
	kindBool
	kindMap
	kindSlice
)

// NewRelay ties data to r, or returns nil when r cannot be tied: a block
// other than text, an error, metadata, or a structured value that is not
// made of JSON's own types (maps of any, slices of any, strings, float64,
// bools, nil). structured is the part of data r.Structured was decoded
// from (nil when r has none).
func NewRelay(data, structured []byte, r Result) *Relay {
	x := new(Relay)
	if !x.Tie(data, structured, r) {
		return nil
	}
	return x
}

// Tie makes x, a zero Relay, what NewRelay(data, structured, r) returns,
// and reports whether r could be tied (when not, x is not to be used). A
// caller that allocates x with other values (a gateway's result and its
// one content block) saves an allocation.
func (x *Relay) Tie(data, structured []byte, r Result) bool {
	if r.Error != nil || len(r.Meta) > 0 {
		return false
	}
	for _, c := range r.Content {
		if !plainText(c) {
			return false
		}
	}
	x.bytes, x.rawValue = data, structured
	x.texts = x.textBuf[:0]
	for _, c := range r.Content {
		x.texts = append(x.texts, c.Text)
	}
	x.shape = x.shapeBuf[:0]
	return x.record(r.Structured, "")
}

// MarkCompact records that x's bytes have no white space outside their
// strings: its caller read every byte of them (a gateway's scan of an
// upstream's result). A server then sends them without looking for white
// space to compact again (Compact).
func (x *Relay) MarkCompact() { x.compact = true }

// Compact reports whether MarkCompact was called on x (false for nil).
func (x *Relay) Compact() bool { return x != nil && x.compact }

// plainText reports whether c is a text block and nothing more: the only
// blocks a Relay ties.
func plainText(c Content) bool {
	return c.Type == "text" && c.Data == nil && c.MIMEType == "" && c.URI == ""
}

// For returns the bytes when r says exactly what they were decoded into.
func (x *Relay) For(r Result) ([]byte, bool) {
	if x == nil || r.Error != nil || len(r.Meta) > 0 || len(r.Content) != len(x.texts) {
		return nil, false
	}
	for i, c := range r.Content {
		if !plainText(c) || c.Text != x.texts[i] {
			return nil, false
		}
	}
	if rest, ok := same(r.Structured, x.shape); !ok || len(rest) != 0 {
		return nil, false
	}
	return x.bytes, true
}

// StructuredFor returns the JSON text the structured value was decoded
// from, when v is still what it was decoded into (a stage that reads a
// result's structured value as JSON may read these bytes instead of
// encoding v).
func (x *Relay) StructuredFor(v any) ([]byte, bool) {
	if x == nil || x.rawValue == nil {
		return nil, false
	}
	if rest, ok := same(v, x.shape); !ok || len(rest) != 0 {
		return nil, false
	}
	return x.rawValue, true
}

// record appends the nodes of v, a value made of JSON's own types, to
// x.shape, in pre-order: a map's or a slice's node, then its elements'
// (a map's in the order range gave them, each node with its key). It
// reports false for a value of another type. Nothing of v's maps and
// slices is kept, only their lengths, keys and the values of their
// leaves (which are immutable): a change in place to v is a change to what
// same compares with.
func (x *Relay) record(v any, key string) bool {
	switch v := v.(type) {
	case nil:
		x.shape = append(x.shape, node{kind: kindNull, key: key})
	case string:
		x.shape = append(x.shape, node{kind: kindString, key: key, str: v})
	case float64:
		x.shape = append(x.shape, node{kind: kindNumber, key: key, num: v})
	case bool:
		x.shape = append(x.shape, node{kind: kindBool, key: key, truth: v})
	case map[string]any:
		x.shape = append(x.shape, node{kind: kindMap, key: key, n: len(v)})
		for k, e := range v {
			if !x.record(e, k) {
				return false
			}
		}
	case []any:
		x.shape = append(x.shape, node{kind: kindSlice, key: key, n: len(v)})
		for _, e := range v {
			if !x.record(e, "") {
				return false
			}
		}
	default:
		return false
	}
	return true
}

// same reports whether v is the value whose nodes record wrote first in
// s, and returns the nodes that follow them. A map is the same when it has
// as many keys as were recorded and each recorded key, with the same value
// under it (the recorded keys are distinct: so are the key sets); a
// slice, when it has as many elements and each is the same in its place.
// Values compare as == does (a float64 NaN is no number's same; JSON has
// none).
func same(v any, s []node) ([]node, bool) {
	if len(s) == 0 {
		return nil, false
	}
	n := s[0]
	s = s[1:]
	switch n.kind {
	case kindNull:
		return s, v == nil
	case kindString:
		t, ok := v.(string)
		return s, ok && t == n.str
	case kindNumber:
		f, ok := v.(float64)
		return s, ok && f == n.num
	case kindBool:
		t, ok := v.(bool)
		return s, ok && t == n.truth
	case kindMap:
		m, ok := v.(map[string]any)
		if !ok || len(m) != n.n {
			return nil, false
		}
		for range n.n {
			if len(s) == 0 {
				return nil, false
			}
			e, ok := m[s[0].key]
			if !ok {
				return nil, false
			}
			if s, ok = same(e, s); !ok {
				return nil, false
			}
		}
		return s, true
	case kindSlice:
		a, ok := v.([]any)
		if !ok || len(a) != n.n {
			return nil, false
		}
		for _, e := range a {
			if s, ok = same(e, s); !ok {
				return nil, false
			}
		}
		return s, true
	}
	return nil, false
}
