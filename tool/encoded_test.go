package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestMarshalJSON: MarshalJSON gives json.Marshal's bytes, and in a
// context of WithEncoded the same bytes again for an equal comparable
// value, new ones for another value, and fresh ones each time for a value
// that cannot be compared (which must not panic).
func TestMarshalJSON(t *testing.T) {
	type answer struct {
		State  string `json:"state"`
		Output string `json:"output"`
		Code   *int   `json:"code,omitempty"`
		Any    any    `json:"any,omitempty"`
	}
	code := 1
	values := []any{
		answer{State: "running", Output: "a <b> \u2028 \xff"},
		answer{State: "exited", Output: "a <b> \u2028 \xff", Code: &code},
		&answer{State: "running"},
		answer{Any: map[string]any{"k": "v"}}, // comparable type, not a comparable value
		map[string]any{"k": []any{1.0}},
		"text", 1.5, nil, json.RawMessage(` { "a" : 1 } `),
	}
	for _, ctx := range []context.Context{context.Background(), WithEncoded(context.Background())} {
		for _, v := range values {
			want, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				got, err := MarshalJSON(ctx, v)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("MarshalJSON(%#v) = %s, %v; want %s", v, got, err, want)
				}
			}
		}
	}

	ctx := WithEncoded(context.Background())
	v := answer{State: "running", Output: "x"}
	a, _ := MarshalJSON(ctx, v)
	b, _ := MarshalJSON(ctx, answer{State: "running", Output: "x"}) // equal: the same bytes
	if &a[0] != &b[0] {
		t.Error("an equal value was encoded again")
	}
	v.Output = "y"
	if c, _ := MarshalJSON(ctx, v); string(c) != `{"state":"running","output":"y"}` {
		t.Errorf("a changed value got %s", c)
	}
	m := map[string]any{"k": "v"}
	a, _ = MarshalJSON(ctx, m)
	b, _ = MarshalJSON(ctx, m)
	if &a[0] == &b[0] {
		t.Error("a map's bytes were kept")
	}
	if _, err := MarshalJSON(ctx, math.NaN()); err == nil {
		t.Error("NaN encoded")
	}
	if _, err := MarshalJSON(ctx, math.NaN()); err == nil {
		t.Error("NaN encoded the second time")
	}
}

// TestJSONValue: in a context of WithEncoded, JSONValue of a flat struct is
// what json.Unmarshal decodes MarshalJSON's bytes into, those the client
// gets: a pointer's target changed after the first encoding changes
// neither. Anything else, or without the context, is left to the caller.
func TestJSONValue(t *testing.T) {
	type answer struct {
		State  string  `json:"state"`
		Output string  `json:"output"`
		Name   *string `json:"name,omitempty"`
		Code   *int    `json:"code"`
		N      uint64  `json:"n"`
	}
	name, code := "dev <server>", 7
	values := []any{
		answer{State: "running", Output: "a <b> \u2028 \xff\xfe \xed\xa0\x80 é", N: math.MaxUint64},
		&answer{State: "exited", Output: strings.Repeat("1234567\n", 1000), Name: &name, Code: &code, N: 1<<53 + 1},
		answer{},
	}
	for _, v := range values {
		ctx := WithEncoded(context.Background())
		if _, ok := JSONValue(context.Background(), v); ok {
			t.Errorf("%#v: a value without the context", v)
		}
		for range 2 {
			got, ok := JSONValue(ctx, v)
			b, err := MarshalJSON(ctx, v)
			var want any
			if err != nil || json.Unmarshal(b, &want) != nil {
				t.Fatal(err)
			}
			if !ok || !reflect.DeepEqual(got, want) {
				t.Errorf("JSONValue(%#v) = %#v, %v; the bytes say %#v", v, got, ok, want)
			}
			name, code = "renamed", 8 // the bytes are those of the first encoding
		}
	}
	ctx := WithEncoded(context.Background())
	for _, v := range []any{map[string]any{"k": "v"}, "text", 1.5, struct{ F float64 }{1}, json.RawMessage(`{}`)} {
		if got, ok := JSONValue(ctx, v); ok {
			t.Errorf("JSONValue(%#v) = %#v", v, got)
		}
	}
}

// TestAppendEncodedString: AppendEncodedString writes what AppendJSONString
// writes, for the strings of the value ctx's MarshalJSON encoded last (by
// the same string or an equal one), for others, after a prefix, and after
// another value was encoded.
func TestAppendEncodedString(t *testing.T) {
	type answer struct {
		State  string `json:"state"`
		Output string `json:"output"`
	}
	out := strings.Repeat("12\n<&>\u2028\xff\"\\", 500)
	ctx := WithEncoded(context.Background())
	strs := []string{"", "x", "running", out, strings.Clone(out), out[1:], out + "1"}
	for _, v := range []any{answer{State: "running", Output: out}, answer{State: "x", Output: "running"}, map[string]any{"output": out}} {
		if _, err := MarshalJSON(ctx, v); err != nil {
			t.Fatal(err)
		}
		for _, s := range strs {
			for _, dst := range [][]byte{nil, []byte(`{"text":`)} {
				want := AppendJSONString(bytes.Clone(dst), s)
				if got := AppendEncodedString(ctx, bytes.Clone(dst), s); !bytes.Equal(got, want) {
					t.Errorf("after %T: AppendEncodedString(%.20q) = %.40s…, want %.40s…", v, s, got, want)
				}
			}
		}
	}
}

// TestComparableValue: comparableValue says what reflect.Value.Comparable
// says, twice (the second time from what it kept of the type), for values
// of types that hold an interface in place (in a field, an array, a field
// of a field), behind a pointer, or none, and of types that are not
// comparable.
func TestComparableValue(t *testing.T) {
	type inner struct{ A any }
	type outer struct {
		N int
		I inner
	}
	type flat struct {
		S string
		P *int
		B bool
	}
	type boxed struct{ P *inner }
	values := []any{
		flat{S: "x"}, &flat{}, boxed{P: &inner{A: map[string]int{}}},
		inner{A: 1}, inner{A: map[string]int{}}, inner{},
		outer{I: inner{A: "s"}}, outer{I: inner{A: []int{1}}},
		[2]any{1, 2}, [2]any{1, []int{}}, [1]outer{{I: inner{A: func() {}}}},
		"text", 1.5, map[string]any{}, []int{1}, func() {}, make(chan int),
	}
	for _, v := range values {
		want := reflect.ValueOf(v).Comparable()
		for range 2 {
			if got := comparableValue(v); got != want {
				t.Errorf("comparableValue(%#v) = %v, want %v", v, got, want)
			}
		}
	}
}
