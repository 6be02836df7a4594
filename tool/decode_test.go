package tool

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

type flatAll struct {
	S   string  `json:"s"`
	B   bool    `json:"b,omitempty"`
	I   int     `json:"i"`
	I8  int8    `json:"i8"`
	I16 int16   `json:"i16"`
	I32 int32   `json:"i32"`
	I64 int64   `json:"i64"`
	U   uint    `json:"u"`
	U8  uint8   `json:"u8"`
	U16 uint16  `json:"u16"`
	U32 uint32  `json:"u32"`
	U64 uint64  `json:"u64"`
	F32 float32 `json:"f32"`
	F64 float64 `json:"f64"`
	Raw string  // no tag: its Go name
	Dot string  `json:"a.b-c_d"`
	Not string  `json:"-"`
	low string  //nolint:unused // unexported: encoding/json leaves it alone
}

type mode string

type flatNamed struct {
	Mode  mode `json:"mode"`
	Count int  `json:"count,omitempty"`
}

// flatInputs are arguments of every shape the flat decoder takes or gives
// up on; every one must decode exactly as encoding/json decodes it.
var flatInputs = []string{
	`{}`, ` { } `, `{"s":"x"}`, "{\n\t\"s\" : \"x\" ,\r\n \"i\" : 5 }", `{"s":""}`, `{"s":"héllo ✓"}`,
	`{"s":"a\"b"}`, `{"s":"a\\b"}`, `{"s":"\u00e9"}`, `{"s":"tab	in"}`, "{\"s\":\"\xff\"}", `{"s":null}`, `{"s":5}`, `{"s":true}`,
	`{"s":["x"]}`, `{"s":{"x":1}}`, `{"b":true}`, `{"b":false}`, `{"b":null}`, `{"b":"true"}`, `{"b":1}`, `{"b":tru}`,
	`{"i":0}`, `{"i":-0}`, `{"i":-12}`, `{"i":9223372036854775807}`, `{"i":9223372036854775808}`, `{"i":1.5}`,
	`{"i":1e3}`, `{"i":1E3}`, `{"i":1.0}`, `{"i":01}`, `{"i":+1}`, `{"i":"1"}`, `{"i":- 1}`, `{"i":-}`, `{"i":1.}`, `{"i":.5}`,
	`{"i8":127}`, `{"i8":128}`, `{"i8":-128}`, `{"i8":-129}`, `{"i16":32768}`, `{"i32":2147483648}`, `{"i64":-9223372036854775808}`,
	`{"u":1}`, `{"u":-1}`, `{"u8":255}`, `{"u8":256}`, `{"u16":65536}`, `{"u32":4294967296}`, `{"u64":18446744073709551615}`,
	`{"u64":18446744073709551616}`, `{"f32":1.5}`, `{"f32":3.5e38}`, `{"f32":1e-50}`, `{"f64":1e308}`, `{"f64":1e309}`,
	`{"f64":-2.5e-3}`, `{"f64":1e-400}`, `{"f64":12}`, `{"f64":0.1}`, `{"f64":"1"}`, `{"f64":1e}`, `{"f64":1e+}`, `{"f64":1e+5}`,
	`{"Raw":"r"}`, `{"raw":"r"}`, `{"RAW":"r"}`, `{"S":"upper"}`, `{"a.b-c_d":"d"}`, `{"Not":"n"}`, `{"-":"n"}`, `{"low":"l"}`,
	`{"unknown":1}`, `{"s":"a","s":"b"}`, `{"i":1,"i":null}`, `{"s":"x",}`, `{"s":"x"`, `{"s":"x"}}`, `{"s":"x"} x`, `{"s" "x"}`,
	`{s:"x"}`, `{'s':'x'}`, `{"s":"x"}{}`, `[]`, `"s"`, `5`, `{"\u0073":"escaped key"}`, `{"i":5,"s":"x","b":true,"f64":2.5,"u8":7}`,
}

func TestFlatDecoderMatchesEncodingJSON(t *testing.T) {
	check := func(t *testing.T, typ reflect.Type, base any) {
		d := newFlatDecoder(typ)
		if d == nil {
			t.Fatalf("no flat decoder for %s", typ)
		}
		for _, in := range flatInputs {
			want := reflect.New(typ)
			want.Elem().Set(reflect.ValueOf(base))
			werr := json.Unmarshal([]byte(in), want.Interface())
			got := reflect.New(typ)
			got.Elem().Set(reflect.ValueOf(base))
			if !d.decode([]byte(in), got.UnsafePointer()) {
				continue // encoding/json decides
			}
			if werr != nil {
				t.Errorf("%s: the flat decoder took %s, which encoding/json refuses: %v", typ, in, werr)
				continue
			}
			if !reflect.DeepEqual(got.Elem().Interface(), want.Elem().Interface()) {
				t.Errorf("%s: %s decoded to %+v, encoding/json gives %+v", typ, in, got.Elem(), want.Elem())
			}
		}
	}
	t.Run("all kinds", func(t *testing.T) { check(t, reflect.TypeFor[flatAll](), flatAll{S: "base", I: 7, F64: 1.25, B: true}) })
	t.Run("named", func(t *testing.T) { check(t, reflect.TypeFor[flatNamed](), flatNamed{Mode: "fast", Count: 10}) })
}

// TestFlatDecoderTakesTheCommonCase: the decoder is not a fallback in
// disguise: it decodes the usual arguments itself.
func TestFlatDecoderTakesTheCommonCase(t *testing.T) {
	d := newFlatDecoder(reflect.TypeFor[flatAll]())
	for _, in := range []string{`{}`, `{"s":"a/b.txt","i":5}`, ` {"b":true, "f64":-1.5e3, "u8":255, "Raw":"é"} `, `{"s":null}`} {
		var v flatAll
		if !d.decode([]byte(in), unsafe.Pointer(&v)) {
			t.Errorf("the flat decoder gave up on %s", in)
		}
	}
}

// TestFlatDecoderTypes: types whose fields encoding/json decodes in its own
// way get no flat decoder.
func TestFlatDecoderTypes(t *testing.T) {
	type embedded struct{ flatNamed }
	type withSlice struct {
		Tags []string `json:"tags"`
	}
	type withPointer struct {
		N *int `json:"n"`
	}
	type withString struct {
		N int `json:"n,string"`
	}
	type withText struct {
		T textField `json:"t"`
	}
	type dup struct {
		X string
		Y string `json:"X"`
	}
	type quoted struct {
		A string `json:"a b"`
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[embedded](), reflect.TypeFor[withSlice](), reflect.TypeFor[withPointer](), reflect.TypeFor[withString](),
		reflect.TypeFor[withText](), reflect.TypeFor[dup](), reflect.TypeFor[quoted](), reflect.TypeFor[selfDecoding](),
		reflect.TypeFor[int](), reflect.TypeFor[map[string]any](),
	} {
		if newFlatDecoder(typ) != nil {
			t.Errorf("%s got a flat decoder", typ)
		}
	}
}

type textField struct{ s string }

func (f *textField) UnmarshalText(b []byte) error { f.s = strings.ToUpper(string(b)); return nil }

type selfDecoding struct {
	A string `json:"a"`
}

func (s *selfDecoding) UnmarshalJSON([]byte) error { s.A = "mine"; return nil }

func FuzzFlatDecoder(f *testing.F) {
	for _, in := range flatInputs {
		f.Add(in)
	}
	typ := reflect.TypeFor[flatAll]()
	d := newFlatDecoder(typ)
	f.Fuzz(func(t *testing.T, in string) {
		var got, want flatAll
		if !d.decode([]byte(in), unsafe.Pointer(&got)) {
			return
		}
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("the flat decoder took %q, which encoding/json refuses: %v", in, err)
		}
		if err := strictDecodes[flatAll](in); err != nil {
			t.Fatalf("the flat decoder took %q, which encoding/json refuses with unknown fields refused: %v", in, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q decoded to %+v, encoding/json gives %+v", in, got, want)
		}
	})
}

// strictDecodes reports whether encoding/json decodes in into a T refusing
// unknown fields, with nothing after the object (as toolsets/fs checks).
func strictDecodes[T any](in string) error {
	dec := json.NewDecoder(strings.NewReader(in))
	dec.DisallowUnknownFields()
	var v T
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if _, err := dec.Token(); err == nil {
		return errors.New("data after the object")
	}
	return nil
}

// TestFitsMeansStrictDecodes: when a typed tool says arguments fit, a
// strict encoding/json decode (unknown fields refused) takes them too; and
// Fits says so for the common arguments.
func TestFitsMeansStrictDecodes(t *testing.T) {
	all := New("all", "d", func(context.Context, flatAll) (string, error) { return "", nil }).(interface{ Fits([]byte) bool })
	named := New("named", "d", func(context.Context, flatNamed) (string, error) { return "", nil }).(interface{ Fits([]byte) bool })
	fits := 0
	for _, in := range flatInputs {
		if all.Fits([]byte(in)) {
			fits++
			if err := strictDecodes[flatAll](in); err != nil {
				t.Errorf("flatAll: Fits(%s), but a strict decode refuses it: %v", in, err)
			}
		}
		if named.Fits([]byte(in)) {
			if err := strictDecodes[flatNamed](in); err != nil {
				t.Errorf("flatNamed: Fits(%s), but a strict decode refuses it: %v", in, err)
			}
		}
	}
	if fits < 30 {
		t.Errorf("Fits took only %d of the inputs: the common case should fit", fits)
	}
	for _, in := range []string{`{"unknown":1}`, `{"S":"upper"}`, `{"Not":"n"}`, `{"low":"l"}`, `{"s":"x"} x`, `{"s":"x"}{}`} {
		if all.Fits([]byte(in)) {
			t.Errorf("Fits(%s): true, for arguments a strict decode refuses", in)
		}
	}
	type nested struct {
		Opts map[string]any `json:"opts"`
	}
	if New("nested", "d", func(context.Context, nested) (string, error) { return "", nil }).(interface{ Fits([]byte) bool }).Fits([]byte(`{"opts":{}}`)) {
		t.Error("Fits: true for a type the fast decoder does not handle")
	}
}
