package tool

import "testing"

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
