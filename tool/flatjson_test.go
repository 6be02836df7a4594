package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

type outAll struct {
	S       string `json:"s"`
	SO      string `json:"so,omitempty"`
	B       bool   `json:"b"`
	BO      bool   `json:"bo,omitempty"`
	I       int    `json:"i"`
	I8      int8   `json:"i8,omitempty"`
	I16     int16
	I32     int32  `json:",omitempty"`
	I64     int64  `json:"i.64"`
	U       uint   `json:"u-"`
	U8      uint8  `json:"u8,omitempty"`
	U16     uint16 `json:"u16"`
	U32     uint32 `json:"u32"`
	U64     uint64 `json:"u64"`
	P       *int   `json:"p"`
	PO      *int   `json:"po,omitempty"`
	PS      *string
	PB      *bool   `json:"pb,omitempty"`
	PU      *uint64 `json:"pu"`
	Skipped string  `json:"-"`
	hidden  string
	Last    string `json:"last"`
}

type (
	outNamed     string
	outNumName   json.Number // not json.Number: encoding/json writes it as a string
	outNamedInt  int16
	outNamedBool bool
)

type outNamedFields struct {
	N outNamed      `json:"n"`
	C int           `json:"c,omitempty"`
	M outNumName    `json:"m"`
	K outNamedInt   `json:"k"`
	Q *outNamedBool `json:"q,omitempty"`
}

// Types marshalFlat leaves to encoding/json.
type (
	flatEmbedded struct {
		outNamedFields
		A string
	}
	flatFloat     struct{ F float64 }
	flatStringOpt struct {
		N int `json:"n,string"`
	}
	flatOmitZero struct {
		N int `json:"n,omitzero"`
	}
	flatDup struct {
		A string `json:"B"`
		B string
	}
	flatAny     struct{ A any }
	flatNest    struct{ T outNamedFields }
	flatSlice   struct{ S []string }
	flatTime    struct{ T time.Time }
	flatOwn     struct{ A string }
	flatOwnP    struct{ A string }
	outOwnField struct{ O flatOwn }
	flatOdd     struct {
		A string `json:"a b<"`
	}
	flatDash struct {
		A string `json:"-,"`
	}
	flatMap    struct{ M map[string]string }
	flatNone   struct{ a int }
	flatNumber struct {
		N json.Number `json:"n"`
		S string      `json:"s"`
	}
	flatNumberP struct {
		N *json.Number `json:"n,omitempty"`
	}
	// Named strings and numbers that encode themselves, by value or pointer
	// receiver, as fields by value or pointer.
	ownText     string
	ownTextP    string
	ownInt      int
	ownIntP     uint8
	flatOwnText struct {
		T ownText   `json:"t"`
		P *ownTextP `json:"p"`
	}
	flatOwnTextP struct{ T ownTextP }
	flatOwnInt   struct{ I ownInt }
	flatOwnIntP  struct{ I *ownIntP }
)

func (flatOwn) MarshalJSON() ([]byte, error)   { return []byte(`"own"`), nil }
func (*flatOwnP) MarshalText() ([]byte, error) { return []byte("own"), nil }
func (t ownText) MarshalText() ([]byte, error) { return []byte("own " + t), nil }
func (t *ownTextP) MarshalText() ([]byte, error) {
	return []byte("own " + *t), nil
}
func (i ownInt) MarshalJSON() ([]byte, error) { return json.Marshal(fmt.Sprint("own ", int(i))) }
func (i *ownIntP) MarshalJSON() ([]byte, error) {
	return json.Marshal(fmt.Sprint("own ", int(*i)))
}

// TestMarshalFlatMatchesEncodingJSON compares marshalFlat with json.Marshal
// over random values of flat structs (adversarial strings, integers at
// their limits, nil and set pointers, empty values under omitempty), by
// value and by pointer, and checks that it declines each kind of struct
// it does not write.
func TestMarshalFlatMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	strs := []string{"", "a", "<b>&\"\\", "\u2028\u2029", "\xff\xfe", "é😀", "line\nline\ttab\x00\x1f\x7f", strings.Repeat("1234567\n", 300)}
	str := func() string { return strs[r.IntN(len(strs))] + strs[r.IntN(len(strs))] }
	ints := []int64{0, 1, -1, math.MaxInt8, math.MinInt8, math.MaxInt16, math.MinInt16, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64}
	num := func() int64 {
		if r.IntN(2) == 0 {
			return ints[r.IntN(len(ints))]
		}
		return r.Int64()
	}
	check := func(v any) {
		t.Helper()
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := marshalFlat(v, nil)
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("%#v: got %s (%v), want %s", v, got, ok, want)
		}
		checkView(t, v, want)
	}
	for range 5000 {
		n, s, b, u := int(num()), str(), r.IntN(2) == 0, r.Uint64()
		v := outAll{S: str(), SO: str(), B: r.IntN(2) == 0, BO: r.IntN(2) == 0, I: int(num()), I8: int8(num()), I16: int16(num()),
			I32: int32(num()), I64: num(), U: uint(r.Uint64()), U8: uint8(num()), U16: uint16(num()), U32: uint32(num()),
			U64: []uint64{0, math.MaxUint64, r.Uint64()}[r.IntN(3)], Skipped: "x", hidden: "y", Last: str()}
		if r.IntN(2) == 0 {
			v.P, v.PO, v.PS, v.PB, v.PU = &n, &n, &s, &b, &u
		}
		check(v)
		check(&v)
		q := outNamedBool(b)
		check(outNamedFields{N: outNamed(str()), C: int(num()), M: outNumName(str()), K: outNamedInt(num()), Q: &q})
		check(outNamedFields{N: outNamed(str())})
		check(flatDash{A: str()}) // named "-"
	}
	numbers := []json.Number{"12", "", "0", "-0.5e+3", "abc", "01", "1.", " 1", "1e400", "12}"}
	ownTP, ownIP := ownTextP("p"), ownIntP(7)
	decline := []any{flatEmbedded{}, flatFloat{}, flatStringOpt{}, flatOmitZero{}, flatDup{}, flatAny{}, flatNest{}, flatSlice{},
		flatTime{}, flatOwn{}, &flatOwn{}, flatOwnP{}, &flatOwnP{}, outOwnField{}, flatOdd{}, flatMap{}, flatNone{},
		flatNumberP{}, &flatNumberP{}, flatOwnText{T: "t<", P: &ownTP}, flatOwnText{}, flatOwnTextP{T: "t"}, &flatOwnTextP{T: "t"},
		flatOwnInt{I: 3}, flatOwnIntP{I: &ownIP}, flatOwnIntP{}, (*outAll)(nil), "text", 1, map[string]any{}, []string{}}
	for _, n := range numbers {
		decline = append(decline, flatNumber{N: n, S: "x"}, &flatNumber{N: n}, flatNumberP{N: &n})
	}
	for _, v := range decline {
		for range 2 { // the second time from the cache
			if got, ok := marshalFlat(v, &flatView{}); ok {
				t.Errorf("%#v: marshalFlat wrote %s", v, got)
			}
		}
		// What the tool layer sends instead: json.Marshal's bytes, or its error.
		want, wantErr := json.Marshal(v)
		got, err := marshal(v, nil)
		if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
			t.Errorf("%#v: marshal gave %s, %v; json.Marshal %s, %v", v, got, err, want, wantErr)
		}
	}
}

// FuzzMarshalFlat checks marshalFlat against json.Marshal on any strings
// and numbers.
func FuzzMarshalFlat(f *testing.F) {
	f.Add("running", "12\n<&>\u2028\xff", int64(-1), uint64(1), true)
	f.Add("-0.5e+3", "", int64(0), uint64(0), false)
	f.Fuzz(func(t *testing.T, s1, s2 string, n int64, u uint64, b bool) {
		v := outAll{S: s1, SO: s2, I: int(n), I8: int8(n), I64: n, U64: u, U8: uint8(u), B: b, BO: b, Last: s2 + s1}
		if b {
			v.PS, v.PU = &s2, &u
		}
		want, _ := json.Marshal(v)
		if got, ok := marshalFlat(&v, nil); !ok || !bytes.Equal(got, want) {
			t.Fatalf("got %s (%v), want %s", got, ok, want)
		}
		checkView(t, &v, want)
		nv := outNamedFields{N: outNamed(s1), M: outNumName(s2), K: outNamedInt(n)}
		want, _ = json.Marshal(nv)
		if got, ok := marshalFlat(nv, nil); !ok || !bytes.Equal(got, want) {
			t.Fatalf("got %s (%v), want %s", got, ok, want)
		}
		checkView(t, nv, want)
		num := json.Number(s1)
		for _, v := range []any{flatNumber{N: num, S: s2}, flatNumberP{N: &num}} {
			want, wantErr := json.Marshal(v)
			got, err := marshal(v, nil)
			if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
				t.Fatalf("%#v: marshal gave %s, %v; json.Marshal %s, %v", v, got, err, want, wantErr)
			}
		}
	})
}

// checkView checks what marshalFlat says of the bytes it writes for v
// (want, json.Marshal's): the same bytes, the value json.Unmarshal decodes
// them into, and for each string field written, where its encoding lies.
func checkView(t *testing.T, v any, want []byte) {
	t.Helper()
	var view flatView
	got, ok := marshalFlat(v, &view)
	if !ok || !bytes.Equal(got, want) {
		t.Fatalf("%#v: with a view, got %s (%v), want %s", v, got, ok, want)
	}
	var val any
	if err := json.Unmarshal(want, &val); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(any(view.val), val) {
		t.Fatalf("%#v: view %#v, json.Unmarshal %#v", v, view.val, val)
	}
	strs := 0
	for _, s := range val.(map[string]any) {
		if _, ok := s.(string); ok {
			strs++
		}
	}
	if len(view.strs) != strs {
		t.Fatalf("%#v: %d strings in the view, %d decoded", v, len(view.strs), strs)
	}
	for _, f := range view.strs {
		if enc := AppendJSONString(nil, f.s); !bytes.Equal(got[f.start:f.end], enc) {
			t.Fatalf("%#v: %q is at [%d:%d] %s, encoded %s", v, f.s, f.start, f.end, got[f.start:f.end], enc)
		}
	}
}
