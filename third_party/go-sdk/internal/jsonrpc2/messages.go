// Copyright 2018 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by an MIT-style
// license that can be found in the LICENSE file.

package jsonrpc2

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	internaljson "github.com/modelcontextprotocol/go-sdk/internal/json"
)

// ID is a Request identifier, which is defined by the spec to be a string, integer, or null.
// https://www.jsonrpc.org/specification#request_object
type ID struct {
	value any
}

// MakeID coerces the given Go value to an ID. The value should be the
// default JSON marshaling of a Request identifier: nil, float64, or string.
//
// Returns an error if the value type was not a valid Request ID type.
//
// TODO: ID can't be a json.Marshaler/Unmarshaler, because we want to omitzero.
// Simplify this package by making ID json serializable once we can rely on
// omitzero.
func MakeID(v any) (ID, error) {
	switch v := v.(type) {
	case nil:
		return ID{}, nil
	case float64:
		return Int64ID(int64(v)), nil
	case string:
		return StringID(v), nil
	}
	return ID{}, fmt.Errorf("%w: invalid ID type %T", ErrParse, v)
}

// Message is the interface to all jsonrpc2 message types.
// They share no common functionality, but are a closed set of concrete types
// that are allowed to implement this interface. The message types are *Request
// and *Response.
type Message interface {
	// marshal builds the wire form from the API form.
	// It is private, which makes the set of Message implementations closed.
	marshal(to *wireCombined)
}

// Request is a Message sent to a peer to request behavior.
// If it has an ID it is a call, otherwise it is a notification.
type Request struct {
	// ID of this request, used to tie the Response back to the request.
	// This will be nil for notifications.
	ID ID
	// Method is a string containing the method name to invoke.
	Method string
	// Params is either a struct or an array with the parameters of the method.
	Params json.RawMessage
	// Extra is additional information that does not appear on the wire. It can be
	// used to pass information from the application to the underlying transport.
	Extra any
}

// Response is a Message used as a reply to a call Request.
// It will have the same ID as the call it is a response to.
type Response struct {
	// result is the content of the response.
	Result json.RawMessage
	// err is set only if the call failed.
	Error error
	// id of the request this is a response to.
	ID ID
	// Extra is additional information that does not appear on the wire. It can be
	// used to pass information from the underlying transport to the application.
	Extra any
}

// PATCH(toolgate): Compact is a result already encoded as compact, valid
// JSON (the output of json.Marshal), which NewResponse takes as is and
// EncodeMessage writes as it is, instead of compacting it again (patches 2
// and 9). Its MarshalJSON returns it unchanged.
type Compact []byte

// PATCH(toolgate): compactResult is the Extra of a Response that NewResponse
// made of a Compact: EncodeMessage writes its Result as it is (patch 9). Of
// a Framed, frame is its buffer, which encodeFast writes the response in
// (patch 22).
type compactResult struct {
	frame []byte
	own   bool // PATCH(toolgate): patch 31: an OwnFramed's
}

// PATCH(toolgate): patch 31. OwnFramed is a Framed whose buffer the
// response may give back once it is written (FrameOf): nothing else holds
// it. Only a FreeingWriter's WriteFree gives it back, which a Connection
// calls when nothing holds the response after it.
type OwnFramed []byte

// PATCH(toolgate): Framed is a Compact result laid in a buffer after
// FrameRoom bytes, with room for two more after it: the result is
// Framed[FrameRoom:]. EncodeMessage writes a response to an integer id
// around it, in place (the head in the room before, its closing brace
// after), instead of copying it into a new slice (patch 22). The caller
// must not change the buffer or use it for anything else once the result
// is returned.
type Framed []byte

// PATCH(toolgate): patch 31. FrameOf returns the buffer of msg's
// OwnFramed result (NewResponse's), when msg is a response whose Result is
// still the result in it; else nil.
func FrameOf(msg Message) []byte {
	m, ok := msg.(*Response)
	if !ok {
		return nil
	}
	c, _ := m.Extra.(compactResult)
	if f := c.frame; c.own && f != nil && len(m.Result) == len(f)-FrameRoom && len(m.Result) > 0 && &m.Result[0] == &f[FrameRoom] {
		return f
	}
	return nil
}

// PATCH(toolgate): FrameRoom is the room a Framed result leaves before it:
// the longest head encodeFast writes in front of a result.
const FrameRoom = len(`{"jsonrpc":"2.0","id":-9223372036854775808,"result":`)

// MarshalJSON implements [json.Marshaler].
func (c Compact) MarshalJSON() ([]byte, error) { return c, nil }

// MarshalJSON implements [json.Marshaler]: the result.
func (f Framed) MarshalJSON() ([]byte, error) { return f[min(len(f), FrameRoom):], nil }

// StringID creates a new string request identifier.
func StringID(s string) ID { return ID{value: s} }

// Int64ID creates a new integer request identifier.
func Int64ID(i int64) ID { return ID{value: i} }

// PATCH(toolgate): patch 40. int64IDAt is Int64ID(*n) whose value holds n
// itself rather than a new copy of *n (converting an int64 of 256 or more
// to an interface allocates 8 bytes): n is a field of an object allocated
// for the message anyway, set before and never changed after (an
// interface's value is never written through). An interface's data word
// is a pointer to its value for every type that is not pointer-shaped
// (int64 is not), which the collector follows as it does any pointer into
// an object, so n's object lives as long as the ID; the ID's type, value,
// ==, hash and Raw are those of Int64ID(*n) (TestInt64IDAt).
func int64IDAt(n *int64) ID {
	v := any(int64(0)) // the runtime's static zero: no allocation
	(*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1] = unsafe.Pointer(n)
	return ID{value: v}
}

// IsValid returns true if the ID is a valid identifier.
// The default value for ID will return false.
func (id ID) IsValid() bool { return id.value != nil }

// Raw returns the underlying value of the ID.
func (id ID) Raw() any { return id.value }

// NewNotification constructs a new Notification message for the supplied
// method and parameters.
func NewNotification(method string, params any) (*Request, error) {
	p, merr := marshalToRaw(params)
	return &Request{Method: method, Params: p}, merr
}

// NewCall constructs a new Call message for the supplied ID, method and
// parameters.
//
// PATCH(toolgate): patch 17. The bytes of the returned request's Params
// must not be changed in place: they are written as they are, unchecked,
// as long as the slice is the one NewCall made (same first byte, same
// length). Replace Params instead (a new slice is compacted and checked).
func NewCall(id ID, method string, params any) (*Request, error) {
	p, merr := marshalToRaw(params)
	if merr == nil && len(p) > 0 { // PATCH(toolgate): patch 17
		// PATCH(toolgate): patch 38. The mark is allocated with the
		// request, and Extra points at it (a pointer in an interface
		// needs no allocation of its own).
		rm := &markedRequest{Request: Request{ID: id, Method: method, Params: p}, mark: compactParams{sliceMark: markOf(p)}}
		rm.Extra = &rm.mark
		return &rm.Request, nil
	}
	return &Request{ID: id, Method: method, Params: p}, merr
}

// PATCH(toolgate): patch 38. fill makes rm NewCall(id, method, p) of a
// Compact p that is not empty (marshalToRaw returns it as it is) and
// returns its request. Patch 39: p is the end of frame when frame is not
// nil (CallFramed); Params then is p without the capacity after it. Patch
// 40: Connection.call's rm is allocated with its call.
func (rm *markedRequest) fill(id ID, method string, p Compact, frame []byte) *Request {
	if frame != nil {
		p = p[:len(p):len(p)]
	}
	*rm = markedRequest{Request: Request{ID: id, Method: method, Params: json.RawMessage(p)}, mark: compactParams{markOf(p), frame}}
	rm.Extra = &rm.mark
	return &rm.Request
}

// PATCH(toolgate): patch 38. markedRequest is a Request NewCall made and
// the mark its Extra points at, in one allocation.
type markedRequest struct {
	Request
	mark compactParams
}

// PATCH(toolgate): patch 17. compactParams is the Extra of a Request that
// NewCall made: its Params, as long as they are still these bytes (the
// first's address and the length), are marshalToRaw's, compact and valid
// JSON (an encoder writes no white space, and compacts what a MarshalJSON
// returns; a Compact value is so by its contract), which encodeFast writes
// as they are instead of compacting them again. Patch 39: frame is
// CallFramed's buffer, whose end the params are.
type compactParams struct {
	sliceMark
	frame []byte
}

// PATCH(toolgate): patches 17 and 29. sliceMark marks a slice by its first
// byte's address and its length: a message's Params or Result are still
// the marked bytes as long as both are the same.
type sliceMark struct {
	first *byte
	n     int
}

// markOf is b's mark; b is not empty.
func markOf(b []byte) sliceMark { return sliceMark{&b[0], len(b)} }

// marks reports whether b is the slice m marked.
func (m sliceMark) marks(b []byte) bool { return len(b) == m.n && m.n > 0 && &b[0] == m.first }

func (msg *Request) IsCall() bool { return msg.ID.IsValid() }

func (msg *Request) marshal(to *wireCombined) {
	to.ID = msg.ID.value
	to.Method = msg.Method
	to.Params = msg.Params
}

// NewResponse constructs a new Response message that is a reply to the
// supplied. If err is set result may be ignored.
func NewResponse(id ID, result any, rerr error) (*Response, error) {
	resp := new(Response)
	return resp, resp.set(id, result, rerr) // PATCH(toolgate): patch 40
}

// PATCH(toolgate): patch 40. set makes resp what NewResponse(id, result,
// rerr) returns, and returns its error (respond's resp is allocated with
// its request).
func (resp *Response) set(id ID, result any, rerr error) error {
	own := false
	if f, ok := result.(OwnFramed); ok { // PATCH(toolgate): patch 31
		result, own = Framed(f), true
	}
	if f, ok := result.(Framed); ok { // PATCH(toolgate): patch 22
		if len(f) > FrameRoom && cap(f)-len(f) >= 2 {
			*resp = Response{ID: id, Result: json.RawMessage(f[FrameRoom:]), Error: rerr, Extra: compactResult{f, own}}
			return nil
		}
		result = Compact(f[min(len(f), FrameRoom):]) // no room: copied as a Compact
	}
	r, merr := marshalToRaw(result)
	*resp = Response{ID: id, Result: r, Error: rerr}
	if c, ok := result.(Compact); ok && len(c) > 0 { // PATCH(toolgate): patch 9
		resp.Extra = compactResult{}
	}
	return merr
}

func (msg *Response) marshal(to *wireCombined) {
	to.ID = msg.ID.value
	to.Error = toWireError(msg.Error)
	to.Result = msg.Result
}

func toWireError(err error) *WireError {
	if err == nil {
		// no error, the response is complete
		return nil
	}
	if err, ok := err.(*WireError); ok {
		// already a wire error, just use it
		return err
	}
	result := &WireError{Message: err.Error()}
	var wrapped *WireError
	if errors.As(err, &wrapped) {
		// if we wrapped a wire error, keep the code from the wrapped error
		// but the message from the outer error
		result.Code = wrapped.Code
	}
	return result
}

func EncodeMessage(msg Message) ([]byte, error) {
	if data, ok := encodeFast(msg); ok { // PATCH(toolgate)
		return data, nil
	}
	wire := wireCombined{VersionTag: wireVersion}
	msg.marshal(&wire)
	data, err := jsonMarshal(&wire)
	if err != nil {
		return nil, fmt.Errorf("marshaling jsonrpc message: %w", err)
	}
	return data, nil
}

// PATCH(toolgate): encodeFast writes a call with an integer ID and
// parameters, or a successful response to one with a result, in the bytes
// the encoder would write for it: the parameters or result compacted
// straight into the message instead of through an encoder of wireCombined
// and the copies it makes. It reports false for any other message, a method
// name the encoder would escape, and parameters or a result that are not
// valid JSON (so that the error is the encoder's). The slice has room for
// the newline a stream transport appends.
func encodeFast(msg Message) ([]byte, bool) {
	var (
		id          any
		method, key string
		raw         json.RawMessage
		compact     bool
	)
	switch m := msg.(type) {
	case *Request:
		if !plainMethod(m.Method) {
			return nil, false
		}
		id, method, key, raw = m.ID.value, m.Method, `,"params":`, m.Params
		if c, ok := m.Extra.(*compactParams); ok && c.marks(raw) { // PATCH(toolgate): patch 38 (a pointer)
			compact = true // PATCH(toolgate): patch 17
			// PATCH(toolgate): patch 39. Params at the end of CallFramed's
			// buffer: the head written in the room before them, the brace
			// after (the buffer has room for it and a newline).
			if f, n, ok := c.frame, len(raw), false; f != nil && len(f) > n && &f[len(f)-n] == &raw[0] && cap(f)-len(f) >= 2 {
				var num int64
				if num, ok = id.(int64); ok {
					var digits [20]byte
					d := strconv.AppendInt(digits[:0], num, 10)
					start := len(f) - n - (len(`{"jsonrpc":"2.0","id":,"method":"","params":`) + len(d) + len(method))
					if start >= 0 {
						b := append(f[start:start], `{"jsonrpc":"2.0","id":`...)
						b = append(append(b, d...), `,"method":"`...)
						b = append(append(b, method...), `","params":`...)
						return append(f[start:], '}'), true
					}
				}
			}
		}
	case *Response:
		if m.Error != nil {
			return nil, false
		}
		var c compactResult
		c, compact = m.Extra.(compactResult)
		id, key, raw = m.ID.value, `,"result":`, m.Result
		if f := c.frame; f != nil && len(raw) == len(f)-FrameRoom && &raw[0] == &f[FrameRoom] { // PATCH(toolgate): patch 22
			if n, ok := id.(int64); ok {
				var head [FrameRoom]byte
				h := append(strconv.AppendInt(append(head[:0], `{"jsonrpc":"2.0","id":`...), n, 10), key...)
				start := FrameRoom - len(h)
				copy(f[start:], h)
				return append(f[start:], '}'), true
			}
		}
	default:
		return nil, false
	}
	n, ok := id.(int64)
	if !ok || len(raw) == 0 {
		return nil, false
	}
	const head = `{"jsonrpc":"2.0","id":`
	size := len(head) + 20 + len(`,"method":""`) + len(method) + len(key) + len(raw) + 2
	if compact { // PATCH(toolgate): patch 38, appended without a bytes.Buffer
		b := strconv.AppendInt(append(make([]byte, 0, size), head...), n, 10)
		if method != "" {
			b = append(append(append(b, `,"method":"`...), method...), '"')
		}
		return append(append(append(b, key...), raw...), '}'), true
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	buf.WriteString(head)
	buf.Write(strconv.AppendInt(buf.AvailableBuffer(), n, 10))
	if method != "" {
		buf.WriteString(`,"method":"`)
		buf.WriteString(method)
		buf.WriteByte('"')
	}
	buf.WriteString(key)
	if json.Compact(buf, raw) != nil { // compact ones were written above (patches 9, 38)
		return nil, false
	}
	buf.WriteByte('}')
	return buf.Bytes(), true
}

// plainMethod reports whether the encoder writes method as it is between
// quotes: printable ASCII but the quote and the backslash, and not empty.
// PATCH(toolgate): patch 20 asks it of a frame's bytes too.
func plainMethod[T ~string | ~[]byte](method T) bool {
	for i := 0; i < len(method); i++ {
		if c := method[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return len(method) > 0
}

// EncodeIndent is like EncodeMessage, but honors indents.
// TODO(rfindley): refactor so that this concern is handled independently.
// Perhaps we should pass in a json.Encoder?
func EncodeIndent(msg Message, prefix, indent string) ([]byte, error) {
	wire := wireCombined{VersionTag: wireVersion}
	msg.marshal(&wire)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, indent)
	if err := enc.Encode(&wire); err != nil {
		return nil, fmt.Errorf("marshaling jsonrpc message: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// wireDecode is the decode form of [wireCombined]. Method is a [json.RawMessage]
// so we can tell whether the "method" key was present on the wire, including
// when its value is the empty string (see go-sdk#976).
type wireDecode struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *WireError      `json:"error,omitempty"`

	// PATCH(toolgate): patch 38. plain sets num, and isNum, for an
	// integer id rather than ID (which would be float64(num), boxed).
	num   int64
	isNum bool
}

// PATCH(toolgate): patch 12. UnmarshalPlainJSON decodes data, in one pass
// that checks it (internaljson.Plain), when it is a plain message: an
// object with only the members jsonrpc ("2.0"), id (an integer of at most
// 15 digits, or a string), method, params and result (any value, nested at
// most internaljson.MaxPlainDepth deep), each once, no key escaped. It keeps copies of the bytes of method, params
// and result, as segmentio's decoder does, and reports whether it decoded;
// else it leaves m as it is.
func (m *wireDecode) UnmarshalPlainJSON(data []byte) bool {
	return m.plain(data, false)
}

// PATCH(toolgate): patch 20. plain is UnmarshalPlainJSON; with valid set,
// data is a value Plain has read whole (Skip) and that nothing else holds
// or changes: the values of method, params and result are then passed over
// without being checked again (SkipValid) and kept as slices of data, not
// copies.
func (m *wireDecode) plain(data []byte, valid bool) bool {
	p := internaljson.NewPlain(data)
	var w wireDecode
	raw := func(to *json.RawMessage) bool {
		if *to != nil {
			return false
		}
		if valid {
			v := p.SkipValid()
			*to = v[:len(v):len(v)]
			return true
		}
		v, ok := p.Skip(0)
		*to = append(json.RawMessage(nil), v...)
		return ok
	}
	var version, id bool
	ok := p.Object(func(key string) bool {
		switch {
		case key == "jsonrpc" && !version:
			version = true
			w.VersionTag = wireVersion
			return p.Literal(`"2.0"`)
		case key == "id" && !id:
			id = true
			if p.Peek() == '"' {
				s, ok := p.String()
				w.ID = s
				return ok
			}
			start := p.Offset()
			if !p.Number() {
				return false
			}
			n := p.Bytes(start)
			digits := bytes.TrimPrefix(n, []byte("-"))
			if bytes.ContainsAny(n, ".eE") || len(digits) > 15 {
				return false
			}
			// PATCH(toolgate): patch 38. At most 15 digits (Number read
			// them): what strconv.ParseInt returns, without a string of
			// them, and kept as an integer (message makes the same ID
			// of it as MakeID of float64(i), exact below 2^53).
			var i int64
			for _, c := range digits {
				i = i*10 + int64(c-'0')
			}
			if len(digits) < len(n) {
				i = -i
			}
			w.num, w.isNum = i, true
			return true
		case key == "method":
			return raw(&w.Method)
		case key == "params":
			return raw(&w.Params)
		case key == "result":
			return raw(&w.Result)
		}
		return false
	})
	if !ok || !p.End() {
		return false
	}
	*m = w
	return true
}

func DecodeMessage(data []byte) (Message, error) {
	msg := wireDecode{}
	if err := internaljson.Unmarshal(data, &msg); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	return msg.message() // PATCH(toolgate): patch 20 (what follows, moved)
}

// PATCH(toolgate): patch 20. DecodeValidMessage is DecodeMessage of data,
// an object internaljson.Plain has read whole (Skip: a stdio frame, patch
// 13) that the message may keep: nothing else holds or changes it. A plain
// message is not checked a second time, and its params or result are
// slices of data.
func DecodeValidMessage(data []byte) (Message, error) {
	return DecodeValidASCIIMessage(data, false)
}

// PATCH(toolgate): patch 39. DecodeValidASCIIMessage is
// DecodeValidMessage; with ascii set, data is all ASCII too, as the Plain
// that read it reported (internaljson.Plain's ASCII after its Skip), and a
// response's kept result is marked so: Await decodes it without checking
// its strings' bytes again (internaljson.NewASCIIPlain).
func DecodeValidASCIIMessage(data []byte, ascii bool) (Message, error) {
	var msg wireDecode
	if !msg.plain(data, true) {
		return DecodeMessage(data)
	}
	// PATCH(toolgate): patch 29. The result is a slice of data, which the
	// message may keep: marked so that Await's result may keep it too
	// (message does, patch 38).
	return msg.messageKept(true, ascii)
}

// PATCH(toolgate): patch 29. keptResult is the Extra of a Response that
// DecodeValidMessage made of a frame nothing else holds or changes: its
// Result, as long as it is still these bytes (the first's address and the
// length), is a slice of that frame whose capacity ends at its end, which
// the value Await decodes it into may keep rather than copy. Patch 39:
// ascii is set when that frame was found valid and all ASCII
// (DecodeValidASCIIMessage).
type keptResult struct {
	sliceMark
	ascii bool
}

// PATCH(toolgate): patch 38. keptResponse is a Response DecodeValidMessage
// made and the mark its Extra points at, in one allocation. Patch 40: and
// its integer ID's value (num, int64IDAt).
type keptResponse struct {
	Response
	mark keptResult
	num  int64
}

// PATCH(toolgate): patch 40. numRequest is a Request message made of a
// message with an integer ID, and that ID's value (int64IDAt), in one
// allocation.
type numRequest struct {
	Request
	num int64
}

// PATCH(toolgate): patch 29. kept reports whether r's Result is the slice
// DecodeValidMessage marked.
func (r *Response) kept() bool {
	k, ok := r.Extra.(*keptResult) // PATCH(toolgate): patch 38 (a pointer)
	return ok && k.marks(r.Result)
}

// PATCH(toolgate): patch 29. UnmarshalResult is what Await does with a
// response that has no error: it decodes its Result into result, handing a
// KeptUnmarshaler the bytes of a Result it may keep (kept).
func UnmarshalResult(r *Response, result any) error {
	if u, ok := result.(internaljson.KeptUnmarshaler); ok {
		// PATCH(toolgate): patch 39. With the frame's ASCII mark.
		if k, ok := r.Extra.(*keptResult); ok && k.marks(r.Result) && u.UnmarshalKeptJSON(bytes.Trim(r.Result, " \t\r\n"), k.ascii) {
			return nil
		}
	}
	return internaljson.Unmarshal(r.Result, result)
}

// message is the rest of DecodeMessage (v1.8.0's), once msg is decoded.
func (msg *wireDecode) message() (Message, error) { return msg.messageKept(false, false) }

// PATCH(toolgate): patch 38. messageKept is message; with keep set, a
// response's result (not empty) is marked kept (patch 29), the mark
// allocated with the response; patch 39: and ASCII when ascii is set.
func (msg *wireDecode) messageKept(keep, ascii bool) (Message, error) {
	if msg.VersionTag != wireVersion {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", msg.VersionTag, wireVersion)
	}
	var (
		id  ID
		err error
	)
	// PATCH(toolgate): patch 38. Patch 40: an integer ID is made below,
	// its value in the message's allocation (int64IDAt).
	if !msg.isNum {
		if id, err = MakeID(msg.ID); err != nil {
			return nil, err
		}
	}
	if len(msg.Method) > 0 {
		// The "method" key was present. Decode its value (including "").
		var method string
		// PATCH(toolgate): patch 20. A method written as plainMethod has it
		// (printable ASCII but the quote and the backslash, between quotes)
		// decodes to the bytes between the quotes, without Unmarshal.
		// Patch 38: MCP's own method names are not copied (Common), and
		// the string Unmarshal decodes into is its own variable, so that
		// method does not escape.
		if m := msg.Method; len(m) > 2 && m[0] == '"' && m[len(m)-1] == '"' && plainMethod(m[1:len(m)-1]) {
			method = internaljson.Common(m[1 : len(m)-1])
		} else {
			var um string
			if err := internaljson.Unmarshal(msg.Method, &um); err != nil {
				return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
			}
			method = um
		}
		if msg.isNum { // PATCH(toolgate): patch 40
			nr := &numRequest{Request: Request{Method: method, Params: msg.Params}, num: msg.num}
			nr.ID = int64IDAt(&nr.num)
			return &nr.Request, nil
		}
		return &Request{
			Method: method,
			ID:     id,
			Params: msg.Params,
		}, nil
	}
	// no method key, should be a response
	if !id.IsValid() && !msg.isNum { // PATCH(toolgate): patch 40 (an integer ID is made below)
		return nil, ErrInvalidRequest
	}
	var resp *Response
	if kept := keep && len(msg.Result) > 0; kept || msg.isNum { // PATCH(toolgate): patches 38 and 40
		rk := &keptResponse{Response: Response{ID: id, Result: msg.Result}}
		if kept {
			rk.mark = keptResult{markOf(msg.Result), ascii}
			rk.Extra = &rk.mark
		}
		if msg.isNum {
			rk.num = msg.num
			rk.ID = int64IDAt(&rk.num)
		}
		resp = &rk.Response
	} else {
		resp = &Response{
			ID:     id,
			Result: msg.Result,
		}
	}
	// we have to check if msg.Error is nil to avoid a typed error
	if msg.Error != nil {
		resp.Error = msg.Error
	}
	return resp, nil
}

func marshalToRaw(obj any) (json.RawMessage, error) {
	if obj == nil {
		return nil, nil
	}
	if c, ok := obj.(Compact); ok && len(c) > 0 { // PATCH(toolgate): see Compact
		return json.RawMessage(c), nil
	}
	data, err := jsonMarshal(obj)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(data), nil
}

// jsonMarshal marshals obj to JSON like json.Marshal but without HTML escaping.
func jsonMarshal(obj any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, err
	}
	// json.Encoder.Encode adds a trailing newline. Trim it to be consistent with json.Marshal.
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
