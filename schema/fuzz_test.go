package schema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate/tool"
)

// fuzzSchemas are the schemas the fuzz targets draw from.
var fuzzSchemas = []string{
	editSchema,
	benchSchema,
	`{"type":"object"}`,
	`{"type":"object","properties":{"n":{"type":["string","number"]},"b":{"type":"boolean"},"o":{"type":"object","properties":{"i":{"type":"integer","multipleOf":3}}},"l":{"type":"array","items":{"type":"integer","maximum":1e3}}}}`,
	`{"type":"object","properties":{"x":{"anyOf":[{"type":"integer"},{"type":"boolean"}]},"y":{"oneOf":[{"type":"string","maxLength":3},{"type":"string","pattern":"^a"}]},"z":{"not":{"type":"null"}},"c":{"const":1.0}},"additionalProperties":{"type":"array","minItems":1,"items":{"type":"object"}}}`,
	`{"$ref":"#/$defs/a","$defs":{"a":{"type":"object","allOf":[{"properties":{"n":{"$ref":"#/$defs/num"}}},{"properties":{"n":{"minimum":-5}}}],"properties":{"list":{"type":"array","items":{"$ref":"#/$defs/a"}}}},"num":{"type":"number"}}}`,
	`{"type":"object","properties":{"t":{"type":"array","prefixItems":[{"type":"integer"}],"items":{"type":"boolean"},"uniqueItems":true},"p":{"type":"object","patternProperties":{"^n":{"type":"number"}}}},"dependentRequired":{"a":["b"]}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"r":{"$ref":"#/definitions/o","type":"object","properties":{"q":{"type":"integer"}}},"m":{"type":"array","items":{"type":"integer"}}},"definitions":{"o":{"properties":{"q":{"type":"string"}}}}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"i":{"type":"integer"}},"properties":{"r":{"$ref":"#/definitions/i","properties":{"q":{"type":"integer"}}},"s":{"type":"array","items":[{"type":"number"}],"additionalItems":{"type":"string"}}}}`,
}

var fuzzArgs = []string{
	``, `{}`, `null`, `{"path":"a"}`, `{"path":"a","count":"42"}`, `{"count":"4.5"}`, `{"count":"1e400"}`,
	`{"n":"42","b":"true","o":"{\"i\":\"3\"}","l":"7"}`, `{"l":["1","2"],"b":"TRUE"}`, `{"l":"[1,2]"}`,
	`{"x":"1","y":"abcd","z":null,"c":1,"w":{"k":1}}`, `{"w":"[{}]","v":[{}]}`,
	`{"n":"-7","list":[{"n":"3"},{"n":"x"}]}`, `{"n":-9}`, `{"t":[1,true,true],"p":{"na":"1"},"a":1}`,
	`{"r":"5","s":["1","x"]}`, `{"r":5,"s":[1,"x"]}`, `{"edits":[{"old_string":1}],"tags":"x"}`,
	`{"r":{"q":"5"},"m":"3"}`, `{"r":"{\"q\":5}","m":["3"]}`,
	`{"mode":"a","ratio":"0.5","tags":["a","b","c"],"a/b":"false"}`, `{"path":"a","count":1.0}`,
}

func FuzzParseArguments(f *testing.F) {
	for _, a := range fuzzArgs {
		f.Add([]byte(a))
	}
	for _, a := range []string{`{"a":1,}`, `{"a":1}{"b":2}`, `{'a':1}`, `{"a":NaN}`, `"lone"`, `{"a":`, `[1]`, "{\"\xff\":1}", `{"a":"\ud800"}`, `{"a":1e999}`} {
		f.Add([]byte(a))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := ParseArguments(raw)
		if err != nil {
			if got != nil {
				t.Fatalf("both a value and an error: %v, %v", got, err)
			}
			if err.Type != tool.InvalidArguments && err.Type != tool.TooLarge || err.Message == "" || err.Suggestion == "" {
				t.Fatalf("unstructured error: %#v", err)
			}
			return
		}
		if got == nil {
			t.Fatal("neither a value nor an error")
		}
		if isBlankOrNull(raw) {
			if len(got) != 0 {
				t.Fatalf("blank input gave %v", got)
			}
			return
		}
		// Never an object for malformed input: encoding/json must agree and
		// decode the same value.
		if !json.Valid(raw) || !utf8.Valid(raw) {
			t.Fatalf("accepted malformed input %q", raw)
		}
		var want map[string]any
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("encoding/json refuses %q: %v", raw, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q decoded as %#v, encoding/json says %#v", raw, got, want)
		}
	})
}

func compileFuzzSchemas(tb testing.TB) []*Schema {
	out := make([]*Schema, len(fuzzSchemas))
	for i, s := range fuzzSchemas {
		out[i] = mustCompile(tb, s)
	}
	return out
}

func FuzzRepair(f *testing.F) {
	for i, a := range fuzzArgs {
		f.Add(uint8(i), a)
	}
	schemas := compileFuzzSchemas(f)
	f.Fuzz(func(t *testing.T, which uint8, raw string) {
		s := schemas[int(which)%len(schemas)]
		args, perr := ParseArguments([]byte(raw))
		if perr != nil {
			return
		}
		before, _ := json.Marshal(args)
		valid := s.Validate(args) == nil
		repaired, reps := s.Repair(args)
		if after, _ := json.Marshal(args); string(after) != string(before) {
			t.Fatalf("Repair modified its input: %s → %s", before, after)
		}
		if _, repairable, _ := s.ParseArguments([]byte(raw)); !repairable && len(reps) > 0 {
			t.Fatalf("Schema.ParseArguments says %s needs no repair, Repair makes %+v", raw, reps)
		}
		if valid && len(reps) > 0 {
			t.Fatalf("repaired valid arguments %s: %+v", raw, reps)
		}
		if valid && s.Validate(repaired) != nil {
			t.Fatalf("repair made valid arguments invalid: %s", raw)
		}
		out, err := json.Marshal(repaired)
		if err != nil || !json.Valid(out) {
			t.Fatalf("repaired arguments do not marshal: %v", err)
		}
		reparsed, perr := ParseArguments(out)
		if perr != nil {
			t.Fatalf("repaired arguments %s do not parse: %v", out, perr)
		}
		if again, reps2 := s.Repair(reparsed); len(reps2) > 0 {
			t.Fatalf("second repair of %s changed %+v (first: %+v) → %v", out, reps2, reps, again)
		}
		if len(reps) == 0 && string(out) != string(before) {
			t.Fatalf("no repairs reported but %s became %s", before, out)
		}
		for _, r := range reps {
			if r.Kind == "" || r.From == "" || r.To == "" {
				t.Fatalf("incomplete repair %+v", r)
			}
		}
	})
}

func FuzzFastAgrees(f *testing.F) {
	for i, a := range fuzzArgs {
		f.Add(uint8(i), a)
	}
	schemas := compileFuzzSchemas(f)
	f.Fuzz(func(t *testing.T, which uint8, raw string) {
		s := schemas[int(which)%len(schemas)]
		if s.fast == nil {
			return
		}
		args, perr := ParseArguments([]byte(raw))
		if perr != nil {
			return
		}
		if fast, full := s.fast.valid(args, 0), s.root.Validate(args) == nil; fast != full {
			t.Fatalf("args %s: fast validator says %v, full validator says %v", raw, fast, full)
		}
		if errs := s.Validate(args); (errs == nil) != (s.root.Validate(args) == nil) {
			t.Fatalf("args %s: Validate = %+v disagrees with the full validator", raw, errs)
		}
	})
}
