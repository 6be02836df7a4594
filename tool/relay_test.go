package tool

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRelay: a Relay gives its bytes back only for the result it was made
// with, however a stage changed it: a new value, a change in place to the
// content or to a structured value, a block more or less, metadata, an error.
func TestRelay(t *testing.T) {
	data := []byte(`{"raw":true}`)
	fresh := func() Result {
		return Result{Content: []Content{TextContent("a"), TextContent("b")}, Structured: map[string]any{"k": []any{"v", 1.0, true, nil, map[string]any{}}}}
	}
	changes := map[string]func(*Result){
		"text replaced":         func(r *Result) { r.Content = []Content{TextContent("a"), TextContent("B")} },
		"text changed in place": func(r *Result) { r.Content[1].Text = "B" },
		"block added":           func(r *Result) { r.Content = append(r.Content, TextContent("c")) },
		"block dropped":         func(r *Result) { r.Content = r.Content[:1] },
		"type changed":          func(r *Result) { r.Content[0].Type = "resource" },
		"data set":              func(r *Result) { r.Content[0].Data = []byte("x") },
		"meta":                  func(r *Result) { r.Meta = map[string]any{"redacted": 1} },
		"error":                 func(r *Result) { r.Error = Errorf(Internal, "x") },
		"structured replaced":   func(r *Result) { r.Structured = map[string]any{"k": "w"} },
		"structured dropped":    func(r *Result) { r.Structured = nil },
		"nested in place":       func(r *Result) { r.Structured.(map[string]any)["k"].([]any)[0] = "w" },
		"deeper in place":       func(r *Result) { r.Structured.(map[string]any)["k"].([]any)[4].(map[string]any)["x"] = 1.0 },
		"key added in place":    func(r *Result) { r.Structured.(map[string]any)["j"] = nil },
		"number in place":       func(r *Result) { r.Structured.(map[string]any)["k"].([]any)[1] = 2.0 },
		"type of a value":       func(r *Result) { r.Structured.(map[string]any)["k"].([]any)[1] = "1" },
	}
	for name, change := range changes {
		r := fresh()
		x := NewRelay(data, nil, r)
		if got, ok := x.For(r); !ok || string(got) != string(data) {
			t.Fatalf("%s: the unchanged result gave %q, %v", name, got, ok)
		}
		change(&r)
		if got, ok := x.For(r); ok {
			t.Errorf("%s: the changed result gave the bytes %q", name, got)
		}
	}
	for name, r := range map[string]Result{
		"image":        {Content: []Content{ImageContent([]byte{1}, "image/png")}},
		"error":        {Error: Errorf(Internal, "x")},
		"meta":         {Meta: map[string]any{"a": 1}},
		"not JSON's":   {Structured: map[string]int{"a": 1}},
		"nested int":   {Structured: map[string]any{"a": 1}},
		"typed struct": {Structured: struct{ A string }{"a"}},
	} {
		if NewRelay(data, nil, r) != nil {
			t.Errorf("%s: tied", name)
		}
	}
	var none *Relay
	if _, ok := none.For(fresh()); ok {
		t.Error("a nil Relay gave bytes")
	}
}

// TestRelayStructured: the structured value's bytes come back only while
// the value is what they were decoded into.
func TestRelayStructured(t *testing.T) {
	raw := []byte(`{"k":["v",1]}`)
	r := Result{Content: []Content{TextContent("a")}, Structured: map[string]any{"k": []any{"v", 1.0}}}
	x := NewRelay([]byte(`{"content":[{"type":"text","text":"a"}],"structuredContent":{"k":["v",1]}}`), raw, r)
	if got, ok := x.StructuredFor(r.Structured); !ok || string(got) != string(raw) {
		t.Fatalf("the unchanged value gave %q, %v", got, ok)
	}
	r.Structured.(map[string]any)["k"].([]any)[1] = 2.0
	if got, ok := x.StructuredFor(r.Structured); ok {
		t.Errorf("a value changed in place gave %q", got)
	}
	if _, ok := x.StructuredFor(nil); ok {
		t.Error("no value gave the bytes")
	}
	if _, ok := NewRelay(raw, nil, r).StructuredFor(r.Structured); ok {
		t.Error("a Relay made without the value's bytes gave some")
	}
	var none *Relay
	if _, ok := none.StructuredFor(r.Structured); ok {
		t.Error("a nil Relay gave bytes")
	}
}

// refRelay is the Relay as it was before it kept a record (a copy of the
// content and a deep copy of the structured value, compared whole): the
// reference TestRelayRecord holds the record to.
type refRelay struct {
	bytes      []byte
	content    []Content
	structured any
	rawValue   []byte
}

func newRefRelay(data, structured []byte, r Result) *refRelay {
	if r.Error != nil || len(r.Meta) > 0 {
		return nil
	}
	for _, c := range r.Content {
		if c.Type != "text" || c.Data != nil || c.MIMEType != "" || c.URI != "" {
			return nil
		}
	}
	s, ok := refCopy(r.Structured)
	if !ok {
		return nil
	}
	return &refRelay{bytes: data, content: append([]Content(nil), r.Content...), structured: s, rawValue: structured}
}

func (x *refRelay) For(r Result) ([]byte, bool) {
	if x == nil || r.Error != nil || len(r.Meta) > 0 || len(r.Content) != len(x.content) {
		return nil, false
	}
	for i, c := range r.Content {
		if c.Type != x.content[i].Type || c.Text != x.content[i].Text || c.Data != nil || c.MIMEType != "" || c.URI != "" {
			return nil, false
		}
	}
	if !refEqual(r.Structured, x.structured) {
		return nil, false
	}
	return x.bytes, true
}

func (x *refRelay) StructuredFor(v any) ([]byte, bool) {
	if x == nil || x.rawValue == nil || !refEqual(v, x.structured) {
		return nil, false
	}
	return x.rawValue, true
}

func refCopy(v any) (any, bool) {
	switch v := v.(type) {
	case nil, string, float64, bool:
		return v, true
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			c, ok := refCopy(e)
			if !ok {
				return nil, false
			}
			m[k] = c
		}
		return m, true
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			c, ok := refCopy(e)
			if !ok {
				return nil, false
			}
			s[i] = c
		}
		return s, true
	}
	return nil, false
}

func refEqual(a, b any) bool {
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
			if f, ok := m[k]; !ok || !refEqual(f, e) {
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
			if !refEqual(s[i], e) {
				return false
			}
		}
		return true
	}
	return false
}

// randomValue is a value of JSON's own types (and now and then of
// others: a typed nil, an int, a map of strings), nested at most depth
// deep, with few distinct keys and leaves so that mutations often land on
// an equal value.
func randomValue(rng *rand.Rand, depth int) any {
	leaves := []any{nil, "", "a", "b", "line 1\nline 2\n", 0.0, math.Copysign(0, -1), 1.0, math.NaN(), true, false}
	n := rng.IntN(10)
	if depth <= 0 && n >= 6 {
		n = rng.IntN(6)
	}
	switch n {
	case 0, 1, 2, 3, 4, 5:
		return leaves[rng.IntN(len(leaves))]
	case 6, 7:
		if rng.IntN(12) == 0 {
			return map[string]any(nil)
		}
		m := map[string]any{}
		for range rng.IntN(5) {
			m[[]string{"", "a", "b", "c", "content", "é"}[rng.IntN(6)]] = randomValue(rng, depth-1)
		}
		return m
	case 8:
		if rng.IntN(12) == 0 {
			return []any(nil)
		}
		s := []any{}
		for range rng.IntN(4) {
			s = append(s, randomValue(rng, depth-1))
		}
		return s
	}
	return []any{1, map[string]string{"a": "b"}, []string{"x"}, (*int)(nil), 'r'}[rng.IntN(5)]
}

// mutate changes v in place, or returns another value, at a random place.
func mutate(rng *rand.Rand, v any) any {
	switch w := v.(type) {
	case map[string]any:
		if len(w) > 0 && rng.IntN(3) > 0 {
			for k, e := range w { // one key of the map, at random
				switch rng.IntN(5) {
				case 0:
					delete(w, k)
				case 1: // the same number of keys, another one
					delete(w, k)
					w[k+"x"] = e
				default:
					w[k] = mutate(rng, e)
				}
				return w
			}
		}
		if w != nil && rng.IntN(2) == 0 {
			w[[]string{"a", "z", "content"}[rng.IntN(3)]] = randomValue(rng, 1)
			return w
		}
	case []any:
		if len(w) > 0 && rng.IntN(3) > 0 {
			i := rng.IntN(len(w))
			if rng.IntN(4) == 0 {
				j := rng.IntN(len(w))
				w[i], w[j] = w[j], w[i]
			} else {
				w[i] = mutate(rng, w[i])
			}
			return w
		}
		if rng.IntN(2) == 0 {
			return w[:len(w)/2]
		}
	}
	return randomValue(rng, 2)
}

// TestRelayRecord: the record gives the bytes back exactly when the copy
// it replaced did (refRelay), for random results and random changes to
// them, in place or not: values of JSON's types and others, nil maps and
// slices, NaN, -0, keys swapped for others of the same count, texts
// changed.
func TestRelayRecord(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 46))
	data, raw := []byte(`{"r":1}`), []byte(`{"v":1}`)
	given, changed := 0, 0
	for range 200000 {
		r := Result{Structured: randomValue(rng, 4)}
		for range rng.IntN(3) {
			r.Content = append(r.Content, TextContent([]string{"", "a", "b"}[rng.IntN(3)]))
		}
		if rng.IntN(50) == 0 {
			r.Content = append(r.Content, Content{Type: "resource", Text: "a", URI: "u"})
		}
		var sraw []byte
		if rng.IntN(4) > 0 {
			sraw = raw
		}
		x, ref := NewRelay(data, sraw, r), newRefRelay(data, sraw, r)
		if (x == nil) != (ref == nil) {
			t.Fatalf("%#v: tied %v, reference %v", r, x != nil, ref != nil)
		}
		for step := range 4 {
			got, ok := x.For(r)
			want, wantOK := ref.For(r)
			if ok != wantOK || string(got) != string(want) {
				t.Fatalf("%#v (after %d changes): For gave %q, %v; the reference %q, %v", r, step, got, ok, want, wantOK)
			}
			got, ok = x.StructuredFor(r.Structured)
			want, wantOK = ref.StructuredFor(r.Structured)
			if ok != wantOK || string(got) != string(want) {
				t.Fatalf("%#v (after %d changes): StructuredFor gave %q, %v; the reference %q, %v", r, step, got, ok, want, wantOK)
			}
			if ok {
				given++
			}
			switch rng.IntN(6) {
			case 0:
				if len(r.Content) > 0 { // in place: another text, of the same length or not
					c := &r.Content[rng.IntN(len(r.Content))]
					c.Text = map[string]string{"": "x", "a": "b", "b": "a"}[c.Text]
				}
			case 1:
				r.Content = append(r.Content, TextContent("a"))
			default:
				r.Structured = mutate(rng, r.Structured)
			}
			changed++
		}
	}
	if given < 100000 {
		t.Errorf("only %d of %d checks gave the bytes", given, changed)
	}
}

// TestRelayTieCompact: Tie makes a zero Relay what NewRelay returns (the
// same bytes for the result, none for a changed one, false where NewRelay
// gives nil), and Compact is false until MarkCompact (and for nil).
func TestRelayTieCompact(t *testing.T) {
	data := []byte(`{"raw":true}`)
	r := Result{Content: []Content{TextContent("a")}, Structured: map[string]any{"k": []any{"v", 1.0}}}
	var x Relay
	if !x.Tie(data, []byte(`{"k":["v",1]}`), r) {
		t.Fatal("Tie refused a text result")
	}
	if got, ok := x.For(r); !ok || string(got) != string(data) {
		t.Errorf("For after Tie = %q, %v", got, ok)
	}
	if got, ok := x.StructuredFor(r.Structured); !ok || string(got) != `{"k":["v",1]}` {
		t.Errorf("StructuredFor after Tie = %q, %v", got, ok)
	}
	changed := r
	changed.Content = []Content{TextContent("b")}
	if _, ok := x.For(changed); ok {
		t.Error("For of a changed result after Tie")
	}
	for _, bad := range []Result{
		{Error: Errorf(Internal, "x")},
		{Meta: map[string]any{"k": 1}},
		{Content: []Content{ImageContent([]byte("x"), "image/png")}},
		{Structured: map[string]int{"k": 1}},
	} {
		var y Relay
		if y.Tie(data, nil, bad) || NewRelay(data, nil, bad) != nil {
			t.Errorf("Tie or NewRelay tied %+v", bad)
		}
	}
	var none *Relay
	if none.Compact() || x.Compact() || NewRelay(data, nil, r).Compact() {
		t.Error("Compact before MarkCompact")
	}
	x.MarkCompact()
	if !x.Compact() {
		t.Error("Compact after MarkCompact is false")
	}
}
