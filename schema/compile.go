package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Provider names a function-calling API whose schema dialect CompileFor
// targets.
type Provider string

// The providers CompileFor knows.
const (
	// OpenAIStrict is OpenAI function calling (Chat Completions and
	// Responses) with "strict": true: Structured Outputs' subset of JSON
	// Schema, every object closed and every property required.
	OpenAIStrict Provider = "openai-strict"
	// OpenAI is OpenAI function calling without strict mode.
	OpenAI Provider = "openai"
	// Anthropic is the Messages API's input_schema.
	Anthropic Provider = "anthropic"
	// Gemini is Gemini's functionDeclarations parameters: a subset of the
	// OpenAPI 3.0 schema object.
	Gemini Provider = "gemini"
)

// Providers lists the providers CompileFor knows.
func Providers() []Provider { return []Provider{OpenAIStrict, OpenAI, Anthropic, Gemini} }

// ErrUnsupported is wrapped by the errors of CompileFor when a schema is
// beyond what a provider accepts (over OpenAI's strict-mode limits, say).
var ErrUnsupported = errors.New("schema not supported by the provider")

// Limits of OpenAI's strict mode (Structured Outputs), as published.
const (
	StrictMaxProperties  = 5000    // object properties in the whole schema
	StrictMaxNesting     = 10      // levels of nested objects
	StrictMaxEnumValues  = 1000    // enum values in the whole schema
	StrictMaxStringBytes = 120_000 // property names, definition names, enum and const values together
)

// GeminiMaxInlineDepth bounds how many references CompileFor(Gemini)
// inlines along one path (Gemini has no $ref); a recursive reference is cut
// there.
const GeminiMaxInlineDepth = 8

// Compiled is a tool's input schema compiled for a provider.
type Compiled struct {
	Provider Provider
	// Schema is what the provider is sent as the tool's parameters
	// (OpenAI's parameters, Anthropic's input_schema, Gemini's
	// parameters). It is nil for Gemini when the tool takes no parameters:
	// Gemini refuses an object without properties, so the declaration
	// leaves parameters out.
	Schema json.RawMessage
	// Changes lists what compiling changed, with pointers into the
	// normalized input schema.
	Changes []Change
	plan    *plan
}

// CompileFor normalizes a tool's input schema (see Normalize) and compiles
// it for provider p, reporting every change. The compiled schema is what
// the model sees; the tool's own schema still validates the call, so
// CompileFor may loosen (a keyword the provider lacks moves into the
// description, a oneOf becomes an anyOf) but never has a model send what
// the tool cannot take back: where the compiled shape differs, the
// Compiled's ToolArguments maps the model's arguments back.
//
//   - OpenAIStrict: every object closed (additionalProperties: false) and
//     every property required; an optional property becomes nullable
//     (type [T, "null"], or an anyOf with {"type": "null"}) and a null sent
//     for it is removed again by ToolArguments; keywords outside the strict
//     subset (minLength, maxLength, default, uniqueItems, patternProperties,
//     allOf, not, if/then/else, …, formats outside date-time, time, date,
//     duration, email, hostname, ipv4, ipv6, uuid) move into the
//     description; oneOf becomes anyOf; a value strict mode cannot describe
//     (no type at all, an object without properties, i.e. a free-form map)
//     becomes a string holding JSON, which ToolArguments decodes; $defs and
//     $ref (recursion too) are kept; the root is always an object. Over
//     the published limits (StrictMaxProperties, …) it is an error
//     wrapping ErrUnsupported.
//   - OpenAI and Anthropic: JSON Schema as it is, with a root of type
//     object with properties (a root anyOf, oneOf, allOf or $ref is
//     flattened into one object: both APIs refuse them at the top).
//   - Gemini: the OpenAPI subset: type names in capitals, nullable instead
//     of null types, enum only for strings, formats enum and date-time
//     (string), float and double (number), int32 and int64 (integer), no
//     additionalProperties; references inlined, GeminiMaxInlineDepth deep
//     at most, a recursive one cut there into a JSON string; property
//     names Gemini refuses renamed (and renamed back by ToolArguments).
//
// Hostile schemas are refused as by Compile (size, depth, remote
// references, cycles).
func CompileFor(p Provider, input json.RawMessage) (*Compiled, error) {
	if !slices.Contains(Providers(), p) {
		return nil, fmt.Errorf("%w: unknown provider %q (known: openai-strict, openai, anthropic, gemini)", ErrUnsupported, p)
	}
	doc, changes, err := normalizeDoc(input, false)
	if err != nil {
		return nil, err
	}
	l := &lowerer{p: p, root: doc, changes: changes, byPtr: map[string]*plan{}}
	out, pl, err := l.lowerRoot()
	if err != nil {
		return nil, err
	}
	l.link()
	c := &Compiled{Provider: p, Changes: l.changes}
	if l.needPlan {
		c.plan = pl
	}
	if out == nil {
		return c, nil
	}
	if p == OpenAIStrict {
		if err := checkStrictLimits(out); err != nil {
			return nil, err
		}
	}
	b, err := marshalSchema(out)
	if err != nil {
		return nil, err
	}
	check := b
	if p == Gemini {
		if check, err = marshalSchema(geminiToJSONSchema(out)); err != nil {
			return nil, err
		}
	}
	if _, err := Compile(check); err != nil {
		return nil, fmt.Errorf("the schema compiled for %s is not valid: %w", p, err)
	}
	c.Schema = b
	return c, nil
}

// ToolArguments maps arguments a model sent against the compiled schema
// back to the tool's shape: a null sent for a property that was optional
// is removed, a JSON string sent for a value the provider could not
// describe is decoded (a string that is not JSON stays as it is, for the
// tool's validation to report), a renamed property gets its name back. args
// is not modified; when nothing needs mapping, args itself is returned.
func (c *Compiled) ToolArguments(args map[string]any) map[string]any {
	if c == nil || c.plan == nil || args == nil {
		return args
	}
	out, _ := apply(c.plan, args, 0).(map[string]any)
	return out
}

// plan says how to map one value of the compiled schema back.
type plan struct {
	decode   bool              // a JSON-encoded string stands for the value
	optional map[string]bool   // tool property names whose null means absent
	rename   map[string]string // provider property name → tool property name
	props    map[string]*plan  // by provider property name
	items    *plan
	anyOf    []branch
	ref      string // a $ref to link
	target   *plan
}

// branch is one alternative of an anyOf: the JSON kinds it takes and, for
// objects, its property names.
type branch struct {
	kinds []string
	props map[string]bool
	plan  *plan
}

func apply(p *plan, v any, depth int) any {
	for i := 0; p != nil && p.target != nil && i < 64; i++ {
		p = p.target
	}
	if p == nil || depth > MaxArgumentDepth {
		return v
	}
	if p.decode {
		if s, ok := v.(string); ok {
			if parsed, err := decodeJSON([]byte(s), MaxArgumentDepth); err == nil {
				return parsed
			}
		}
		return v
	}
	if len(p.anyOf) > 0 {
		kind := jsonKind(v)
		for _, b := range p.anyOf {
			if !slices.Contains(b.kinds, kind) && !(kind == "integer" && slices.Contains(b.kinds, "number")) && len(b.kinds) > 0 {
				continue
			}
			if m, ok := v.(map[string]any); ok && b.props != nil {
				fits := true
				for k := range m {
					fits = fits && b.props[k]
				}
				if !fits {
					continue
				}
			}
			return apply(b.plan, v, depth+1)
		}
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			name := k
			if t, ok := p.rename[k]; ok {
				name = t
			}
			if val == nil && p.optional[name] {
				continue
			}
			out[name] = apply(p.props[k], val, depth+1)
		}
		return out
	case []any:
		if p.items == nil {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = apply(p.items, e, depth+1)
		}
		return out
	}
	return v
}

// lowerer compiles a normalized schema for one provider.
type lowerer struct {
	p        Provider
	root     map[string]any
	changes  []Change
	byPtr    map[string]*plan // plans of lowered nodes by pointer, for $ref
	refs     []*plan
	stack    []string // references being inlined (Gemini)
	nodes    int      // nodes written (Gemini inlining can multiply them)
	needPlan bool
}

func (l *lowerer) add(ptr, change, reason string) {
	l.changes = append(l.changes, Change{Pointer: ptr, Change: change, Reason: reason})
}

func (l *lowerer) strict() bool  { return l.p == OpenAIStrict }
func (l *lowerer) gemini() bool  { return l.p == Gemini }
func (l *lowerer) limited() bool { return l.p == OpenAIStrict || l.p == Gemini }

// lowerRoot compiles the root, which every provider wants as an object.
func (l *lowerer) lowerRoot() (map[string]any, *plan, error) {
	root := l.flattenRoot(cloneMap(l.root))
	if props, _ := root["properties"].(map[string]any); len(props) == 0 && l.limited() {
		if l.gemini() {
			l.add("", "parameters left out", "Gemini refuses an object without properties; the tool takes no named parameters")
			return nil, nil, nil
		}
		if root["additionalProperties"] != false {
			l.add("", `"additionalProperties": false`, "strict mode closes every object; the tool takes no named parameters")
		}
		root["additionalProperties"] = false
	}
	var defs map[string]any
	if d, ok := root["$defs"].(map[string]any); ok {
		delete(root, "$defs")
		defs = d
	}
	out, pl, err := l.lower(root, "", 0, false)
	if err != nil {
		return nil, nil, err
	}
	m, _ := out.(map[string]any)
	if m == nil || m["type"] != "object" && m["type"] != "OBJECT" {
		// The root became a JSON string or similar: arguments are an
		// object all the same, so describe it as a free-form one.
		return nil, nil, fmt.Errorf("%w: the root of a tool's input schema must describe an object", ErrUnsupported)
	}
	if len(defs) > 0 && !l.gemini() {
		outDefs := map[string]any{}
		for _, name := range sortedKeys(defs) {
			d, dp, err := l.lower(defs[name], "/$defs/"+escapeToken(name), 1, false)
			if err != nil {
				return nil, nil, err
			}
			outDefs[name] = d
			l.byPtr["/$defs/"+escapeToken(name)] = dp
		}
		m["$defs"] = outDefs
	}
	if l.gemini() {
		if props, _ := m["properties"].(map[string]any); len(props) == 0 {
			l.add("", "parameters left out", "Gemini refuses an object without properties; the tool takes no parameters")
			return nil, pl, nil
		}
	} else if _, ok := m["properties"]; !ok {
		m["properties"] = map[string]any{}
		if l.strict() {
			m["required"] = []any{}
		}
	}
	return m, pl, nil
}

// flattenRoot turns a root $ref, anyOf, oneOf or allOf into one object
// schema; no provider takes them at the top.
func (l *lowerer) flattenRoot(root map[string]any) map[string]any {
	if r, ok := root["$ref"].(string); ok {
		if t, ok := l.resolve(r); ok && r != "#" {
			if tm, ok := t.(map[string]any); ok {
				delete(root, "$ref")
				merged := cloneMap(tm)
				delete(merged, "$defs")
				for k, v := range root {
					if _, has := merged[k]; !has || k == "description" || k == "$defs" {
						merged[k] = v
					}
				}
				root = merged
				l.add("/$ref", "the referenced schema "+strconv.Quote(r)+" is inlined at the root", "providers want an object at the root, not a reference")
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		list, ok := root[k].([]any)
		if !ok {
			continue
		}
		delete(root, k)
		props, _ := root["properties"].(map[string]any)
		props = maps.Clone(props)
		if props == nil {
			props = map[string]any{}
		}
		req, _ := root["required"].([]any)
		req = slices.Clone(req)
		var common []any
		for i, b := range list {
			bm, _ := b.(map[string]any)
			if r, ok := bm["$ref"].(string); ok {
				if t, ok := l.resolve(r); ok {
					bm, _ = t.(map[string]any)
				}
			}
			bp, _ := bm["properties"].(map[string]any)
			for name, s := range bp {
				if _, has := props[name]; !has {
					props[name] = s
				}
			}
			br, _ := bm["required"].([]any)
			if k == "allOf" {
				for _, n := range br {
					if !slices.Contains(req, n) {
						req = append(req, n)
					}
				}
				continue
			}
			if i == 0 {
				common = slices.Clone(br)
			} else {
				common = slices.DeleteFunc(common, func(n any) bool { return !slices.Contains(br, n) })
			}
		}
		for _, n := range common {
			if !slices.Contains(req, n) {
				req = append(req, n)
			}
		}
		root["properties"] = props
		if len(req) > 0 {
			root["required"] = req
		}
		l.add("/"+k, k+" at the root merged into one object (properties of every alternative, required only where all require)", "providers refuse "+k+" at the top of a tool's parameters; the tool's own schema still validates the call")
	}
	if root["type"] != "object" {
		root["type"] = "object"
		if _, had := l.root["type"]; had {
			l.add("/type", `"type": "object"`, "tool arguments are always an object")
		}
	}
	return root
}

// resolve finds the node a local reference points at.
func (l *lowerer) resolve(ref string) (any, bool) {
	if ref == "#" {
		return l.root, true
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil, false
	}
	var tokens []string
	for _, t := range strings.Split(ref[2:], "/") {
		t = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
		tokens = append(tokens, t)
	}
	return at(l.root, tokens)
}

// Keywords each limited provider accepts.
var (
	strictKeywords = []string{"type", "description", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "$ref", "$defs",
		"pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "minItems", "maxItems"}
	strictFormats  = []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
	geminiKeywords = []string{"type", "format", "description", "nullable", "enum", "items", "minItems", "maxItems", "properties", "required", "minimum", "maximum", "anyOf"}
	geminiFormats  = map[string][]string{"string": {"enum", "date-time"}, "number": {"float", "double"}, "integer": {"int32", "int64"}}
	// annotations that a model reads as text when moved into a description.
	annotationLabels = map[string]string{"title": "Title", "default": "Default", "examples": "Examples", "deprecated": "Deprecated"}
	geminiParamRE    = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`) // and at most 64 bytes
)

// lower compiles one schema node at pointer ptr.
func (l *lowerer) lower(v any, ptr string, depth int, nullable bool) (any, *plan, error) {
	if depth > MaxSchemaDepth+GeminiMaxInlineDepth*8 {
		return nil, nil, fmt.Errorf("%w: nested deeper than %d", ErrInvalidSchema, MaxSchemaDepth)
	}
	l.nodes++
	if l.nodes > MaxSchemaObjects {
		return nil, nil, fmt.Errorf("%w: the compiled schema would have over %d nodes (inlined references multiply)", ErrUnsupported, MaxSchemaObjects)
	}
	m, ok := v.(map[string]any)
	if !ok {
		b, _ := v.(bool)
		if !l.limited() {
			if b {
				return map[string]any{}, nil, nil
			}
			return map[string]any{"not": map[string]any{}}, nil, nil
		}
		if !b {
			l.add(ptr, "false → a JSON string", "the provider cannot express a schema that accepts nothing; the tool's schema still refuses every value")
		}
		return l.encoded("", ptr, nullable, "any JSON value")
	}
	m = cloneMap(m)
	at := func(k string) string { return ptr + "/" + escapeToken(k) }

	// References.
	if r, ok := m["$ref"].(string); ok {
		if l.gemini() || l.strict() && !canonicalRef(r, l.root) {
			return l.inline(m, r, ptr, depth, nullable)
		}
		if l.strict() {
			out := map[string]any{"$ref": r}
			for k := range m {
				switch k {
				case "$ref":
				case "description":
					out[k] = m[k]
				default:
					l.add(at(k), "removed", "strict mode allows nothing beside a $ref but a description; the tool's schema still applies it")
				}
			}
			p := &plan{ref: r}
			l.refs = append(l.refs, p)
			if nullable {
				ref := map[string]any{"$ref": r}
				out = map[string]any{"anyOf": []any{ref, map[string]any{"type": "null"}}}
				if d, ok := m["description"]; ok {
					out["description"] = d
				}
			}
			return out, p, nil
		}
		p := &plan{ref: r}
		l.refs = append(l.refs, p)
		delete(m, "$ref")
		rest, _, err := l.lower(m, ptr, depth, nullable)
		if err != nil {
			return nil, nil, err
		}
		rm := rest.(map[string]any)
		if rm["type"] == "object" && len(m) == 0 {
			delete(rm, "type")
		}
		rm["$ref"] = r
		return rm, p, nil
	}
	if !l.limited() {
		return l.lowerFull(m, ptr, depth)
	}

	var notes []string
	describe := func(k string, val any) {
		if lbl, ok := annotationLabels[k]; ok {
			notes = append(notes, lbl+": "+short(val))
		} else {
			notes = append(notes, k+": "+short(val))
		}
		l.add(at(k), "moved into the description", fmt.Sprintf("%s does not support %s; the tool's schema still applies it", l.p, k))
		delete(m, k)
	}
	finish := func(out map[string]any) {
		if len(notes) > 0 {
			d, _ := out["description"].(string)
			if d == "" {
				d, _ = m["description"].(string)
			}
			text := strings.Join(notes, "; ")
			if d != "" {
				d = strings.TrimRight(d, " ") + " (" + text + ")"
			} else {
				d = text
			}
			out["description"] = d
		}
	}

	// Composition.
	if list, ok := m["oneOf"].([]any); ok {
		delete(m, "oneOf")
		if _, has := m["anyOf"]; has {
			m["oneOf"] = list
			describe("oneOf", list)
		} else {
			m["anyOf"] = list
			l.add(at("oneOf"), "oneOf → anyOf", l.string()+" has no oneOf; the tool's schema still requires exactly one match")
		}
	}
	if list, ok := m["allOf"].([]any); ok {
		delete(m, "allOf")
		l.mergeAllOf(m, list, at("allOf"), describe)
	}
	for _, k := range []string{"not", "if", "then", "else", "dependentRequired", "dependentSchemas", "patternProperties", "propertyNames",
		"unevaluatedProperties", "unevaluatedItems", "minProperties", "maxProperties", "contains", "minContains", "maxContains", "uniqueItems",
		"minLength", "maxLength", "contentEncoding", "contentMediaType", "contentSchema", "title", "default", "examples", "deprecated"} {
		if val, ok := m[k]; ok {
			if k == "title" {
				if _, hasDesc := m["description"]; !hasDesc {
					m["description"] = val
					delete(m, k)
					l.add(at(k), "title → description", l.string()+" has no title")
					continue
				}
			}
			if l.gemini() && (k == "minLength" || k == "maxLength") {
				describe(k, val)
				continue
			}
			if !l.strict() || !slices.Contains(strictKeywords, k) {
				describe(k, val)
			}
		}
	}
	types := typeNames(m["type"])
	if len(types) == 0 && l.gemini() && hasAny(m, "enum", "const") && !hasAny(m, "anyOf") {
		// Gemini wants a type: the one the values share.
		vals := mapList(m["enum"])
		if c, ok := m["const"]; ok {
			vals = append(slices.Clone(vals), c)
		}
		kinds := map[string]bool{}
		for _, v := range vals {
			if v != nil {
				kinds[jsonKind(v)] = true
			}
		}
		if kinds["integer"] && kinds["number"] {
			delete(kinds, "integer")
		}
		if len(kinds) == 1 {
			for k := range kinds {
				types = []string{k}
			}
		} else {
			out, p, err := l.encoded(descOf(m), ptr, nullable, "one of "+short(vals))
			return out, p, err
		}
	}
	if len(types) == 0 {
		switch {
		case hasAny(m, "properties", "additionalProperties", "required"):
			types = []string{"object"}
		case hasAny(m, "items", "prefixItems", "minItems", "maxItems"):
			types = []string{"array"}
		case hasAny(m, "anyOf", "enum", "const"):
		default:
			out, p, err := l.encoded(descOf(m), ptr, nullable, "any JSON value")
			if err == nil {
				finish(out.(map[string]any))
			}
			return out, p, err
		}
	}
	if nullable && !slices.Contains(types, "null") && len(types) > 0 {
		types = append(types, "null")
	}
	nonNull := slices.DeleteFunc(slices.Clone(types), func(t string) bool { return t == "null" })
	allowsNull := len(nonNull) < len(types)

	out := map[string]any{}
	pl := &plan{}
	hasPlan := false
	if d, ok := m["description"].(string); ok {
		out["description"] = d
	}

	// A free-form object (no properties) cannot be described: a JSON string.
	if slices.Contains(nonNull, "object") {
		props, _ := m["properties"].(map[string]any)
		closedEmpty := m["additionalProperties"] == false && len(props) == 0
		if len(props) == 0 && !(closedEmpty && l.strict()) {
			if len(nonNull) > 1 {
				l.add(ptr, "types "+strings.Join(nonNull, ", ")+" → a JSON string", "a free-form object cannot be described")
			}
			enc, p, err := l.encoded(descOf(m), ptr, allowsNull, "a JSON object")
			if err == nil {
				finish(enc.(map[string]any))
			}
			return enc, p, err
		}
	}
	if len(nonNull) > 1 && l.gemini() {
		// Gemini takes one type: an anyOf of one per type.
		alts := []any{}
		var branches []branch
		for _, t := range nonNull {
			sub := cloneMap(m)
			sub["type"] = t
			delete(sub, "description")
			so, sp, err := l.lower(sub, ptr, depth+1, false)
			if err != nil {
				return nil, nil, err
			}
			alts = append(alts, so)
			branches = append(branches, branchOf(so, sp))
		}
		out["anyOf"] = alts
		if allowsNull {
			out["nullable"] = true
		}
		l.add(at("type"), "types "+strings.Join(nonNull, ", ")+" → anyOf", "Gemini takes one type per schema")
		pl.anyOf = branches
		finish(out)
		return out, l.keep(pl, true), nil
	}

	switch {
	case l.gemini() && len(nonNull) == 1:
		out["type"] = strings.ToUpper(nonNull[0])
		if allowsNull {
			out["nullable"] = true
		}
	case l.gemini() && len(types) == 1: // only null
		out["type"] = "STRING"
		out["nullable"] = true
		l.add(at("type"), `"null" → nullable STRING`, "Gemini has no null type")
	case len(types) == 1:
		out["type"] = types[0]
	case len(types) > 1:
		out["type"] = anyList(types)
	}

	// Enumerations and constants.
	if e, ok := m["enum"].([]any); ok {
		vals := slices.Clone(e)
		if l.gemini() {
			vals = slices.DeleteFunc(vals, func(v any) bool { return v == nil })
			allStrings := len(vals) > 0
			for _, v := range vals {
				_, s := v.(string)
				allStrings = allStrings && s
			}
			if allStrings && (len(nonNull) == 0 || nonNull[0] == "string") {
				out["enum"] = vals
				out["type"] = "STRING"
			} else {
				notes = append(notes, "one of "+short(e))
				l.add(at("enum"), "moved into the description", "Gemini allows enum only for strings; the tool's schema still applies it")
			}
		} else {
			if (allowsNull || nullable) && !slices.Contains(vals, nil) {
				vals = append(vals, nil)
			}
			out["enum"] = vals
		}
	}
	if c, ok := m["const"]; ok {
		switch {
		case l.gemini():
			if s, isStr := c.(string); isStr {
				out["enum"] = []any{s}
				out["type"] = "STRING"
				l.add(at("const"), "const → enum", "Gemini has no const")
			} else {
				notes = append(notes, "always "+short(c))
				l.add(at("const"), "moved into the description", "Gemini has no const; the tool's schema still applies it")
			}
		case (allowsNull || nullable) && c != nil:
			out["enum"] = []any{c, nil}
			l.add(at("const"), "const → enum with null", "an optional property is nullable in strict mode")
		default:
			out["const"] = c
		}
	}
	if list, ok := m["anyOf"].([]any); ok {
		alts := make([]any, 0, len(list)+1)
		var branches []branch
		for i, b := range list {
			bo, bp, err := l.lower(b, at("anyOf")+"/"+strconv.Itoa(i), depth+1, false)
			if err != nil {
				return nil, nil, err
			}
			alts = append(alts, bo)
			branches = append(branches, branchOf(bo, bp))
			hasPlan = hasPlan || bp != nil
		}
		if allowsNull || (nullable && len(types) == 0) {
			if l.gemini() {
				out["nullable"] = true
			} else if _, typed := out["type"]; !typed {
				alts = append(alts, map[string]any{"type": "null"})
			}
		}
		if _, typed := out["type"]; typed && l.strict() {
			// A type beside anyOf: strict mode wants the type inside.
			delete(out, "type")
		}
		out["anyOf"] = alts
		pl.anyOf = branches
	} else if nullable && len(types) == 0 && out["enum"] == nil && out["const"] == nil {
		out["type"] = "null"
	}

	// Objects.
	if props, ok := m["properties"].(map[string]any); ok && len(props) > 0 {
		req := map[string]bool{}
		if r, ok := m["required"].([]any); ok {
			for _, n := range r {
				if s, ok := n.(string); ok {
					req[s] = true
				}
			}
		}
		outProps := map[string]any{}
		var required []any
		pl.props = map[string]*plan{}
		for _, name := range sortedKeys(props) {
			optional := !req[name]
			makeNullable := l.strict() && optional
			po, pp, err := l.lower(props[name], at("properties")+"/"+escapeToken(name), depth+1, makeNullable)
			if err != nil {
				return nil, nil, err
			}
			wire := name
			if l.gemini() && (len(name) > 64 || !geminiParamRE.MatchString(name)) {
				wire = uniqueName(geminiName(name), props, outProps)
				if pl.rename == nil {
					pl.rename = map[string]string{}
				}
				pl.rename[wire] = name
				hasPlan = true
				l.add(at("properties")+"/"+escapeToken(name), fmt.Sprintf("renamed %q → %q", name, wire), "Gemini parameter names are letters, digits and _, 64 at most; the call's arguments are renamed back")
			}
			outProps[wire] = po
			if pp != nil {
				pl.props[wire] = pp
				hasPlan = true
			}
			if makeNullable {
				if !allowsNullNode(props[name]) {
					if pl.optional == nil {
						pl.optional = map[string]bool{}
					}
					pl.optional[name] = true
					hasPlan = true
					l.add(at("properties")+"/"+escapeToken(name), "optional → required and nullable", "strict mode requires every property; a null sent for it is removed before the tool sees the arguments")
				}
			}
			if req[name] || l.strict() {
				required = append(required, wire)
			}
		}
		out["properties"] = outProps
		if len(required) > 0 || l.strict() {
			if required == nil {
				required = []any{}
			}
			out["required"] = required
		}
		for _, n := range sortedKeys(req) {
			if _, ok := props[n]; !ok {
				l.add(at("required"), fmt.Sprintf("%q dropped from required", n), l.string()+" cannot require a property it does not describe; the tool's schema still requires it")
			}
		}
	} else if slices.Contains(nonNull, "object") && l.strict() { // closed and empty
		out["properties"] = map[string]any{}
		out["required"] = []any{}
	}
	if slices.Contains(nonNull, "object") || hasAny(out, "properties") {
		if ap, ok := m["additionalProperties"]; ok && ap != false {
			l.add(at("additionalProperties"), "removed", l.string()+" cannot describe properties beyond the named ones")
		}
		if l.strict() {
			out["additionalProperties"] = false
			if _, ok := m["additionalProperties"]; !ok {
				l.add(ptr, `"additionalProperties": false`, "strict mode closes every object")
			}
		}
	}

	// Arrays.
	if slices.Contains(nonNull, "array") {
		items, hasItems := m["items"]
		if prefix, ok := m["prefixItems"].([]any); ok {
			alts := slices.Clone(prefix)
			if hasItems && items != false {
				alts = append(alts, items)
			}
			if items == false {
				notes = append(notes, "at most "+strconv.Itoa(len(prefix))+" items")
			}
			notes = append(notes, "items in order: "+short(prefix))
			if len(alts) == 1 {
				items = alts[0]
			} else {
				items = map[string]any{"anyOf": alts}
			}
			hasItems = true
			l.add(at("prefixItems"), "prefixItems → items (any of the tuple's item schemas)", l.string()+" has no tuples; the tool's schema still checks each position")
		}
		if !hasItems || items == true || items == false {
			items = map[string]any{}
		}
		io, ip, err := l.lower(items, at("items"), depth+1, false)
		if err != nil {
			return nil, nil, err
		}
		out["items"] = io
		if ip != nil {
			pl.items = ip
			hasPlan = true
		}
	}

	// Numbers, strings, arrays: the bounds each provider keeps.
	allowed := strictKeywords
	if l.gemini() {
		allowed = geminiKeywords
	}
	for _, k := range sortedKeys(m) {
		if _, done := out[k]; done || slices.Contains([]string{"type", "enum", "const", "anyOf", "properties", "required", "additionalProperties", "items", "prefixItems", "description", "$defs"}, k) {
			continue
		}
		val := m[k]
		if k == "format" {
			f, _ := val.(string)
			ok := slices.Contains(strictFormats, f)
			if l.gemini() {
				ok = len(nonNull) == 1 && slices.Contains(geminiFormats[nonNull[0]], f) && f != "enum"
			}
			if !ok {
				describe(k, val)
				continue
			}
		}
		if l.gemini() && (k == "minimum" || k == "maximum") {
			if f, err := strconv.ParseFloat(fmt.Sprint(val), 64); err == nil {
				out[k] = f
				continue
			}
		}
		if slices.Contains(allowed, k) {
			out[k] = val
		} else if strings.HasPrefix(k, "x-") || k == "$comment" || k == "readOnly" || k == "writeOnly" || k == "$anchor" {
			l.add(at(k), "removed", "an annotation "+l.string()+" does not take")
		} else {
			describe(k, val)
		}
	}
	if l.gemini() {
		for _, k := range []string{"minItems", "maxItems"} {
			if v, ok := out[k].(json.Number); ok {
				out[k] = string(v) // int64 fields are strings in Google's JSON
			}
		}
	}
	finish(out)
	return out, l.keep(pl, hasPlan), nil
}

// keep returns pl when it has work to do.
func (l *lowerer) keep(pl *plan, has bool) *plan {
	if !has {
		return nil
	}
	l.needPlan = true
	return pl
}

func (l *lowerer) string() string {
	if l.strict() {
		return "strict mode"
	}
	return string(l.p)
}

// encoded is a value the provider cannot describe, sent as a JSON string.
func (l *lowerer) encoded(desc, ptr string, nullable bool, what string) (any, *plan, error) {
	text := "A JSON-encoded string holding " + what + "."
	if desc != "" {
		text = strings.TrimRight(desc, " ") + " (" + text + ")"
	}
	out := map[string]any{"description": text}
	switch {
	case l.gemini():
		out["type"] = "STRING"
		if nullable {
			out["nullable"] = true
		}
	case nullable:
		out["type"] = []any{"string", "null"}
	default:
		out["type"] = "string"
	}
	l.add(ptr, what+" → a JSON-encoded string", l.string()+" cannot describe "+what+"; the string is decoded before the tool sees it")
	l.needPlan = true
	return out, &plan{decode: true}, nil
}

// canonicalRef reports whether strict mode takes the reference r as it is:
// "#" or "#/$defs/NAME" of a root definition.
func canonicalRef(r string, root map[string]any) bool {
	if r == "#" {
		return true
	}
	name, ok := strings.CutPrefix(r, "#/$defs/")
	if !ok || strings.Contains(name, "/") {
		return false
	}
	name = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
	_, ok = mapOf(root["$defs"])[name]
	return ok
}

func mapOf(v any) map[string]any { m, _ := v.(map[string]any); return m }

// inline replaces a reference by what it points at (Gemini has no $ref,
// strict mode only root definitions).
func (l *lowerer) inline(m map[string]any, r, ptr string, depth int, nullable bool) (any, *plan, error) {
	target, ok := l.resolve(r)
	if !ok {
		return nil, nil, fmt.Errorf("%w: at %s: the reference %q points at nothing", ErrInvalidSchema, label(ptr), r)
	}
	if slices.Contains(l.stack, r) || len(l.stack) >= GeminiMaxInlineDepth {
		l.add(ptr+"/$ref", "the recursive reference "+strconv.Quote(r)+" cut", fmt.Sprintf("%s takes no such reference; references are inlined %d deep at most", l.string(), GeminiMaxInlineDepth))
		return l.encoded(descOf(m), ptr, nullable, "a value of the recursive schema "+r)
	}
	merged := map[string]any{}
	if tm, ok := target.(map[string]any); ok {
		merged = cloneMap(tm)
		delete(merged, "$defs")
	} else if target == false {
		merged = map[string]any{"not": map[string]any{}}
	}
	for k, v := range m {
		if k != "$ref" {
			merged[k] = v
		}
	}
	l.stack = append(l.stack, r)
	defer func() { l.stack = l.stack[:len(l.stack)-1] }()
	return l.lower(merged, ptr, depth+1, nullable)
}

// mergeAllOf folds allOf members that are plain objects into m; what
// cannot be folded goes into the description.
func (l *lowerer) mergeAllOf(m map[string]any, list []any, ptr string, describe func(string, any)) {
	var rest []any
	for _, item := range list {
		im, ok := item.(map[string]any)
		if r, isRef := im["$ref"].(string); isRef && ok {
			if t, found := l.resolve(r); found {
				im, ok = t.(map[string]any)
			}
		}
		if !ok || hasAny(im, "$ref", "anyOf", "oneOf", "allOf", "not", "if") {
			rest = append(rest, item)
			continue
		}
		for k, v := range im {
			switch k {
			case "properties":
				props, _ := m["properties"].(map[string]any)
				props = maps.Clone(props)
				if props == nil {
					props = map[string]any{}
				}
				for name, s := range v.(map[string]any) {
					if _, has := props[name]; !has {
						props[name] = s
					}
				}
				m["properties"] = props
			case "required":
				req, _ := m["required"].([]any)
				req = slices.Clone(req)
				for _, n := range v.([]any) {
					if !slices.Contains(req, n) {
						req = append(req, n)
					}
				}
				m["required"] = req
			case "$defs":
			default:
				if _, has := m[k]; !has {
					m[k] = v
				}
			}
		}
	}
	l.add(ptr, "allOf merged into the schema", l.string()+" has no allOf")
	if len(rest) > 0 {
		m["allOf"] = rest
		describe("allOf", rest)
	}
}

// lowerFull compiles a node for a provider that takes full JSON Schema
// (OpenAI without strict mode, Anthropic): only the sub-schemas are walked,
// for their references and bare booleans.
func (l *lowerer) lowerFull(m map[string]any, ptr string, depth int) (any, *plan, error) {
	at := func(k string) string { return ptr + "/" + escapeToken(k) }
	for _, k := range schemaKeywords {
		if v, ok := m[k]; ok {
			if _, isBool := v.(bool); isBool && k == "additionalProperties" {
				continue
			}
			o, _, err := l.lower(v, at(k), depth+1, false)
			if err != nil {
				return nil, nil, err
			}
			m[k] = o
		}
	}
	for _, k := range listKeywords {
		if list, ok := m[k].([]any); ok {
			out := make([]any, len(list))
			for i, v := range list {
				o, _, err := l.lower(v, at(k)+"/"+strconv.Itoa(i), depth+1, false)
				if err != nil {
					return nil, nil, err
				}
				out[i] = o
			}
			m[k] = out
		}
	}
	for _, k := range mapKeywords {
		if sm, ok := m[k].(map[string]any); ok {
			out := make(map[string]any, len(sm))
			for name, v := range sm {
				o, _, err := l.lower(v, at(k)+"/"+escapeToken(name), depth+1, false)
				if err != nil {
					return nil, nil, err
				}
				out[name] = o
			}
			m[k] = out
		}
	}
	return m, nil, nil
}

// link points every reference's plan at the plan of its target.
func (l *lowerer) link() {
	for _, p := range l.refs {
		ptr := strings.TrimPrefix(p.ref, "#")
		p.target = l.byPtr[ptr]
		if p.target != nil {
			l.needPlan = true
		}
	}
}

func branchOf(schema any, p *plan) branch {
	b := branch{plan: p}
	m, _ := schema.(map[string]any)
	for _, t := range typeNames(m["type"]) {
		b.kinds = append(b.kinds, strings.ToLower(t))
	}
	if slices.Contains(b.kinds, "number") {
		b.kinds = append(b.kinds, "integer")
	}
	if m["nullable"] == true {
		b.kinds = append(b.kinds, "null")
	}
	if props, ok := m["properties"].(map[string]any); ok {
		b.props = map[string]bool{}
		for k := range props {
			b.props[k] = true
		}
	}
	return b
}

// allowsNullNode reports whether a (normalized) schema names null among its
// types or enum values: then a null is a value for the tool, not "absent".
func allowsNullNode(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return v == true
	}
	if slices.Contains(typeNames(m["type"]), "null") {
		return true
	}
	if e, ok := m["enum"].([]any); ok && slices.Contains(e, nil) {
		return true
	}
	if list, ok := m["anyOf"].([]any); ok {
		for _, b := range list {
			if allowsNullNode(b) {
				return true
			}
		}
	}
	return false
}

func typeNames(t any) []string {
	switch x := t.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func mapList(v any) []any { l, _ := v.([]any); return l }

func anyList(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func descOf(m map[string]any) string {
	d, _ := m["description"].(string)
	return d
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// geminiName turns a property name into one Gemini accepts.
func geminiName(name string) string {
	s := strings.ReplaceAll(ToolName(name), "-", "_")
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

func uniqueName(base string, taken ...map[string]any) string {
	name := base
	for i := 2; ; i++ {
		free := true
		for _, t := range taken {
			if _, ok := t[name]; ok {
				free = false
			}
		}
		if free {
			return name
		}
		suffix := "_" + strconv.Itoa(i)
		name = base[:min(len(base), 64-len(suffix))] + suffix
	}
}

// checkStrictLimits enforces OpenAI's published strict-mode limits.
func checkStrictLimits(root map[string]any) error {
	props, enums, chars, deepest := 0, 0, 0, 0
	var walk func(v any, nesting int)
	walk = func(v any, nesting int) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		if p, ok := m["properties"].(map[string]any); ok {
			nesting++
			deepest = max(deepest, nesting)
			for name, s := range p {
				props++
				chars += len(name)
				walk(s, nesting)
			}
		}
		if e, ok := m["enum"].([]any); ok {
			enums += len(e)
			for _, v := range e {
				chars += len(short(v))
			}
		}
		if c, ok := m["const"]; ok {
			chars += len(short(c))
		}
		if d, ok := m["$defs"].(map[string]any); ok {
			for name, s := range d {
				chars += len(name)
				walk(s, 0)
			}
		}
		walk(m["items"], nesting)
		if list, ok := m["anyOf"].([]any); ok {
			for _, b := range list {
				walk(b, nesting)
			}
		}
	}
	walk(root, 0)
	switch {
	case props > StrictMaxProperties:
		return fmt.Errorf("%w: %d properties, over strict mode's limit of %d", ErrUnsupported, props, StrictMaxProperties)
	case deepest > StrictMaxNesting:
		return fmt.Errorf("%w: objects nested %d deep, over strict mode's limit of %d", ErrUnsupported, deepest, StrictMaxNesting)
	case enums > StrictMaxEnumValues:
		return fmt.Errorf("%w: %d enum values, over strict mode's limit of %d", ErrUnsupported, enums, StrictMaxEnumValues)
	case chars > StrictMaxStringBytes:
		return fmt.Errorf("%w: %d bytes of names and values, over strict mode's limit of %d", ErrUnsupported, chars, StrictMaxStringBytes)
	}
	return nil
}

// geminiToJSONSchema reads a Gemini schema back as JSON Schema, to check
// that what CompileFor wrote is well formed.
func geminiToJSONSchema(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, val := range m {
		switch k {
		case "type":
			if s, ok := val.(string); ok {
				out[k] = strings.ToLower(s)
			}
		case "nullable":
		case "properties":
			props := map[string]any{}
			for name, s := range val.(map[string]any) {
				props[name] = geminiToJSONSchema(s)
			}
			out[k] = props
		case "items":
			out[k] = geminiToJSONSchema(val)
		case "anyOf":
			var list []any
			for _, s := range val.([]any) {
				list = append(list, geminiToJSONSchema(s))
			}
			out[k] = list
		case "minItems", "maxItems":
			out[k] = json.Number(fmt.Sprint(val))
		default:
			out[k] = val
		}
	}
	if m["nullable"] == true {
		if t, ok := out["type"].(string); ok {
			out["type"] = []any{t, "null"}
		}
		if e, ok := out["enum"].([]any); ok {
			out["enum"] = append(slices.Clone(e), nil)
		}
	}
	return out
}
