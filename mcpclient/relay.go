package mcpclient

import (
	"bytes"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/jsonstr"
	"github.com/toolgate/toolgate/tool"
)

// relayIn ties the bytes an upstream's result came as to res, what they
// were decoded into, when they say no more and no less than res: then a
// gateway that changes nothing sends them on (tool.Relay) instead of
// encoding res. It makes x (zero) that Relay and reports whether it could.
func relayIn(x *tool.Relay, r *mcp.CallToolResult, res tool.Result) bool {
	// DecodedJSON and DecodedPlain are the patched go-sdk's (patches 6, 21);
	// upstream's result keeps no bytes: res is encoded (the same JSON, slower).
	d, ok := any(r).(decoded)
	if !ok {
		return false
	}
	raw := d.DecodedJSON()
	if raw == nil {
		return false
	}
	structured, compact, ok := relayable(raw, r, d.DecodedPlain())
	if !ok || !x.Tie(raw, structured, res) {
		return false
	}
	if compact {
		x.MarkCompact()
	}
	return true
}

// decoded is the result of the patched go-sdk (third_party/go-sdk): the
// bytes it was decoded from, and how.
type decoded interface {
	DecodedJSON() []byte
	DecodedPlain() bool
}

// relayable reports whether raw, which the SDK decoded into r, holds only
// what the gateway maps to a Result and reads it one way: text blocks
// without metadata or annotations, a structured value, isError false, no
// other member; no key twice in any object (a reader that takes the first
// would see what the checks, which saw the last, did not), no key with an
// escape (so equal keys are equal bytes), no lone surrogate and no invalid
// UTF-8 (which the SDK replaces and a client may not), and no number that a
// float64 would not hold exactly (the checks see the float64). It also
// returns the bytes of the structuredContent value (nil when there is none,
// or null), which the SDK decoded into r.StructuredContent.
//
// When the SDK decoded r plain (plain: mcp.CallToolResult.DecodedPlain),
// raw is known to be valid UTF-8 without an escaped surrogate, and the
// result's members and its blocks' to be allowed ones, each once, without
// an escape: then none of that is looked for, and strings are passed over
// to their closing quote.
func relayable(raw []byte, r *mcp.CallToolResult, plain bool) (structured []byte, compact, ok bool) {
	if r.IsError || r.Meta != nil || r.InputRequests != nil || r.RequestState != "" || r.NeedsInput() || !plain && !utf8.Valid(raw) {
		return nil, false, false
	}
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); !ok || t.Meta != nil || t.Annotations != nil {
			return nil, false, false
		}
	}
	s := &scan{b: raw, plain: plain}
	s.space()
	if !s.object(0, topKeys) {
		return nil, false, false
	}
	s.space()
	if s.i != len(s.b) {
		return nil, false, false
	}
	if r.StructuredContent == nil {
		return nil, !s.spaced, true
	}
	return s.structured, !s.spaced, true
}

// The members a relayed result and its content blocks may have.
var (
	topKeys   = []string{"content", "structuredContent", "isError"}
	blockKeys = []string{"type", "text"}
)

const (
	maxRelayDepth = 64
	maxRelayKeys  = 64 // per object
	maxExactInt   = 15 // digits every float64 holds exactly
)

// scan reads valid JSON (the SDK decoded it) and refuses what relayable
// names; it never decodes a value.
type scan struct {
	b          []byte
	i          int
	plain      bool   // decoded plain: valid UTF-8, no escaped surrogate
	structured []byte // the top object's structuredContent value
	spaced     bool   // white space was read (outside the strings: space)
}

// space reads white space. Every byte outside a string that a scan reads
// is a token's or white space read here: a scan that read all of b
// without spaced set read bytes without white space outside their strings.
func (s *scan) space() {
	// White space is at most ' ': one compare passes over anything else.
	for s.i < len(s.b) && s.b[s.i] <= ' ' && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
		s.spaced = true
	}
}

func (s *scan) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// value reads any value; at depth 1 under the top object's "content" the
// array's objects may only have blockKeys.
func (s *scan) value(depth int) bool {
	s.space()
	if s.i >= len(s.b) || depth > maxRelayDepth {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(depth, nil)
	case c == '[':
		return s.array(depth, nil)
	case c == '"':
		_, _, ok := s.str()
		return ok
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.rest("true")
	case c == 'f':
		return s.rest("false")
	case c == 'n':
		return s.rest("null")
	}
	return false
}

// object reads an object; with allowed set, only those keys.
func (s *scan) object(depth int, allowed []string) bool {
	if !s.next('{') {
		return false
	}
	var seen [8][]byte // most objects have few keys: no allocation for them
	keys := seen[:0]
	if s.next('}') {
		return true
	}
	for {
		s.space()
		k, escaped, ok := s.str()
		if !ok {
			return false
		}
		// Read plain, the result's keys and its blocks' are known to be
		// allowed ones, each once, without an escape (DecodedPlain).
		if !s.plain || allowed == nil {
			if escaped || s.plain && bytes.IndexByte(k, '\\') >= 0 || len(keys) == maxRelayKeys {
				return false
			}
			for _, seen := range keys {
				if string(seen) == string(k) {
					return false
				}
			}
			keys = append(keys, k)
			if allowed != nil && !member(k, allowed) {
				return false
			}
		}
		if !s.next(':') {
			return false
		}
		switch {
		case allowed == nil:
			ok = s.value(depth + 1)
		case string(k) == "content":
			s.space()
			ok = s.rest("null") || s.array(depth+1, blockKeys)
		case string(k) == "structuredContent":
			s.space()
			start := s.i
			ok = s.value(depth + 1)
			s.structured = s.b[start:s.i]
		default:
			ok = s.value(depth + 1)
		}
		if !ok {
			return false
		}
		if s.next('}') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// rest reads lit if it comes next.
func (s *scan) rest(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// array reads an array; with blocks set, of objects with only those keys.
func (s *scan) array(depth int, blocks []string) bool {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '[' || depth > maxRelayDepth {
		return false
	}
	s.i++
	if s.next(']') {
		return true
	}
	for {
		var ok bool
		if blocks != nil {
			ok = s.object(depth+1, blocks)
		} else {
			ok = s.value(depth + 1)
		}
		if !ok {
			return false
		}
		if s.next(']') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// str reads a string: its bytes between the quotes and whether they hold
// an escape (when plain, not told: a key is searched for one, a value need
// not be); false for an escaped surrogate. It finds the quotes and
// backslashes with bytes.IndexByte: the bytes are valid JSON (the SDK
// decoded them), so a string holds no control byte.
func (s *scan) str() (body []byte, escaped, ok bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, false
	}
	start := s.i + 1
	if s.plain {
		end := jsonstr.End(s.b, start)
		if end == len(s.b) {
			return nil, false, false
		}
		s.i = end + 1
		return s.b[start:end], false, true
	}
	end := -1 // the next quote at or after i
	for i := start; ; {
		if end < i {
			q := bytes.IndexByte(s.b[i:], '"')
			if q < 0 {
				return nil, false, false
			}
			end = i + q
		}
		e := bytes.IndexByte(s.b[i:end], '\\')
		if e < 0 {
			s.i = end + 1
			return s.b[start:end], escaped, true
		}
		escaped = true
		i += e + 1 // the escaped byte
		if i >= len(s.b) {
			return nil, false, false
		}
		if s.b[i] == 'u' {
			if len(s.b)-i < 5 {
				return nil, false, false
			}
			if s.b[i+1]|0x20 == 'd' && s.b[i+2]|0x20 >= '8' {
				return nil, false, false // a surrogate (d800-dfff): the SDK may read a lone one as U+FFFD
			}
			i += 4
		}
		i++
	}
}

// number reads an integer of at most maxExactInt digits.
func (s *scan) number() bool {
	if s.b[s.i] == '-' {
		s.i++
	}
	digits := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		digits++
	}
	if digits == 0 || digits > maxExactInt || s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return false
	}
	return true
}

func member(k []byte, set []string) bool {
	for _, m := range set {
		if string(k) == m {
			return true
		}
	}
	return false
}
