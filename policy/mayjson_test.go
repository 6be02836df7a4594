package policy

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// jsonRedactors are the secret sets MayMatchJSON is held to: the defaults,
// and sets with literals it must not trust (a quote, only bytes found
// outside strings, a pattern without literals) beside ones it may.
func jsonRedactors(t testing.TB) []*Redactor {
	redactorsOnce.Do(func() { redactors, redactorsErr = newJSONRedactors() })
	if redactorsErr != nil {
		t.Fatal(redactorsErr)
	}
	return redactors
}

var (
	redactorsOnce sync.Once
	redactors     []*Redactor
	redactorsErr  error
)

func newJSONRedactors() ([]*Redactor, error) {
	var out []*Redactor
	for _, set := range [][]SecretPattern{
		DefaultSecrets(),
		{{"quoted", `"token":"(?P<secret>[a-z]{8,})"`}, {"aws", `AKIA[0-9A-Z]{16}`}},
		{{"number", `100[0-9]*`}, {"aws", `AKIA[0-9A-Z]{16}`}},
		{{"words", `(?i)true,false`}, {"aws", `AKIA[0-9A-Z]{16}`}},
		{{"digits", `[0-9]{6}`}},
		{{"colon", `(?i)x:y`}, {"less", `a<b`}, {"kelvin", `(?i)kk`}, {"one", `%`}},
		{{"tabbed", "IOS\tFOD"}, {"aws", `AKIA[0-9A-Z]{16}`}},                    // a literal the encoding escapes
		{{"nl", `nfoo\d`}, {"tab", `(?i)Tab[0-9]`}, {"aws", `AKIA[0-9A-Z]{16}`}}, // literals an escape's letter may start
	} {
		r, err := NewRedactor(set)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// sameAsEncoded fails when MayMatchJSON rules out a secret in the compact
// encoding of the value raw is the JSON of, and the prefilter finds a
// literal in that encoding, or RedactJSON replaces anything in it: the
// reference is what the engine did before, encode and search. It asks
// with no quiet texts, and with those of v's strings Quiet finds quiet
// (as the engine gives its text blocks), a few and many, and counts the
// answers false.
func sameAsEncoded(t testing.TB, raw string) (ruledOut int) {
	return sameAsEncodedBy(t, jsonRedactors(t), raw)
}

func sameAsEncodedBy(t testing.TB, redactors []*Redactor, raw string) (ruledOut int) {
	var v any
	if json.Unmarshal([]byte(raw), &v) != nil {
		return 0
	}
	enc, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	for i, r := range redactors {
		var quiet []string
		for _, s := range stringsOf(v) {
			if r.Quiet(s) {
				quiet = append(quiet, s)
			}
		}
		// Five times over, they are more than a few: looked up by a map.
		for _, q := range [][]string{nil, quiet, slices.Repeat(quiet, 5)} {
			if r.MayMatchJSON([]byte(raw), v, q) {
				continue
			}
			ruledOut++
			may := make([]bool, len(r.patterns))
			r.filter.scan(string(enc), may)
			for p, m := range may {
				if m || len(r.patterns[p].lits) == 0 {
					t.Errorf("set %d: MayMatchJSON(%s, %q) is false, but the prefilter finds %s in its encoding %s", i, raw, q, r.patterns[p].name, enc)
				}
			}
			if out, n, _ := r.RedactJSON(string(enc)); n > 0 || out != string(enc) {
				t.Errorf("set %d: MayMatchJSON(%s, %q) is false, but RedactJSON changes its encoding to %s", i, raw, q, out)
			}
		}
	}
	return ruledOut
}

// stringsOf is every string of v, keys and values.
func stringsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, stringsOf(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for k, e := range v {
			out = append(append(out, k), stringsOf(e)...)
		}
		return out
	}
	return nil
}

// TestMayMatchJSON: where the bytes an upstream sent and their encoding
// differ (escapes, key order, white space, numbers, HTML escaping, bad
// UTF-8), the bytes rule out a secret only when the encoding holds none.
func TestMayMatchJSON(t *testing.T) {
	r := jsonRedactors(t)[0]
	for raw, want := range map[string]bool{
		`{"content":"line 1 of a small file\nline \"2\"\t\\\r"}`: false,
		`{"k":"a\bb"}`:     true, // an escape written otherwise
		`{"k":"a\u0001b"}`: true,
		`{"k": [1, 2.5e3, true, null, "plain"], "j" : {}}`: false,
		`{"k":"AKIAIOSFODNN7EXAMPLE"}`:                     true,
		`{"k":"\u0041KIAIOSFODNN7EXAMPLE"}`:                true, // an escape
		`{"k":"AK\/IA"}`:                                   true,
		`{"k":"a<b"}`:                                      true, // \u003c in the encoding
		`{"k":"a&b"}`:                                      true,
		`{"k":"a>b"}`:                                      true,
		"{\"k\":\"a\u2028b\"}":                             true,
		"{\"k\":\"\xffAKIA\"}":                             true, // bad UTF-8
		`{"k":"é"}`:                                        true, // (?i) and a byte outside ASCII
		`{"url":"https://example.org"}`:                    true,
		`{"password" : 1}`:                                 true,
		`"text"`:                                           false,
		`12345`:                                            false,
	} {
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			t.Fatal(err)
		}
		if got := r.MayMatchJSON([]byte(raw), v, nil); got != want {
			t.Errorf("MayMatchJSON(%s) = %v, want %v", raw, got, want)
		}
		sameAsEncoded(t, raw)
	}
	// Sets it cannot trust: every text may match.
	for i, r := range append(jsonRedactors(t)[1:5], jsonRedactors(t)[6]) {
		if !r.MayMatchJSON([]byte(`"x"`), "x", []string{"x"}) {
			t.Errorf("set %d ruled out a secret: a literal with a quote, or only bytes found outside strings, or none, or written otherwise", i+1)
		}
	}
	var none *Redactor
	if none.MayMatchJSON([]byte(`"AKIAIOSFODNN7EXAMPLE"`), "AKIAIOSFODNN7EXAMPLE", nil) || (&Redactor{}).MayMatchJSON([]byte(`"x"`), "x", nil) {
		t.Error("a Redactor without patterns may match")
	}
	// Random values written as an upstream might: spaced, keys repeated,
	// characters escaped, numbers in other forms, pieces of secrets.
	rng := rand.New(rand.NewPCG(30, 39))
	ruledOut := 0
	for range 20000 {
		var b strings.Builder
		randomJSON(rng, &b, 0)
		ruledOut += sameAsEncoded(t, b.String())
	}
	if ruledOut < 1000 {
		t.Errorf("only %d random values were ruled out: the test says little", ruledOut)
	}
}

var jsonPieces = []string{
	"AKIA", "AK", "IA", "IOSFODNN7EXAMPLE", "://", "x:y", "x", ":", "y", "https", "pass", "word", "password", "=",
	"hunter2hunter2", "a<b", "<", ">", "&", "%", "true,false", "true", ",", "100", "1", "0", "e", "E", "-", "kk", "\u212a",
	"k", "é", "\u2028", "token", "IOS", "FOD", `\t`, `\"`, `\\`, `\u0041`, `\u003c`, `\/`, `\n`, `\u00e9`, `\u212a`, "\xff", " ", "{", "}", "[", "]",
	`\r`, "k_live_abcdefghijklmnopqrst", "rk_live_", "foo1", "ab1", "Tab1", strings.Repeat("long text without a literal ", 4),
}

func randomJSON(rng *rand.Rand, b *strings.Builder, depth int) {
	space := func() {
		if rng.IntN(4) == 0 {
			b.WriteString([]string{" ", "\n", "\t ", "\r\n"}[rng.IntN(4)])
		}
	}
	str := func() {
		b.WriteByte('"')
		for range rng.IntN(6) {
			b.WriteString(jsonPieces[rng.IntN(len(jsonPieces))])
		}
		b.WriteByte('"')
	}
	space()
	switch k := rng.IntN(8); {
	case k < 2 && depth < 4:
		b.WriteByte('{')
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			space()
			if rng.IntN(4) == 0 {
				b.WriteString(`"k"`) // a key again
			} else {
				str()
			}
			space()
			b.WriteByte(':')
			randomJSON(rng, b, depth+1)
		}
		b.WriteByte('}')
	case k < 3 && depth < 4:
		b.WriteByte('[')
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			randomJSON(rng, b, depth+1)
		}
		b.WriteByte(']')
	case k < 6:
		str()
	case k < 7:
		b.WriteString([]string{"1e2", "100", "1E+2", "-0.0", "1000000", "0.1", "1e21", "100e-2", "123456"}[rng.IntN(9)])
	default:
		b.WriteString([]string{"true", "false", "null"}[rng.IntN(3)])
	}
	space()
}

// FuzzMayMatchJSON: any JSON text, the same property as TestMayMatchJSON.
func FuzzMayMatchJSON(f *testing.F) {
	for _, s := range []string{`{"k":"AKIA"}`, `{"a" : [1e2, "x:y"]}`, `"\u0041KIA"`, `{"k":"a<b"}`, "\"\u2028\"", `[true,false]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		sameAsEncoded(t, raw)
	})
}

// FuzzMayMatchJSONPattern: any pattern (as it is and ignoring case,
// beside the defaults) and any JSON text, the same property.
func FuzzMayMatchJSONPattern(f *testing.F) {
	f.Add(`nfoo\d`, "\"\\nfoo1\"")
	f.Add(`(?i)tab\d`, `{"k":"\tab1"}`)
	f.Add(`rk_live_[a-z]+`, `["\rk_live_abc"]`)
	f.Add(`AKIA[A-Z]{4}`, `{"AKIAABCD":1}`)
	f.Fuzz(func(t *testing.T, pattern, raw string) {
		var rs []*Redactor
		for _, p := range []string{pattern, `(?i)` + pattern} {
			r, err := NewRedactor(append(DefaultSecrets(), SecretPattern{Name: "p", Regexp: p}))
			if err != nil {
				return
			}
			rs = append(rs, r)
		}
		sameAsEncodedBy(t, rs, raw)
	})
}

// TestQuietSet: the quiet texts, few (compared one by one) or many (in a
// map), hold each of theirs and nothing else, the empty string included.
func TestQuietSet(t *testing.T) {
	for _, n := range []int{0, 1, 4, 5, 1000} {
		var quiet []string
		for i := range n {
			quiet = append(quiet, fmt.Sprintf("text %04d", i))
		}
		set := newQuietSet(quiet)
		if (set.many != nil) != (n > 4) {
			t.Errorf("%d texts: in a map %v", n, set.many != nil)
		}
		for _, q := range quiet {
			if !set.has(q) || set.has(q+" ") || set.has(q[:len(q)-1]) {
				t.Errorf("%d texts: has(%q) is not exact", n, q)
			}
		}
		if set.has("") || set.has(fmt.Sprintf("text %04d", n)) {
			t.Errorf("%d texts: has another text", n)
		}
	}
}
