package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
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
