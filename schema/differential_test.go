package schema

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// The differential tests run the decoder, Repair and Validate against
// their copies in old_test.go (main before session 48) over many schemas
// (the fuzz schemas, the built-in tools', the Node filesystem server's
// and random ones) and many argument texts, and require the same answer:
// the same value or the same syntax error, the same repairs, the same
// field errors, the same error message for the model.

// toolSchemas returns the input schemas in testdata/tool_schemas.json:
// toolgate's built-in tools (toolgate tools --json) and the reference
// Node filesystem server's (its tools/list), by "set/tool".
func toolSchemas(tb testing.TB) map[string]string {
	tb.Helper()
	raw, err := os.ReadFile("testdata/tool_schemas.json")
	if err != nil {
		tb.Fatal(err)
	}
	var sets map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &sets); err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for set, tools := range sets {
		for name, s := range tools {
			out[set+"/"+name] = string(s)
		}
	}
	return out
}

// diffSchemas returns every schema the differential tests use, by name.
func diffSchemas(tb testing.TB, random int) map[string]*Schema {
	tb.Helper()
	out := map[string]*Schema{}
	for i, s := range fuzzSchemas {
		out[fmt.Sprintf("fuzz/%d", i)] = mustCompile(tb, s)
	}
	for name, s := range toolSchemas(tb) {
		out[name] = mustCompile(tb, s)
	}
	rng := rand.New(rand.NewPCG(48, 1))
	for i := 0; len(out) < random; i++ {
		g := schemaGen{rng: rng}
		raw := g.root()
		s, err := Compile(raw)
		if err != nil {
			continue
		}
		out[fmt.Sprintf("random/%d %s", i, raw)] = s
	}
	return out
}

// schemaGen makes random schemas from the keywords the repairer and the
// fast validator look at.
type schemaGen struct {
	rng   *rand.Rand
	draft bool // draft-07: $ref siblings are ignored
	names []string
}

var genTypes = []string{"string", "number", "integer", "boolean", "object", "array", "null"}

func (g *schemaGen) root() []byte {
	g.draft = g.rng.IntN(4) == 0
	g.names = []string{"a", "b", "path", "n", "x", "list", "o", "flag", "tail"}
	defs := map[string]any{"d0": g.node(2), "d1": g.node(2)}
	root := g.object(3)
	root["type"] = "object"
	if g.draft {
		root["$schema"] = "http://json-schema.org/draft-07/schema#"
		root["definitions"] = defs
	} else {
		root["$defs"] = defs
	}
	if g.rng.IntN(5) == 0 {
		root["allOf"] = []any{g.object(1), map[string]any{"$ref": g.defRef()}}
	}
	b, _ := json.Marshal(root)
	return b
}

func (g *schemaGen) defRef() string {
	if g.draft {
		return fmt.Sprintf("#/definitions/d%d", g.rng.IntN(2))
	}
	return fmt.Sprintf("#/$defs/d%d", g.rng.IntN(2))
}

func (g *schemaGen) object(depth int) map[string]any {
	m := map[string]any{}
	props := map[string]any{}
	for range g.rng.IntN(5) {
		props[g.names[g.rng.IntN(len(g.names))]] = g.node(depth - 1)
	}
	if len(props) > 0 || g.rng.IntN(2) == 0 {
		m["properties"] = props
	}
	var req []string
	for range g.rng.IntN(3) {
		req = append(req, g.names[g.rng.IntN(len(g.names))])
	}
	if len(req) > 0 {
		sort.Strings(req)
		m["required"] = compact(req)
	}
	switch g.rng.IntN(5) {
	case 0:
		m["additionalProperties"] = false
	case 1:
		m["additionalProperties"] = g.node(depth - 1)
	case 2:
		m["additionalProperties"] = true
	}
	if g.rng.IntN(8) == 0 {
		m["patternProperties"] = map[string]any{"^p": g.node(depth - 1)}
	}
	if g.rng.IntN(8) == 0 {
		m["minProperties"] = g.rng.IntN(3)
	}
	if g.rng.IntN(8) == 0 {
		m["maxProperties"] = g.rng.IntN(4)
	}
	return m
}

func compact(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func (g *schemaGen) node(depth int) any {
	if depth <= 0 {
		return map[string]any{"type": genTypes[g.rng.IntN(len(genTypes))]}
	}
	switch g.rng.IntN(16) {
	case 0:
		return map[string]any{}
	case 1:
		return g.rng.IntN(2) == 0
	case 2:
		m := map[string]any{"$ref": g.defRef()}
		if g.rng.IntN(2) == 0 {
			m["type"] = genTypes[g.rng.IntN(len(genTypes))]
		}
		if g.rng.IntN(3) == 0 {
			m["properties"] = map[string]any{"q": g.node(depth - 1)}
		}
		return m
	case 3:
		return map[string]any{"allOf": []any{g.node(depth - 1), g.node(depth - 1)}}
	case 4:
		return map[string]any{"anyOf": []any{g.node(depth - 1), g.node(depth - 1)}}
	case 5:
		m := g.object(depth)
		m["type"] = "object"
		return m
	case 6:
		m := map[string]any{"type": "array", "items": g.node(depth - 1)}
		if g.rng.IntN(3) == 0 {
			m["minItems"] = 1
		}
		return m
	case 7:
		if g.draft {
			return map[string]any{"type": "array", "items": []any{g.node(depth - 1)}, "additionalItems": g.node(depth - 1)}
		}
		return map[string]any{"type": "array", "prefixItems": []any{g.node(depth - 1)}, "items": g.node(depth - 1)}
	case 8:
		return map[string]any{"type": []string{genTypes[g.rng.IntN(len(genTypes))], genTypes[g.rng.IntN(len(genTypes))]}}
	case 9:
		return map[string]any{"enum": []any{"a", 1, true, nil}}
	case 10:
		return map[string]any{"type": "integer", "minimum": g.rng.IntN(5) - 2, "maximum": 50}
	case 11:
		return map[string]any{"type": "string", "minLength": 1, "maxLength": 6, "pattern": "^[a-z0-9/]*$"}
	case 12:
		return map[string]any{"const": 1.0}
	case 13:
		return map[string]any{"not": g.node(depth - 1)}
	}
	return map[string]any{"type": genTypes[g.rng.IntN(len(genTypes))]}
}

// argGen makes argument texts: mostly objects over the schemas' names, with
// values that the repairs look for ("42", "true", JSON in a string, a
// scalar where an array may be wanted) and some that are simply wrong.
type argGen struct {
	rng   *rand.Rand
	names []string // argNames when nil
}

// schemaNames lists the property names anywhere in s, and the required
// ones twice (so that generated objects often have them).
func schemaNames(s *Schema) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range s.byLoc {
		for k := range n.Properties {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
		out = append(out, n.Required...)
	}
	sort.Strings(out)
	return out
}

var argNames = []string{"a", "b", "path", "n", "x", "list", "o", "flag", "tail", "head", "count", "mode",
	"edits", "paths", "content", "q", "pa", "zzz", "command", "offset", "limit", "sortBy", "excludePatterns"}

func (g argGen) object(depth int) string {
	var b strings.Builder
	b.WriteByte('{')
	seen := map[string]bool{}
	names := g.names
	if len(names) == 0 {
		names = argNames
	}
	for i := range g.rng.IntN(5) {
		k := names[g.rng.IntN(len(names))]
		if seen[k] {
			continue
		}
		seen[k] = true
		if i > 0 && b.Len() > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", k, g.value(depth-1))
	}
	b.WriteByte('}')
	return b.String()
}

func (g argGen) value(depth int) string {
	scalars := []string{`"42"`, `"-7"`, `"4.5"`, `"1e400"`, `"true"`, `"false"`, `"TRUE"`, `"a.txt"`, `""`,
		`"{\"q\":\"3\"}"`, `"[1,\"2\"]"`, `"[]"`, `"{}"`, `42`, `-3`, `0`, `1.0`, `2.5e1`, `true`, `false`, `null`,
		`"src/main.go"`, `"a/b/c/d/e/f/g/h/i"`, `"pattern"`, `"é ünïcødé"`, `"line\nbreak\t\"quoted\" \\ \u00e9"`, `"pa"`,
		`123456789012345678901234567890`, `"abcdefghijklmnopqrstuvwxyz0123456789"`}
	if depth > 0 {
		switch g.rng.IntN(6) {
		case 0:
			return g.object(depth)
		case 1:
			var items []string
			for range g.rng.IntN(4) {
				items = append(items, g.value(depth-1))
			}
			return "[" + strings.Join(items, ",") + "]"
		}
	}
	return scalars[g.rng.IntN(len(scalars))]
}

// sameRepair checks Repair against the old one on args.
func sameRepair(t *testing.T, name string, s *Schema, raw string, args map[string]any) map[string]any {
	t.Helper()
	got, reps := s.Repair(args)
	want, wantReps := s.oldRepair(args)
	// The old Repair listed its repairs in the order of a walk over maps,
	// which Go randomises: compare them sorted, stably (a value repaired
	// twice keeps its repairs in the order made, as Repair lists them).
	byPointer := func(r []Repair) {
		sort.SliceStable(r, func(i, j int) bool { return r[i].Pointer < r[j].Pointer })
	}
	byPointer(reps)
	byPointer(wantReps)
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(reps, wantReps) {
		t.Fatalf("%s, %s: Repair gives %v %+v, the old Repair %v %+v", name, raw, got, reps, want, wantReps)
	}
	if s.repair != nil {
		if n, o := needsRepair(s.repair, args, 0), oldNeedsRepair(s.repair, args, 0); n != o {
			t.Fatalf("%s, %s: needsRepair %v, the old one %v", name, raw, n, o)
		}
	}
	jg, _ := json.Marshal(reps)
	jw, _ := json.Marshal(wantReps)
	if string(jg) != string(jw) {
		t.Fatalf("%s, %s: repairs %s, the old ones %s", name, raw, jg, jw)
	}
	return got
}

// sameValidate checks Validate against the old one on args.
func sameValidate(t *testing.T, name string, s *Schema, raw string, args map[string]any) {
	t.Helper()
	got, want := s.Validate(args), s.oldValidate(args)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s, %s: Validate gives %+v, the old Validate %+v", name, raw, got, want)
	}
	if s.fast != nil {
		if n, o := s.fast.valid(args, 0), s.fast.oldValid(args, 0); n != o {
			t.Fatalf("%s, %s: fast valid %v, the old one %v", name, raw, n, o)
		}
	}
	if e, o := ValidationError("t", got), ValidationError("t", want); !reflect.DeepEqual(e, o) {
		t.Fatalf("%s, %s: validation error %v, the old one %v", name, raw, e, o)
	}
}

// decodeSchemas are schemas whose ParseArguments sameDecode compares with
// the package's.
var decodeSchemas = func() []*Schema {
	var out []*Schema
	for _, raw := range []string{editSchema, `{"type":"object","additionalProperties":{"type":"integer"}}`, `{"type":"array"}`} {
		s, err := Compile(json.RawMessage(raw))
		if err != nil {
			panic(err)
		}
		out = append(out, s)
	}
	return out
}()

// sameDecode checks the decoder against the old one on raw.
func sameDecode(t *testing.T, raw []byte) {
	t.Helper()
	v, objects, err := decodeCounting(raw, MaxArgumentDepth)
	ov, oobjects, oerr := oldDecodeCounting(raw, MaxArgumentDepth)
	if !reflect.DeepEqual(v, ov) || objects != oobjects || !reflect.DeepEqual(err, oerr) {
		t.Fatalf("decoding %q: %#v %d %+v; the old decoder: %#v %d %+v", raw, v, objects, err, ov, oobjects, oerr)
	}
	for _, s := range decodeSchemas {
		sa, _, serr := s.ParseArguments(raw)
		pa, perr := ParseArguments(raw)
		if !reflect.DeepEqual(sa, pa) || !reflect.DeepEqual(serr, perr) {
			t.Fatalf("Schema.ParseArguments(%q): %v %v; ParseArguments: %v %v", raw, sa, serr, pa, perr)
		}
	}
	a, aerr := ParseArguments(raw)
	if aerr != nil {
		// The model-facing error is made from the syntax error (compared
		// above) or from the value: compare the whole of it too.
		var want error
		if oerr != nil {
			want = syntaxToolError(raw, oerr)
		} else if _, ok := ov.(map[string]any); !ok && !isBlankOrNull(raw) {
			want = notObjectError(ov)
		}
		if want != nil && aerr.Error() != want.Error() {
			t.Fatalf("ParseArguments(%q): %v, the old decoder's: %v", raw, aerr, want)
		}
		return
	}
	_ = a
}

func TestDifferentialArguments(t *testing.T) {
	random := 200
	if testing.Short() {
		random = 60
	}
	schemas := diffSchemas(t, random)
	names := make([]string, 0, len(schemas))
	for n := range schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	rng := rand.New(rand.NewPCG(48, 2))
	gen := argGen{rng: rng}
	texts := append([]string{}, fuzzArgs...)
	for range 800 {
		texts = append(texts, gen.object(3))
	}
	for _, raw := range texts {
		sameDecode(t, []byte(raw))
	}
	cases, valid, changed, unrepairable := 0, 0, 0, 0
	check := func(name string, s *Schema, raw string, args map[string]any) {
		t.Helper()
		// Schema.ParseArguments: the same arguments, and repairable
		// whenever the old Repair repairs something.
		sargs, repairable, serr := s.ParseArguments([]byte(raw))
		if serr != nil || !reflect.DeepEqual(sargs, args) {
			t.Fatalf("%s, %s: Schema.ParseArguments gives %v, %v; ParseArguments %v", name, raw, sargs, serr, args)
		}
		if _, reps := s.oldRepair(args); len(reps) > 0 && !repairable {
			t.Fatalf("%s, %s: not repairable, but the old Repair makes %+v", name, raw, reps)
		}
		if !repairable {
			unrepairable++
		}
		sameValidate(t, name, s, raw, args)
		repaired := sameRepair(t, name, s, raw, args)
		sameValidate(t, name, s, raw+" (repaired)", repaired)
		cases++
		if s.Validate(args) == nil {
			valid++
			// Repair's promise: valid arguments stay valid.
			if err := s.Validate(repaired); err != nil {
				t.Fatalf("%s, %s: valid, but repaired to %v, which is not: %v", name, raw, repaired, err)
			}
		}
		if !reflect.DeepEqual(repaired, args) {
			changed++
		}
	}
	for _, name := range names {
		s := schemas[name]
		random := strings.HasPrefix(name, "random/")
		for i, raw := range texts {
			if random && i%3 != len(name)%3 {
				continue // a third of the texts for each random schema
			}
			if args, perr := ParseArguments([]byte(raw)); perr == nil {
				check(name, s, raw, args)
			}
		}
		// Objects over the schema's own property names.
		own := argGen{rng: rng, names: schemaNames(s)}
		for range 200 {
			raw := own.object(3)
			sameDecode(t, []byte(raw))
			args, perr := ParseArguments([]byte(raw))
			if perr != nil {
				t.Fatalf("generated arguments %s: %v", raw, perr)
			}
			check(name, s, raw, args)
		}
	}
	t.Logf("%d schemas, %d argument texts, %d (schema, arguments) pairs: %d valid, %d repaired, %d not repairable by Schema.ParseArguments",
		len(schemas), len(texts), cases, valid, changed, unrepairable)
}

// TestDifferentialStrings decodes strings with each kind of byte the
// string scanner stops at (quote, backslash, control, non-ASCII, invalid
// UTF-8) at every position of strings of every length up to 40, cut off
// and whole, as keys and as values, against the old decoder.
func TestDifferentialStrings(t *testing.T) {
	specials := []string{`"`, `\`, `\n`, `\u00e9`, `\ud83d\ude00`, `\ud800`, "\x01", "\x1f", "\x7f", "é", "😀", "\xff", "\xc3", "\xe2\x82", " ", "~"}
	for n := 0; n <= 40; n++ {
		for at := 0; at <= n; at++ {
			for _, sp := range specials {
				body := strings.Repeat("a", at) + sp + strings.Repeat("b", n-at)
				for _, raw := range []string{
					`{"k":"` + body + `"}`, `{"` + body + `":1}`, `["` + body + `"]`, `"` + body,
					`{"k":"` + body, `{"k":"` + body + `","k2":"` + body + `"}`,
				} {
					sameDecode(t, []byte(raw))
				}
			}
		}
	}
}

// FuzzDecoderAgrees compares the decoder with the old one on any text.
func FuzzDecoderAgrees(f *testing.F) {
	for _, a := range fuzzArgs {
		f.Add([]byte(a))
	}
	f.Add([]byte(`{"k":"abcdefgh\"ijklmnop\\qrst\u00e9uvwx\u0001"}`))
	f.Fuzz(func(t *testing.T, raw []byte) { sameDecode(t, raw) })
}
