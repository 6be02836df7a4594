package tool

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"sync"
)

type encodedKey struct{}

// encoded is the last value MarshalJSON encoded in a call, with its bytes
// and, for a flat struct, what they say (view).
type encoded struct {
	mu   sync.Mutex
	v    any
	b    []byte
	view *flatView
}

// WithEncoded returns a context in which MarshalJSON encodes a value once:
// a result's structured value is encoded by each stage that reads it as
// JSON (the result check, the redaction, the MCP answer), and with this
// they read, and the client gets, the same bytes. An MCP server sets it
// for each call.
func WithEncoded(ctx context.Context) context.Context {
	return &encodedCtx{Context: ctx}
}

// WithEncodedLogger is WithEncoded(WithLogger(ctx, l)), made in one
// allocation: an MCP server sets both for each call.
func WithEncodedLogger(ctx context.Context, l *slog.Logger) context.Context {
	return &encodedCtx{Context: ctx, log: l, logged: true}
}

// CallContext is WithEncodedLogger's context as a value, for a server's
// own context type to embed, so that a call's context and what the
// server adds to it are made in one allocation. Init sets it up; its Value
// answers as WithEncodedLogger's, and Done, Err and Deadline are its
// parent's.
type CallContext struct {
	encodedCtx
}

// Init makes c WithEncodedLogger(parent, l); c is new (its zero value),
// not yet used.
func (c *CallContext) Init(parent context.Context, l *slog.Logger) {
	c.Context, c.log, c.logged = parent, l, true
}

// encodedCtx is WithEncoded's context: its parent with the call's
// encoded, made in one allocation (context.WithValue and a new encoded
// are two), and WithEncodedLogger's, with its logger too. It answers
// Value for encodedKey (and loggerKey, when logged) and asks its parent
// for every other key, as context.WithValue's would; Done, Err and
// Deadline are its parent's.
type encodedCtx struct {
	context.Context
	e      encoded
	log    *slog.Logger
	logged bool // log was given (WithEncodedLogger): the loggerKey's value
}

func (c *encodedCtx) Value(key any) any {
	switch key {
	case encodedKey{}:
		return &c.e
	case loggerKey{}:
		if c.logged {
			return c.log
		}
	}
	return c.Context.Value(key)
}

// MarshalJSON returns json.Marshal(v). In a context of WithEncoded, a value
// equal (==) to the one it encoded last there, of a comparable type, gets
// the same bytes again, which the caller must not change (== is Go's: a
// pointer is its address, and a float's -0 equals 0, so in one call the
// bytes are those of the first of such values). A value that is not
// comparable (a map, a slice) is encoded each time.
func MarshalJSON(ctx context.Context, v any) ([]byte, error) {
	b, _, err := encodedOf(ctx, v)
	return b, err
}

// JSONValue returns what json.Unmarshal decodes MarshalJSON(ctx, v)'s bytes
// into (an any), without decoding them, where ctx knows it: in a context of
// WithEncoded, for a flat struct (a process tool's answer: see
// marshalFlat), whose fields were read as its bytes were written. It
// reports false otherwise; the caller then decodes the bytes. The value
// is shared: the caller must not change it.
func JSONValue(ctx context.Context, v any) (any, bool) {
	if ctx.Value(encodedKey{}) == nil {
		return nil, false
	}
	_, view, err := encodedOf(ctx, v)
	if err != nil || view == nil {
		return nil, false
	}
	return view.val, true
}

// AppendEncodedString returns AppendJSONString(dst, s), copying the bytes
// where ctx's last MarshalJSON wrote a string field equal to s (in a
// context of WithEncoded, a flat struct's): a text block that repeats the
// structured value's output is encoded once.
func AppendEncodedString(ctx context.Context, dst []byte, s string) []byte {
	if e, _ := ctx.Value(encodedKey{}).(*encoded); e != nil && len(s) > 0 {
		e.mu.Lock()
		defer e.mu.Unlock()
		if f, ok := e.field(s); ok {
			return append(dst, e.b[f.start:f.end]...)
		}
	}
	return AppendJSONString(dst, s)
}

// EncodedIn reports whether b holds s's JSON encoding as a string field of
// a flat struct: b are the bytes ctx's last MarshalJSON gave (in a context
// of WithEncoded), for a value with a string field equal to s.
func EncodedIn(ctx context.Context, b []byte, s string) bool {
	e, _ := ctx.Value(encodedKey{}).(*encoded)
	if e == nil || len(b) == 0 {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.b) != len(b) || &e.b[0] != &b[0] {
		return false
	}
	_, ok := e.field(s)
	return ok
}

// field returns the string field equal to s of the flat struct e last
// encoded, if any. The caller holds e.mu.
func (e *encoded) field(s string) (flatString, bool) {
	if e.view != nil {
		for _, f := range e.view.strs {
			if f.s == s {
				return f, true
			}
		}
	}
	return flatString{}, false
}

// encodedOf is MarshalJSON, with what the bytes say of a flat struct
// encoded in a context of WithEncoded (else nil).
func encodedOf(ctx context.Context, v any) ([]byte, *flatView, error) {
	e, _ := ctx.Value(encodedKey{}).(*encoded)
	if e == nil || v == nil || !comparableValue(v) {
		b, err := marshal(v, nil)
		return b, nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.b != nil && e.v == v {
		return e.b, e.view, nil
	}
	view := &flatView{}
	b, err := marshal(v, view)
	if err != nil {
		return b, nil, err
	}
	if view.val == nil {
		view = nil // not a flat struct
	}
	e.v, e.b, e.view = v, b, view
	return b, view, nil
}

// comparableTypes holds, for each type comparableValue asked about, whether
// every value of it compares with == (a comparable type holding no
// interface, whose values differ: reflect.Value.Comparable).
var comparableTypes sync.Map // reflect.Type -> bool

// comparableValue reports whether v, not nil, compares with == without a panic
// (reflect.Value.Comparable), which walks a struct's fields on every call
// (four times a process tool's answer in an MCP call); it asks that only
// of a type that holds an interface or is not comparable.
func comparableValue(v any) bool {
	t := reflect.TypeOf(v)
	always, ok := comparableTypes.Load(t)
	if !ok {
		always = t.Comparable() && !holdsInterface(t)
		comparableTypes.Store(t, always)
	}
	return always.(bool) || reflect.ValueOf(v).Comparable()
}

// holdsInterface reports whether a value of t holds an interface value
// in place (not behind a pointer, which compares by its address).
func holdsInterface(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Array:
		return holdsInterface(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if holdsInterface(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// marshal is json.Marshal(v), a flat struct's by marshalFlat (which fills
// in view when it is not nil).
func marshal(v any, view *flatView) ([]byte, error) {
	if b, ok := marshalFlat(v, view); ok {
		return b, nil
	}
	return json.Marshal(v)
}
