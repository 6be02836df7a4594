package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestRepair(t *testing.T) {
	const props = `{"type":"object","properties":{
		"n":{"type":"integer"},"x":{"type":"number"},"b":{"type":"boolean"},
		"o":{"type":"object","properties":{"n":{"type":"integer"}}},
		"a":{"type":"array","items":{"type":"integer"}},
		"files":{"type":"array","items":{"type":"string"}},
		"objs":{"type":"array","items":{"type":"object"}},
		"any":{"type":"array"},
		"s":{"type":"string"},
		"u":{"type":["string","number"]},
		"alt":{"anyOf":[{"type":"integer"},{"type":"boolean"}]},
		"nb":{"type":["integer","boolean"]},
		"edits":{"type":"array","items":{"type":"object","properties":{"line":{"type":"integer"}}}},
		"ref":{"$ref":"#/$defs/int"},
		"all":{"allOf":[{"$ref":"#/$defs/int"},{"minimum":0}]},
		"free":{}},
		"additionalProperties":{"type":"boolean"},
		"$defs":{"int":{"type":"integer"}}}`
	s := mustCompile(t, props)
	tests := []struct {
		name, in, want string
		repairs        []Repair
	}{
		{"integer", `{"n":"42"}`, `{"n":42}`, []Repair{{"/n", `"42"`, `42`, RepairStringToNumber}}},
		{"negative integer", `{"n":"-7"}`, `{"n":-7}`, []Repair{{"/n", `"-7"`, `-7`, RepairStringToNumber}}},
		{"big integer keeps its digits", `{"n":"123456789012345678901234567890"}`, `{"n":123456789012345678901234567890}`, []Repair{{"/n", `"123456789012345678901234567890"`, `123456789012345678901234567890`, RepairStringToNumber}}},
		{"number", `{"x":"4.5e1"}`, `{"x":4.5e1}`, []Repair{{"/x", `"4.5e1"`, `4.5e1`, RepairStringToNumber}}},
		{"true", `{"b":"true"}`, `{"b":true}`, []Repair{{"/b", `"true"`, `true`, RepairStringToBoolean}}},
		{"false", `{"b":"false"}`, `{"b":false}`, []Repair{{"/b", `"false"`, `false`, RepairStringToBoolean}}},
		{"JSON object text", `{"o":"{\"n\": \"3\"}"}`, `{"o":{"n":3}}`, []Repair{{"/o", `"{\"n\": \"3\"}"`, `{"n":"3"}`, RepairStringToObject}, {"/o/n", `"3"`, `3`, RepairStringToNumber}}},
		{"JSON array text", `{"a":"[1, 2]"}`, `{"a":[1,2]}`, []Repair{{"/a", `"[1, 2]"`, `[1,2]`, RepairStringToArray}}},
		{"scalar to array", `{"files":"a.txt"}`, `{"files":["a.txt"]}`, []Repair{{"/files", `"a.txt"`, `["a.txt"]`, RepairWrapInArray}}},
		{"integer to array", `{"a":7}`, `{"a":[7]}`, []Repair{{"/a", `7`, `[7]`, RepairWrapInArray}}},
		{"object to array", `{"objs":{"k":1}}`, `{"objs":[{"k":1}]}`, []Repair{{"/objs", `{"k":1}`, `[{"k":1}]`, RepairWrapInArray}}},
		{"object to array, then inside", `{"edits":{"line":"3"}}`, `{"edits":[{"line":3}]}`, []Repair{{"/edits", `{"line":"3"}`, `[{"line":"3"}]`, RepairWrapInArray}, {"/edits/0/line", `"3"`, `3`, RepairStringToNumber}}},
		{"any item type", `{"any":"x"}`, `{"any":["x"]}`, []Repair{{"/any", `"x"`, `["x"]`, RepairWrapInArray}}},
		{"nested pointer", `{"edits":[{"line":1},{"line":"2"}]}`, `{"edits":[{"line":1},{"line":2}]}`, []Repair{{"/edits/1/line", `"2"`, `2`, RepairStringToNumber}}},
		{"through $ref", `{"ref":"5"}`, `{"ref":5}`, []Repair{{"/ref", `"5"`, `5`, RepairStringToNumber}}},
		{"through allOf", `{"all":"5"}`, `{"all":5}`, []Repair{{"/all", `"5"`, `5`, RepairStringToNumber}}},
		{"additionalProperties", `{"zzz":"true"}`, `{"zzz":true}`, []Repair{{"/zzz", `"true"`, `true`, RepairStringToBoolean}}},
		{"union of scalar types", `{"nb":"true","n":"1"}`, `{"nb":true,"n":1}`, []Repair{{"/n", `"1"`, `1`, RepairStringToNumber}, {"/nb", `"true"`, `true`, RepairStringToBoolean}}},
		{"several", `{"n":"1","b":"false","files":"x"}`, `{"n":1,"b":false,"files":["x"]}`, []Repair{{"/b", `"false"`, `false`, RepairStringToBoolean}, {"/files", `"x"`, `["x"]`, RepairWrapInArray}, {"/n", `"1"`, `1`, RepairStringToNumber}}},

		// No repair.
		{"trailing garbage", `{"n":"42abc"}`, `{"n":"42abc"}`, nil},
		{"out of range", `{"x":"1e400"}`, `{"x":"1e400"}`, nil},
		{"fraction where integer wanted", `{"n":"42.0"}`, `{"n":"42.0"}`, nil},
		{"exponent where integer wanted", `{"n":"1e2"}`, `{"n":"1e2"}`, nil},
		{"spaces", `{"n":" 42"}`, `{"n":" 42"}`, nil},
		{"leading zero", `{"n":"042"}`, `{"n":"042"}`, nil},
		{"hex", `{"n":"0x2A"}`, `{"n":"0x2A"}`, nil},
		{"plus", `{"n":"+1"}`, `{"n":"+1"}`, nil},
		{"empty string", `{"n":""}`, `{"n":""}`, nil},
		{"upper-case TRUE", `{"b":"TRUE"}`, `{"b":"TRUE"}`, nil},
		{"Python True", `{"b":"True"}`, `{"b":"True"}`, nil},
		{"yes", `{"b":"yes"}`, `{"b":"yes"}`, nil},
		{"1 for boolean", `{"b":"1"}`, `{"b":"1"}`, nil},
		{"string where string is wanted", `{"s":"42"}`, `{"s":"42"}`, nil},
		{"union allows the string", `{"u":"42"}`, `{"u":"42"}`, nil},
		{"anyOf is ambiguous", `{"alt":"42"}`, `{"alt":"42"}`, nil},
		{"unconstrained", `{"free":"42"}`, `{"free":"42"}`, nil},
		{"JSON text of the wrong type", `{"o":"[1]"}`, `{"o":"[1]"}`, nil},
		{"malformed JSON text", `{"o":"{\"n\":"}`, `{"o":"{\"n\":"}`, nil},
		{"item type does not fit", `{"a":"x"}`, `{"a":"x"}`, nil},
		{"string of a number into integer array", `{"a":"7"}`, `{"a":"7"}`, nil},
		{"null is not wrapped", `{"files":null}`, `{"files":null}`, nil},
		{"number where boolean", `{"b":1}`, `{"b":1}`, nil},
		{"misspelled property is not renamed", `{"fles":"a.txt"}`, `{"fles":"a.txt"}`, nil},
		{"already valid", `{"n":1,"files":["a"],"o":{"n":2}}`, `{"n":1,"files":["a"],"o":{"n":2}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := parse(t, tt.in)
			before, _ := json.Marshal(args)
			got, reps := s.Repair(args)
			if !reflect.DeepEqual(got, parse(t, tt.want)) {
				b, _ := json.Marshal(got)
				t.Errorf("Repair(%s) = %s, want %s", tt.in, b, tt.want)
			}
			sortRepairs(reps)
			if !reflect.DeepEqual(reps, tt.repairs) {
				t.Errorf("repairs = %+v, want %+v", reps, tt.repairs)
			}
			if after, _ := json.Marshal(args); string(after) != string(before) {
				t.Errorf("Repair modified its input: %s", after)
			}
			if again, reps2 := s.Repair(got); reps2 != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("second Repair changed %+v", reps2)
			}
		})
	}
}

// sortRepairs orders repairs by pointer (map order is random).
func sortRepairs(r []Repair) {
	for i := 1; i < len(r); i++ {
		for j := i; j > 0 && r[j].Pointer < r[j-1].Pointer; j-- {
			r[j], r[j-1] = r[j-1], r[j]
		}
	}
}

func TestRepairDraft07RefSiblings(t *testing.T) {
	// In draft-07, keywords next to $ref are ignored (except type, enum and
	// const, which the validator still checks): repairing by them would
	// break valid arguments.
	s := mustCompile(t, `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{
		"r":{"$ref":"#/definitions/o","properties":{"q":{"type":"integer"}}}},
		"definitions":{"o":{"type":"object","properties":{"q":{"type":"string"}}}}}`)
	args := parse(t, `{"r":{"q":"5"}}`)
	if got, reps := s.Repair(args); reps != nil || !reflect.DeepEqual(got, args) {
		t.Errorf("Repair = %v, %+v; want no repair", got, reps)
	}
	if errs := s.Validate(args); errs != nil {
		t.Errorf("Validate = %+v, want valid", errs)
	}
}

func TestRepairThenValidate(t *testing.T) {
	s := mustCompile(t, editSchema)
	args, reps := s.Repair(parse(t, `{"path":"a","count":"3","tags":"x","a/b":"true"}`))
	if len(reps) != 3 {
		t.Fatalf("repairs = %+v, want 3", reps)
	}
	if errs := s.Validate(args); errs != nil {
		t.Errorf("repaired arguments are invalid: %+v", errs)
	}
	// A repair can still leave the value invalid; validation then reports
	// the repaired value.
	args, _ = s.Repair(parse(t, `{"path":"a","count":"0"}`))
	if errs := s.Validate(args); len(errs) != 1 || errs[0].Got != "integer 0" {
		t.Errorf("errors = %+v, want /count got integer 0", errs)
	}
}

func TestRepairPatternProperties(t *testing.T) {
	// A key a patternProperties pattern matches is not an additional
	// property: repairing it by additionalProperties would break valid
	// arguments. Which keys a pattern matches is not guessed: where an
	// object has patternProperties, additionalProperties repairs nothing.
	s := mustCompile(t, `{"type":"object","patternProperties":{"^n":{"type":"string"}},"additionalProperties":{"type":"number"}}`)
	for _, raw := range []string{`{"n1":"42"}`, `{"n1":"42","x":7}`} {
		args := parse(t, raw)
		if errs := s.Validate(args); errs != nil {
			t.Fatalf("%s: Validate = %+v, want valid", raw, errs)
		}
		if got, reps := s.Repair(args); reps != nil || !reflect.DeepEqual(got, args) {
			t.Errorf("%s: Repair = %v, %+v; want no repair", raw, got, reps)
		}
		if _, repairable, err := s.ParseArguments([]byte(raw)); err != nil || repairable {
			t.Errorf("%s: ParseArguments says repairable %v (%v); want false", raw, repairable, err)
		}
	}
	// Without patternProperties, additionalProperties still repairs.
	s = mustCompile(t, `{"type":"object","additionalProperties":{"type":"number"}}`)
	if got, reps := s.Repair(parse(t, `{"x":"7"}`)); len(reps) != 1 || reps[0].Pointer != "/x" {
		t.Errorf("Repair = %v, %+v; want x repaired to 7", got, reps)
	}
}

func TestRepairsSorted(t *testing.T) {
	// The repairs of one call come in the order of their pointers, not of
	// a walk over a map: the result's metadata (and the audit log) is the
	// same for the same call.
	s := mustCompile(t, `{"type":"object","additionalProperties":{"type":"integer"}}`)
	for range 20 {
		_, reps := s.Repair(parse(t, `{"e":"5","a":"1","d":"4","b":"2","c":"3"}`))
		var got []string
		for _, r := range reps {
			got = append(got, r.Pointer)
		}
		if want := []string{"/a", "/b", "/c", "/d", "/e"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("pointers %v, want %v", got, want)
		}
	}
}

func TestRepairsSameKeyInOrder(t *testing.T) {
	// A key two allOf members give a schema each is repaired twice ("5"
	// to 5 by the first, 5 to [5] by the second): with more repairs than
	// an insertion sort takes (12), an unstable sort put the second first
	// in some calls, so that one call got many different repair lists.
	var p1, p2, a []string
	for i := range 14 {
		k := fmt.Sprintf("k%02d", i)
		p1 = append(p1, `"`+k+`":{"type":"number"}`)
		p2 = append(p2, `"`+k+`":{"type":"array","items":{"type":"number"}}`)
		a = append(a, `"`+k+`":"5"`)
	}
	s := mustCompile(t, `{"type":"object","allOf":[{"properties":{`+strings.Join(p1, ",")+`}},{"properties":{`+strings.Join(p2, ",")+`}}]}`)
	args := "{" + strings.Join(a, ",") + "}"
	var first string
	for n := range 100 {
		_, reps := s.Repair(parse(t, args))
		if len(reps) != 28 {
			t.Fatalf("%d repairs, want 28: %+v", len(reps), reps)
		}
		for i := 0; i < len(reps); i += 2 {
			if reps[i].Pointer != reps[i+1].Pointer || reps[i].Kind != RepairStringToNumber || reps[i+1].Kind != RepairWrapInArray {
				t.Fatalf("call %d: repairs %d and %d out of order: %+v, %+v", n, i, i+1, reps[i], reps[i+1])
			}
		}
		if got := fmt.Sprint(reps); n == 0 {
			first = got
		} else if got != first {
			t.Fatalf("call %d: repairs %s, the first call's %s", n, got, first)
		}
	}
}
