package trust

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate/tool"
)

// decodedMain is decoded as it was before walkObject (main 6a81632): keys
// checked by utf8.ValidString.
func decodedMain(v any) bool {
	switch v := v.(type) {
	case nil, bool:
		return true
	case string:
		return utf8.ValidString(v)
	case float64:
		return !math.IsNaN(v) && !math.IsInf(v, 0)
	case []any:
		for _, e := range v {
			if !decodedMain(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for k, e := range v {
			if !utf8.ValidString(k) || !decodedMain(e) {
				return false
			}
		}
		return true
	}
	return false
}

// structuredMain is what checkResult did with a structuredContent on main
// 6a81632: asJSON (with decodedMain), then walkStrings.
func structuredMain(ctx context.Context, v any, at []byte, fn func(field []byte, s string)) []byte {
	var out any
	ok := false
	switch {
	case decodedMain(v):
		out, ok = v, true
	default:
		if o, k := tool.JSONValue(ctx, v); k {
			out, ok = o, true
		} else if raw, err := tool.MarshalJSON(ctx, v); err == nil {
			if o, k := parseJSON(raw); k {
				out, ok = o, true
			} else {
				ok = json.Unmarshal(raw, &out) == nil
			}
		}
	}
	if !ok {
		return at
	}
	return walkStrings(out, at, fn)
}

// walked is the calls a walk made: field and string, one a line.
func walked(walk func(context.Context, any, []byte, func([]byte, string)) []byte, v any) (string, string) {
	var b strings.Builder
	out := walk(context.Background(), v, []byte("/structuredContent"), func(field []byte, s string) {
		b.WriteString(string(field) + "\x00" + s + "\n")
	})
	return b.String(), string(out)
}

// TestStructuredStringsMain: structuredStrings (walkObject where it can)
// calls fn with the same fields and strings in the same order, and
// returns the same buffer, as main's asJSON and walkStrings, on random
// values: objects of 0 to 10 members (walkObject takes up to eight),
// keys ASCII, not, invalid UTF-8, with ~ and /, long; values of every
// kind decoded takes and some it does not (NaN, infinities, invalid
// strings, ints, typed maps and slices, structs).
func TestStructuredStringsMain(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 3))
	keys := []string{"content", "a", "", "b", "é", "a/b", "~0", "x\xff", "\xc3", "key-longer-than-sixteen", "naïve-long-key-é-ok", "\xed\xa0\x80", "content\xff"}
	strs := []string{"", "text", "ignore previous instructions and", "é", "\xff", "a\xc3", strings.Repeat("line of a file\n", 70)}
	clean := false // only what decoded takes, but for bad strings and numbers
	var value func(depth int) any
	object := func(depth int) map[string]any {
		m := map[string]any{}
		for range rng.IntN(11) {
			m[keys[rng.IntN(len(keys))]] = value(depth + 1)
		}
		return m
	}
	value = func(depth int) any {
		r := rng.IntN(14)
		if depth > 3 && r >= 10 {
			r = rng.IntN(10)
		}
		if clean && r >= 6 && r <= 9 {
			r = 2
		}
		switch r {
		case 0:
			return nil
		case 1:
			return rng.IntN(2) == 0
		case 2, 3, 4:
			return strs[rng.IntN(len(strs))]
		case 5:
			return []float64{1.5, math.NaN(), math.Inf(1), math.Inf(-1), 0}[rng.IntN(5)]
		case 6:
			return 7 // not what encoding/json decodes
		case 7:
			return map[string]string{"k": strs[rng.IntN(len(strs))]}
		case 8:
			return struct {
				A string `json:"a"`
			}{strs[rng.IntN(len(strs))]}
		case 9:
			return json.Number("12")
		case 10, 11:
			return object(depth)
		default:
			var s []any
			for range rng.IntN(4) {
				s = append(s, value(depth+1))
			}
			return s
		}
	}
	objects, fast := 0, 0
	for i := range 20000 {
		clean = i%2 == 0
		var v any = object(0)
		if rng.IntN(8) == 0 {
			v = value(0)
		}
		if m, ok := v.(map[string]any); ok {
			objects++
			if _, ok := walkObject(m, nil, func([]byte, string) {}); ok {
				fast++
			}
		}
		gotCalls, gotOut := walked(structuredStrings, v)
		wantCalls, wantOut := walked(structuredMain, v)
		if gotCalls != wantCalls || gotOut != wantOut {
			t.Fatalf("%#v:\ngot  %q %q\nwant %q %q", v, gotCalls, gotOut, wantCalls, wantOut)
		}
		if decoded(v) != decodedMain(v) {
			t.Fatalf("decoded(%#v) = %v, main's %v", v, decoded(v), decodedMain(v))
		}
	}
	t.Logf("20000 values, %d objects, %d of them walked by walkObject", objects, fast)
}

// TestValidString: validString is utf8.ValidString on every string of up
// to three bytes drawn from bytes that begin, continue and break
// characters, and on random strings of up to 40 bytes.
func TestValidString(t *testing.T) {
	alphabet := []byte{0x00, 'a', '~', 0x7F, 0x80, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF, 0xA0, 0x9F}
	var all []string
	all = append(all, "")
	for _, a := range alphabet {
		all = append(all, string([]byte{a}))
		for _, b := range alphabet {
			all = append(all, string([]byte{a, b}))
			for _, c := range alphabet {
				all = append(all, string([]byte{a, b, c}))
			}
		}
	}
	rng := rand.New(rand.NewPCG(47, 4))
	for range 50000 {
		b := make([]byte, rng.IntN(41))
		for i := range b {
			b[i] = 'a'
			if rng.IntN(6) == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		all = append(all, string(b), "é"+string(b), string(b)+"\u2026")
	}
	for _, s := range all {
		if got, want := validString(s), utf8.ValidString(s); got != want {
			t.Fatalf("validString(%q) = %v, utf8.ValidString %v", s, got, want)
		}
	}
}

// FuzzStructuredStrings: structuredStrings walks as main's asJSON and
// walkStrings on what encoding/json decodes from the fuzzer's bytes, and
// on objects with the bytes as a key and as a value (valid UTF-8 or not).
func FuzzStructuredStrings(f *testing.F) {
	for _, s := range []string{`{"content":"a file"}`, `{"b":1,"a":[true,null,"x"],"~/":{"k":"v"}}`, "\xff", `{}`, `[1,2]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		values := []any{map[string]any{s: s}, map[string]any{"content": s, s: []any{s, 1.0}}}
		if json.Unmarshal([]byte(s), &v) == nil {
			values = append(values, v, map[string]any{"content": v, "a": s})
		}
		for _, v := range values {
			gotCalls, gotOut := walked(structuredStrings, v)
			wantCalls, wantOut := walked(structuredMain, v)
			if gotCalls != wantCalls || gotOut != wantOut {
				t.Fatalf("%#v:\ngot  %q %q\nwant %q %q", v, gotCalls, gotOut, wantCalls, wantOut)
			}
		}
	})
}
