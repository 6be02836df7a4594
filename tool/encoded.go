package tool

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
)

type encodedKey struct{}

// encoded is the last value MarshalJSON encoded in a call, with its bytes.
type encoded struct {
	mu sync.Mutex
	v  any
	b  []byte
}

// WithEncoded returns a context in which MarshalJSON encodes a value once:
// a result's structured value is encoded by each stage that reads it as
// JSON (the result check, the redaction, the MCP answer), and with this
// they read, and the client gets, the same bytes. An MCP server sets it
// for each call.
func WithEncoded(ctx context.Context) context.Context {
	return context.WithValue(ctx, encodedKey{}, &encoded{})
}

// MarshalJSON returns json.Marshal(v). In a context of WithEncoded, a value
// equal (==) to the one it encoded last there, of a comparable type, gets
// the same bytes again, which the caller must not change (== is Go's: a
// pointer is its address, and a float's -0 equals 0, so in one call the
// bytes are those of the first of such values). A value that is not
// comparable (a map, a slice) is encoded each time.
func MarshalJSON(ctx context.Context, v any) ([]byte, error) {
	e, _ := ctx.Value(encodedKey{}).(*encoded)
	if e == nil || v == nil || !reflect.ValueOf(v).Comparable() {
		return marshal(v)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.b != nil && e.v == v {
		return e.b, nil
	}
	b, err := marshal(v)
	if err == nil {
		e.v, e.b = v, b
	}
	return b, err
}

// marshal is json.Marshal(v), a flat struct's by marshalFlat.
func marshal(v any) ([]byte, error) {
	if b, ok := marshalFlat(v); ok {
		return b, nil
	}
	return json.Marshal(v)
}
