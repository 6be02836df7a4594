// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package json

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
)

// PATCH(toolgate): patches 11 and 12. A Plain reads JSON in one pass that
// checks JSON's grammar as it goes (structure, strings without control
// bytes, escapes, numbers), for a decoder of the values it knows (a
// PlainUnmarshaler). Each method reports false for what is not valid JSON,
// and for what the decoder leaves to segmentio's (see String, Value); a
// value it reads is one Unmarshal finds valid, decoded as Unmarshal decodes
// it.
type Plain struct {
	b []byte
	i int
	// PATCH(toolgate): patch 20 (KeptString). Patch 40: an array in the
	// Plain and the count of those kept (was a slice grown by append:
	// an allocation of each Plain that kept a string).
	kept  [maxKept]kept
	nkept int
	// PATCH(toolgate): patch 39. wide is the OR of the bytes of the
	// strings skipString read (patch 40: exactly those): its high bits are
	// clear when those bytes are all ASCII.
	// ascii is set for a Plain of bytes Skip found valid and all ASCII
	// (NewASCIIPlain): str then does not check its runs again.
	wide  uint64
	ascii bool
}

// PATCH(toolgate): patch 20. kept is a string KeptString read: its bytes
// between the quotes and the string they decode to.
type kept struct {
	body []byte
	s    string
}

// maxKept bounds the strings a Plain keeps.
const maxKept = 4

// MaxPlainDepth bounds the nesting a Plain reads (Value, Skip), far below
// Unmarshal's depth limit.
const MaxPlainDepth = 64

// NewPlain reads data.
func NewPlain(data []byte) *Plain { return &Plain{b: data} }

// PATCH(toolgate): patch 39. NewASCIIPlain reads data, which is (or lies
// inside) a value a Plain's Skip read whole and found all ASCII (ASCII):
// its strings hold no control byte (Skip refuses one) and no invalid UTF-8
// (ASCII is valid UTF-8), so String does not check their runs again. It
// reads, and reports, what NewPlain(data) does; on any other data it may
// accept a string with a control byte or invalid UTF-8.
func NewASCIIPlain(data []byte) *Plain { return &Plain{b: data, ascii: true} }

// PATCH(toolgate): patch 39. ASCII reports whether every byte of the
// strings this Plain's Skip read (and so, when Skip read a value whole, of
// the value: its other bytes are JSON's ASCII grammar) is below 0x80.
func (p *Plain) ASCII() bool { return p.wide&hi8 == 0 }

// Offset is how far the Plain has read.
func (p *Plain) Offset() int { return p.i }

// Bytes returns what it read from start (an Offset) on.
func (p *Plain) Bytes(start int) []byte { return p.b[start:p.i] }

// Peek returns the next byte, or 0 at the end.
func (p *Plain) Peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// End reports whether only white space is left.
func (p *Plain) End() bool {
	p.Space()
	return p.i == len(p.b)
}

// Space skips white space.
//
// PATCH(toolgate): patch 40. A byte above ' ' (what comes next in a
// message written compact) is turned away with one compare, before the
// four (~280 calls a relayed call, 2.8 K instructions).
func (p *Plain) Space() {
	for p.i < len(p.b) {
		if c := p.b[p.i]; c > ' ' || c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return
		}
		p.i++
	}
}

// Next reads c if it comes next.
func (p *Plain) Next(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// Literal reads lit if it comes next.
func (p *Plain) Literal(lit string) bool {
	if bytes.HasPrefix(p.b[p.i:], []byte(lit)) {
		p.i += len(lit)
		return true
	}
	return false
}

// Object reads an object whose keys have no escape, calling member with
// each key to read its value (with the white space before it skipped).
func (p *Plain) Object(member func(key string) bool) bool {
	p.Space()
	if !p.Next('{') {
		return false
	}
	p.Space()
	if p.Next('}') {
		return true
	}
	for {
		p.Space()
		if !p.Next('"') {
			return false
		}
		// PATCH(toolgate): patch 40. A key whose quote is among its first
		// 16 bytes, nothing before it a backslash, a quote or a control
		// byte (stops), is found from those words, without the two
		// IndexByte calls.
		j := shortString(p.b, p.i)
		if j < 0 {
			j = bytes.IndexByte(p.b[p.i:], '"')
			if j < 0 {
				return false
			}
			// A key with an escape is refused; one with a control byte, which
			// JSON does not allow, is the member's to refuse (a key it knows
			// has none).
			if bytes.IndexByte(p.b[p.i:p.i+j], '\\') >= 0 {
				return false
			}
		}
		key := p.b[p.i : p.i+j]
		p.i += j + 1
		p.Space()
		if !p.Next(':') {
			return false
		}
		p.Space()
		if !member(keyString(key)) { // PATCH(toolgate): patch 33
			return false
		}
		p.Space()
		if p.Next('}') {
			return true
		}
		if !p.Next(',') {
			return false
		}
	}
}

// Value reads any value as Unmarshal decodes it into an any.
func (p *Plain) Value(depth int) (any, bool) {
	if p.i >= len(p.b) || depth > MaxPlainDepth {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		m := make(map[string]any)
		p.Space()
		if p.Next('}') {
			return m, true
		}
		for {
			p.Space()
			k, ok := p.String()
			if !ok {
				return nil, false
			}
			p.Space()
			if !p.Next(':') {
				return nil, false
			}
			p.Space()
			if m[k], ok = p.Value(depth + 1); !ok {
				return nil, false
			}
			p.Space()
			if p.Next('}') {
				return m, true
			}
			if !p.Next(',') {
				return nil, false
			}
		}
	case c == '[':
		p.i++
		a := []any{}
		p.Space()
		if p.Next(']') {
			return a, true
		}
		for {
			p.Space()
			v, ok := p.Value(depth + 1)
			if !ok {
				return nil, false
			}
			a = append(a, v)
			p.Space()
			if p.Next(']') {
				return a, true
			}
			if !p.Next(',') {
				return nil, false
			}
		}
	case c == '"':
		s, i, ok := p.str() // PATCH(toolgate): patch 33
		if i >= 0 {
			return commonValues[i], true
		}
		return s, ok
	case c == 't' && p.Literal("true"):
		return true, true
	case c == 'f' && p.Literal("false"):
		return false, true
	case c == 'n' && p.Literal("null"):
		return nil, true
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		if !p.Number() {
			return nil, false
		}
		f, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
		return f, err == nil
	}
	return nil, false
}

// Number reads a number as JSON's grammar has it:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *Plain) Number() bool {
	p.Next('-')
	if !p.Next('0') && !p.digits() {
		return false
	}
	if p.Next('.') && !p.digits() {
		return false
	}
	if p.Next('e') || p.Next('E') {
		if !p.Next('+') {
			p.Next('-')
		}
		return p.digits()
	}
	return true
}

// digits reads one digit or more.
func (p *Plain) digits() bool {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

// String reads a string and unescapes it, copying each run between
// escapes whole; a control byte (which JSON does not allow in a string),
// invalid UTF-8 and an escaped surrogate (which segmentio replaces) are
// refused.
func (p *Plain) String() (string, bool) {
	s, _, ok := p.str()
	return s, ok
}

// str is String, and the index in commonStrings of the string it read
// when it is one of them (else -1). PATCH(toolgate): patch 33.
func (p *Plain) str() (string, int, bool) {
	if !p.Next('"') {
		return "", -1, false
	}
	// PATCH(toolgate): patch 20. The bytes of a kept string followed by a
	// quote are read as they were read then: they decode to the same
	// string, and that quote ends it.
	for _, k := range p.kept[:p.nkept] {
		if end := p.i + len(k.body); end < len(p.b) && p.b[end] == '"' && string(p.b[p.i:end]) == string(k.body) {
			p.i = end + 1
			return k.s, -1, true
		}
	}
	// PATCH(toolgate): patch 38. A run ends at the next backslash or
	// quote, found with bytes.IndexByte (which the runtime vectorizes; the
	// next quote once, and again only after an escaped one), and is
	// checked by plainRun 8 bytes at a time.
	var s strings.Builder // only for a string with an escape
	b := p.b
	for start, q := p.i, -1; ; {
		if q < start { // the next quote, at or after start
			k := bytes.IndexByte(b[start:], '"')
			if k < 0 {
				return "", -1, false
			}
			q = start + k
		}
		i := q
		if e := bytes.IndexByte(b[start:q], '\\'); e >= 0 {
			i = start + e
		}
		run := b[start:i]
		if !p.ascii && !plainRun(run) { // PATCH(toolgate): patch 39
			return "", -1, false
		}
		if i == q {
			p.i = i + 1
			if s.Cap() == 0 {
				if i := commonAt(run); i >= 0 { // PATCH(toolgate): patch 33
					return commonStrings[i], i, true
				}
				return string(run), -1, true
			}
			s.Write(run)
			return s.String(), -1, true
		}
		if s.Cap() == 0 { // room for the string up to the next quote
			s.Grow(q - start + 1)
		}
		s.Write(run)
		if i+1 >= len(b) {
			return "", -1, false
		}
		switch e := b[i+1]; e {
		case '"', '\\', '/':
			s.WriteByte(e)
		case 'b':
			s.WriteByte('\b')
		case 'f':
			s.WriteByte('\f')
		case 'n':
			s.WriteByte('\n')
		case 'r':
			s.WriteByte('\r')
		case 't':
			s.WriteByte('\t')
		case 'u':
			if i+6 > len(b) {
				return "", -1, false
			}
			u, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
			if err != nil || u >= 0xd800 && u < 0xe000 {
				return "", -1, false
			}
			s.WriteRune(rune(u))
			i += 4
		default:
			return "", -1, false
		}
		start = i + 2
	}
}

// PATCH(toolgate): patch 20. KeptString reads a string as String does and,
// for the first maxKept strings it reads, keeps it: a later String of the
// same bytes returns it without reading them again (a tool's result often
// repeats its text in its structured content).
func (p *Plain) KeptString() (string, bool) {
	start := p.i
	s, ok := p.String()
	if ok && p.nkept < maxKept {
		p.kept[p.nkept] = kept{body: p.b[start+1 : p.i-1], s: s}
		p.nkept++
	}
	return s, ok
}

// Skip reads any value without decoding it and returns its bytes.
func (p *Plain) Skip(depth int) ([]byte, bool) {
	start := p.i
	if p.i >= len(p.b) || depth > MaxPlainDepth {
		return nil, false
	}
	ok := false
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		ok = true
		p.Space()
		if p.Next('}') {
			break
		}
		for ok {
			p.Space()
			_, ok = p.skipString()
			p.Space()
			ok = ok && p.Next(':')
			if ok {
				p.Space()
				_, ok = p.Skip(depth + 1)
			}
			p.Space()
			if ok && p.Next('}') {
				break
			}
			ok = ok && p.Next(',')
		}
	case c == '[':
		p.i++
		ok = true
		p.Space()
		if p.Next(']') {
			break
		}
		for ok {
			p.Space()
			_, ok = p.Skip(depth + 1)
			p.Space()
			if ok && p.Next(']') {
				break
			}
			ok = ok && p.Next(',')
		}
	case c == '"':
		_, ok = p.skipString()
	case c == 't':
		ok = p.Literal("true")
	case c == 'f':
		ok = p.Literal("false")
	case c == 'n':
		ok = p.Literal("null")
	case c == '-' || c >= '0' && c <= '9':
		ok = p.Number()
	}
	if !ok {
		return nil, false
	}
	return p.b[start:p.i], true
}

// skipString reads a string without unescaping it and returns its bytes
// between the quotes; a control byte or an escape JSON does not have is
// refused (invalid UTF-8 is valid JSON).
//
// PATCH(toolgate): patch 40. A string whose closing quote is among its
// first 8 bytes, with nothing before it that stops (stops), is read from
// that one word. Else its closing quote is found with bytes.IndexByte
// (which the runtime vectorizes: once, and again only after an escaped
// quote), and its escapes likewise, each checked as before; then its bytes
// up to that quote are checked for control bytes (an escape's bytes are
// none) 32 bytes at a time (runBits). Patch 38's 16-byte turn looked for
// all three stops in each word, at ~60 instructions for 16 bytes: 11.9 K
// instructions a relayed call. wide then holds exactly the string's bytes
// (patch 39's mark).
func (p *Plain) skipString() ([]byte, bool) {
	if !p.Next('"') {
		return nil, false
	}
	b := p.b
	start := p.i
	if start+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[start:])
		if m := stops(x); m != 0 {
			if k := bits.TrailingZeros64(m) >> 3; b[start+k] == '"' {
				p.i, p.wide = start+k+1, p.wide|x&(1<<(8*k)-1)
				return b[start : start+k], true
			}
		}
	}
	q := -1
	for i := start; ; {
		if q < i { // the next quote, at or after i
			k := bytes.IndexByte(b[i:], '"')
			if k < 0 {
				return nil, false
			}
			q = i + k
		}
		e := bytes.IndexByte(b[i:q], '\\')
		if e < 0 {
			break
		}
		e += i // e < q: b[e+1] is in b
		switch c := b[e+1]; {
		case shortEscape[c]:
			i = e + 2
		case c == 'u':
			if e+6 > len(b) {
				return nil, false
			}
			for _, h := range b[e+2 : e+6] {
				if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
					return nil, false
				}
			}
			i = e + 6
		default:
			return nil, false
		}
	}
	s := b[start:q]
	wide, ctl := runBits(s)
	if ctl&hi8 != 0 {
		return nil, false
	}
	p.i, p.wide = q+1, p.wide|wide
	return s, true
}

// PATCH(toolgate): patch 40. shortString returns the index, from i, of
// the quote that ends the string whose bytes start at i when it is among
// the 16 bytes from i (the 8 when fewer are left) and no byte before it
// is a backslash or a control byte (the first stop, stops); else -1.
func shortString(b []byte, i int) int {
	if i+8 > len(b) {
		return -1
	}
	k := 0
	m := stops(binary.LittleEndian.Uint64(b[i:]))
	if m == 0 && i+16 <= len(b) {
		k, m = 8, stops(binary.LittleEndian.Uint64(b[i+8:]))
	}
	if m == 0 {
		return -1
	}
	if k += bits.TrailingZeros64(m) >> 3; b[i+k] != '"' {
		return -1
	}
	return k
}

// PATCH(toolgate): patch 40. shortEscape holds the bytes that make a
// two-byte escape after a backslash.
var shortEscape = [256]bool{'"': true, '\\': true, '/': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

// PATCH(toolgate): patch 40. runBits returns the OR of run's bytes (in
// some byte of a word: its high bits are clear exactly when run is all
// ASCII) and a word whose high bits are not all clear exactly when run
// holds a byte below 0x20 (noControl's (x - 0x20*lo8) &^ x, ORed), 32
// bytes at a time, then 8 (the last word of a run of 8 or more that is not
// whole is the run's last 8 bytes).
func runBits(run []byte) (wide, ctl uint64) {
	i := 0
	for ; i+32 <= len(run); i += 32 {
		w := run[i : i+32]
		x0, x1 := binary.LittleEndian.Uint64(w), binary.LittleEndian.Uint64(w[8:])
		x2, x3 := binary.LittleEndian.Uint64(w[16:]), binary.LittleEndian.Uint64(w[24:])
		wide |= x0 | x1 | x2 | x3
		ctl |= (x0-0x20*lo8)&^x0 | (x1-0x20*lo8)&^x1 | (x2-0x20*lo8)&^x2 | (x3-0x20*lo8)&^x3
	}
	for ; i+8 <= len(run); i += 8 {
		x := binary.LittleEndian.Uint64(run[i : i+8])
		wide, ctl = wide|x, ctl|(x-0x20*lo8)&^x
	}
	if i == len(run) {
		return wide, ctl
	}
	if len(run) >= 8 {
		x := binary.LittleEndian.Uint64(run[len(run)-8:])
		return wide | x, ctl | (x-0x20*lo8)&^x
	}
	for ; i < len(run); i++ {
		c := uint64(run[i])
		wide |= c
		if c < 0x20 {
			ctl |= hi8
		}
	}
	return wide, ctl
}

// PATCH(toolgate): patch 38. noControl reports whether run holds no byte
// below 0x20. (x - 0x20*lo8) &^ x & hi8 marks the bytes of x below 0x20
// (and maybe bytes after the first such byte: not 0 exactly when there is
// one), 8 bytes at a time.
func noControl(run []byte) bool {
	i := 0
	for ; i+8 <= len(run); i += 8 {
		x := binary.LittleEndian.Uint64(run[i:])
		if (x-0x20*lo8)&^x&hi8 != 0 {
			return false
		}
	}
	for ; i < len(run); i++ {
		if run[i] < 0x20 {
			return false
		}
	}
	return true
}

// PATCH(toolgate): patch 38. plainRun reports whether run holds no byte
// below 0x20 and is valid UTF-8: 8 bytes at a time (the last word of a run
// of 8 or more that is not whole is the run's last 8 bytes), utf8.Valid
// only once a byte at or above 0x80 is met.
func plainRun(run []byte) bool {
	i := 0
	for ; i+8 <= len(run); i += 8 {
		x := binary.LittleEndian.Uint64(run[i:])
		if ((x-0x20*lo8)&^x|x)&hi8 != 0 {
			break
		}
	}
	if i < len(run) && i+8 > len(run) && len(run) >= 8 {
		x := binary.LittleEndian.Uint64(run[len(run)-8:])
		if ((x-0x20*lo8)&^x|x)&hi8 == 0 {
			return true
		}
	}
	for ; i < len(run); i++ {
		if c := run[i]; c < 0x20 {
			return false
		} else if c >= 0x80 {
			return noControl(run[i:]) && utf8.Valid(run[i:])
		}
	}
	return true
}

// PATCH(toolgate): the string scans (String, skipString) pass over 8 bytes
// at a time (SWAR: the bytes of a uint64 compared at once) up to the first
// that is a quote, a backslash or a control byte, and go on from it as
// they did byte by byte.
const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

// stops returns the high bit of each of the 8 bytes of x (the first at the
// bottom) that is '"', '\\' or below 0x20, and maybe of bytes after the
// first such byte; not 0 exactly when there is one, and its lowest bit is
// the first's. (v - lo8) &^ v & hi8 marks the bytes of v that are 0: a
// byte that is not 0 is marked only by a borrow, from a byte below it that
// is; (x - 0x20*lo8) &^ x & hi8 likewise marks the bytes below 0x20.
//
// PATCH(toolgate): patch 38. The high bit of each byte of q and bs is
// that of x ('"' and '\\' are below 0x80), so one &^ x does what &^ q,
// &^ bs and &^ x did.
func stops(x uint64) uint64 {
	q := x ^ ('"' * lo8)
	bs := x ^ ('\\' * lo8)
	return ((q - lo8) | (bs - lo8) | (x - 0x20*lo8)) &^ x & hi8
}

// PATCH(toolgate): patch 20. SkipValid reads a value the way Skip does,
// without checking it: the value must be one Skip has read already (as
// part of a larger value it read, so nested at most MaxPlainDepth deep).
// Then it ends where Skip ends, and the check would pass. Strings are
// passed over with bytes.IndexByte (a quote ends a string when an even
// number of backslashes comes right before it), the rest byte by byte.
func (p *Plain) SkipValid() []byte {
	start, b, i := p.i, p.b, p.i
	if i < len(b) && b[i] != '{' && b[i] != '[' && b[i] != '"' {
		// A number or literal: up to what ends it inside an object or array.
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
			i++
		}
		p.i = i
		return b[start:i]
	}
	for depth := 0; i < len(b); {
		switch b[i] {
		case '"':
			i = stringEnd(b, i+1)
		case '{', '[':
			depth++
			i++
		case '}', ']':
			depth--
			i++
		default:
			i++
			continue
		}
		if depth == 0 {
			break
		}
	}
	p.i = i
	return b[start:i]
}

// stringEnd returns the index after the quote that closes the string of
// valid JSON whose bytes start at i.
func stringEnd(b []byte, i int) int {
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return len(b)
		}
		i += q
		n := 0 // backslashes right before the quote
		for n < i && b[i-1-n] == '\\' {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// PATCH(toolgate): patch 33. The names and values MCP and JSON-RPC spell
// in every message (members, methods, the SEP-2575 _meta triple's keys,
// protocol versions): a string a Plain reads that spells one of them
// without an escape is this string, not a new copy of its bytes, and a
// Value of it this interface, not a new one holding it. Strings are
// immutable, so the same string is what a copy would be; nothing else
// changes (the Plain reads as far, and reports the same).
var commonStrings = [...]string{
	"jsonrpc", "2.0", "id", "method", "params", "result", "error", "code", "message", "data",
	"tools/call", "notifications/progress", "notifications/cancelled",
	"_meta", "name", "arguments", "progressToken", "content", "structuredContent", "isError",
	"type", "text", "resultType", "complete",
	"io.modelcontextprotocol/clientCapabilities", "io.modelcontextprotocol/clientInfo",
	"io.modelcontextprotocol/protocolVersion",
	"roots", "listChanged", "sampling", "elicitation", "experimental", "tools", "prompts",
	"resources", "logging", "completions", "subscribe", "tasks",
	"version", "title", "icons", "websiteUrl",
	"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28",
}

// commonSlots finds a common string by its length and its first and last
// two bytes, hashed (commonSlot, a multiply and a shift) into 256 slots,
// each empty or holding the one common string that hashes there, and
// commonIndex its index; commonAt then compares the bytes once. A string
// that is none of them is turned away by the lengths (an empty slot's is
// 0) or by that one compare, without hashing its bytes. No two common
// strings share a slot (valuesCommon panics if they would). commonValues
// holds each as an interface.
const commonMul = 0x9e377a39

var (
	commonSlots  [256]string
	commonIndex  [256]uint8
	commonValues = valuesCommon()
)

func commonSlot(n int, first, last2, last byte) uint8 {
	return uint8((uint32(n)<<24 | uint32(first)<<16 | uint32(last2)<<8 | uint32(last)) * commonMul >> 24)
}

func valuesCommon() []any {
	v := make([]any, len(commonStrings))
	for i, s := range commonStrings {
		v[i] = s
		h := commonSlot(len(s), s[0], s[len(s)-2], s[len(s)-1])
		if commonSlots[h] != "" {
			panic("json: common strings " + commonSlots[h] + " and " + s + " share a slot")
		}
		commonSlots[h], commonIndex[h] = s, uint8(i)
	}
	return v
}

// commonAt returns the index in commonStrings of the string b spells, or -1.
func commonAt(b []byte) int {
	n := len(b)
	if n < 2 {
		return -1
	}
	h := commonSlot(n, b[0], b[n-2], b[n-1])
	if string(b) != commonSlots[h] {
		return -1
	}
	return int(commonIndex[h])
}

// PATCH(toolgate): patch 38. Common is string(b), the common string (not
// a copy) when b spells one of MCP's and JSON-RPC's own names.
func Common(b []byte) string { return keyString(b) }

// keyString is string(key), the common string when key spells one.
func keyString(key []byte) string {
	if i := commonAt(key); i >= 0 {
		return commonStrings[i]
	}
	return string(key)
}
