package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Change is one thing Normalize or CompileFor changed in a schema, and why.
type Change struct {
	// Pointer is the JSON pointer of the changed node in the schema given
	// ("" is the root).
	Pointer string `json:"pointer"`
	// Change says what was done, e.g. `type "dict" → "object"`.
	Change string `json:"change"`
	// Reason says why.
	Reason string `json:"reason"`
}

// String renders the change on one line.
func (c Change) String() string {
	p := c.Pointer
	if p == "" {
		p = "(root)"
	}
	return p + ": " + c.Change + " (" + c.Reason + ")"
}

// Normalize rewrites a schema written in a foreign dialect into JSON Schema
// 2020-12 and reports every change it made. It reads:
//   - draft-04/06/07: definitions → $defs (with their $refs), items arrays
//     → prefixItems and additionalItems → items, dependencies →
//     dependentRequired / dependentSchemas, boolean exclusiveMinimum and
//     exclusiveMaximum → numbers, keywords beside a draft-07 $ref (which
//     that draft ignores) dropped;
//   - OpenAPI 3.0: nullable: true → null added to the type (or enum, or an
//     anyOf with {"type":"null"}), example → examples, discriminator, xml
//     and externalDocs dropped;
//   - the BFCL dialect: type names of Python, Java and JavaScript ("dict",
//     "float", "tuple", "any", "String", "HashMap", "ArrayList", "long",
//     "Boolean", "char", …) → JSON Schema types, an unknown type name → no
//     type constraint (the name is kept in the description), a property's
//     "optional": true or "required": false → left out of its object's
//     required list (and "required": true → put in it);
//   - everywhere: a schema written as a bare type name ("string"), keyword
//     values of the wrong JSON type (a numeric bound written as a string is
//     converted, anything else dropped), patterns RE2 cannot compile
//     (dropped), duplicate required names, and a root without a type (given
//     type object, as tool arguments always are).
//
// Normalizing a 2020-12 schema changes nothing (apart from the root type).
// The result always compiles with Compile; a schema that cannot be
// normalized (not a JSON object, over the limits of Compile, a reference
// that goes nowhere, …) is an error wrapping ErrInvalidSchema.
func Normalize(raw json.RawMessage) (json.RawMessage, []Change, error) {
	doc, changes, err := normalizeDoc(raw, true)
	if err != nil {
		return nil, nil, err
	}
	out, err := marshalSchema(doc)
	if err != nil {
		return nil, nil, err
	}
	return out, changes, nil
}

// normalizeDoc is Normalize returning the decoded document; check compiles
// the result (CompileFor checks its own output instead).
func normalizeDoc(raw json.RawMessage, check bool) (map[string]any, []Change, error) {
	if len(raw) > MaxSchemaBytes {
		return nil, nil, fmt.Errorf("%w: %d bytes, over the limit of %d", ErrInvalidSchema, len(raw), MaxSchemaBytes)
	}
	v, objects, serr := decodeCounting(raw, MaxSchemaDepth)
	if serr != nil {
		return nil, nil, fmt.Errorf("%w: at byte %d: %s", ErrInvalidSchema, serr.Offset, serr.Msg)
	}
	if objects > MaxSchemaObjects {
		return nil, nil, fmt.Errorf("%w: %d objects, over the limit of %d", ErrInvalidSchema, objects, MaxSchemaObjects)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("%w: the schema must be a JSON object, got %s", ErrInvalidSchema, jsonKind(v))
	}
	n := normalizer{}
	if s, ok := root["$schema"].(string); ok {
		n.draft07 = strings.Contains(s, "draft-07") || strings.Contains(s, "draft-06") || strings.Contains(s, "draft-04") || strings.Contains(s, "draft-03")
	}
	out, err := n.node(root, "", 0)
	if err != nil {
		return nil, nil, err
	}
	doc, _ := out.(map[string]any)
	if doc == nil { // a root that was a bare type name or boolean cannot happen: root is an object
		doc = map[string]any{}
	}
	if _, typed := doc["type"]; !typed && !hasAny(doc, "$ref", "anyOf", "oneOf", "allOf", "not", "if", "enum", "const") {
		doc["type"] = "object"
		n.add("", `added "type": "object"`, "tool arguments are always a JSON object")
	}
	if check {
		b, err := marshalSchema(doc)
		if err != nil {
			return nil, nil, err
		}
		if _, err := Compile(b); err != nil {
			return nil, nil, fmt.Errorf("normalized schema does not compile: %w", err)
		}
	}
	return doc, n.changes, nil
}

func marshalSchema(doc any) (json.RawMessage, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	return b, nil
}

func hasAny(m map[string]any, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

type normalizer struct {
	draft07 bool
	changes []Change
}

func (n *normalizer) add(ptr, change, reason string) {
	n.changes = append(n.changes, Change{Pointer: ptr, Change: change, Reason: reason})
}

// Keywords by the JSON type their value must have.
var (
	numberKeywords   = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
	countKeywords    = []string{"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"}
	stringKeywords   = []string{"description", "title", "format", "pattern", "$comment", "contentEncoding", "contentMediaType", "$anchor"}
	booleanKeywords  = []string{"uniqueItems", "deprecated", "readOnly", "writeOnly"}
	schemaKeywords   = []string{"additionalProperties", "items", "contains", "propertyNames", "not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
	listKeywords     = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	mapKeywords      = []string{"properties", "patternProperties", "$defs", "dependentSchemas"}
	droppedOpenAPI   = []string{"discriminator", "xml", "externalDocs"}
	unsupportedRefs2 = []string{"$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor", "$vocabulary"}
)

// node normalizes one schema (any JSON value in a schema position).
func (n *normalizer) node(v any, ptr string, depth int) (any, error) {
	if depth > MaxSchemaDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d", ErrInvalidSchema, MaxSchemaDepth)
	}
	switch x := v.(type) {
	case bool:
		return x, nil
	case string: // a bare type name
		t, extra, ok := mapType(x)
		n.add(ptr, fmt.Sprintf("schema %q → {\"type\": %q}", x, t), "a schema must be an object; a bare type name is read as that type")
		m := map[string]any{}
		if t != "" {
			m["type"] = t
		}
		for k, e := range extra {
			m[k] = e
		}
		if !ok {
			m["description"] = "type: " + x
		}
		return m, nil
	case map[string]any:
		return n.object(x, ptr, depth)
	}
	return nil, fmt.Errorf("%w: at %s: a schema must be a JSON object or a boolean, got %s", ErrInvalidSchema, label(ptr), jsonKind(v))
}

func (n *normalizer) object(in map[string]any, ptr string, depth int) (any, error) {
	m := make(map[string]any, len(in))
	for k, v := range in {
		m[k] = v
	}
	at := func(k string) string { return ptr + "/" + escapeToken(k) }

	if _, ok := m["$schema"]; ok {
		delete(m, "$schema")
		if ptr == "" {
			n.add(at("$schema"), "removed", "the result is JSON Schema 2020-12, the default")
		}
	}
	for _, k := range []string{"$id", "id"} {
		if s, ok := m[k].(string); ok && (k == "$id" || strings.Contains(s, "/") || strings.HasPrefix(s, "#")) {
			delete(m, k)
			n.add(at(k), "removed", "an identifier would change how references resolve; only local references (#/...) are kept")
		}
	}
	for _, k := range unsupportedRefs2 {
		if _, ok := m[k]; ok {
			delete(m, k)
			n.add(at(k), "removed", "dynamic and recursive references are not supported by tool schemas")
		}
	}
	for _, k := range droppedOpenAPI {
		if _, ok := m[k]; ok {
			delete(m, k)
			n.add(at(k), "removed", "an OpenAPI annotation with no JSON Schema meaning")
		}
	}

	// References.
	if r, ok := m["$ref"]; ok {
		s, isString := r.(string)
		switch {
		case !isString:
			delete(m, "$ref")
			n.add(at("$ref"), "removed", "a $ref must be a string")
		case s == "":
			m["$ref"] = "#"
			n.add(at("$ref"), `"" → "#"`, "an empty reference is the whole schema")
		case strings.HasPrefix(s, "#/definitions/") || s == "#/definitions":
			m["$ref"] = "#/$defs" + strings.TrimPrefix(s, "#/definitions")
			n.add(at("$ref"), fmt.Sprintf("%q → %q", s, m["$ref"]), "definitions is $defs in 2020-12")
		}
		if _, still := m["$ref"]; still && n.draft07 {
			for k := range m {
				switch k {
				case "$ref", "description", "title", "default", "examples", "$comment", "definitions", "$defs":
				default:
					delete(m, k)
					n.add(at(k), "removed", "draft-07 ignores keywords beside a $ref; 2020-12 would apply them")
				}
			}
		}
	}
	if d, ok := m["definitions"]; ok {
		delete(m, "definitions")
		defs, _ := m["$defs"].(map[string]any)
		if defs == nil {
			defs = map[string]any{}
		}
		if dm, ok := d.(map[string]any); ok {
			for k, v := range dm {
				if _, dup := defs[k]; !dup {
					defs[k] = v
				}
			}
			m["$defs"] = defs
			n.add(at("definitions"), "renamed to $defs", "definitions is $defs in 2020-12")
		} else {
			n.add(at("definitions"), "removed", "definitions must be an object")
		}
	}

	// Types.
	if t, ok := m["type"]; ok {
		n.normType(m, t, ptr)
	}
	if nb, ok := m["nullable"]; ok {
		delete(m, "nullable")
		if nb == true {
			n.allowNull(m, ptr+"/nullable", "OpenAPI's nullable: true")
		} else {
			n.add(at("nullable"), "removed", "OpenAPI's nullable: false is the default in JSON Schema")
		}
	}
	if ex, ok := m["example"]; ok {
		delete(m, "example")
		if _, has := m["examples"]; !has {
			m["examples"] = []any{ex}
			n.add(at("example"), "example → examples: [example]", "OpenAPI's example is examples in JSON Schema")
		} else {
			n.add(at("example"), "removed", "examples is already given")
		}
	}
	if ex, ok := m["examples"]; ok {
		if _, isList := ex.([]any); !isList {
			m["examples"] = []any{ex}
			n.add(at("examples"), "wrapped in an array", "examples must be an array")
		}
	}
	if o, ok := m["optional"]; ok {
		delete(m, "optional") // a property's "optional": true was read by its parent
		if names, isList := stringList(o); isList {
			req, _ := m["required"].([]any)
			for _, name := range names {
				if i := slices.Index(req, name); i >= 0 {
					req = slices.Delete(slices.Clone(req), i, i+1)
					n.add(at("optional"), fmt.Sprintf("%q removed from required", name), `a non-standard "optional" list of property names`)
				}
			}
			if req != nil {
				m["required"] = req
			}
		}
	}

	// BFCL puts the enum of an array's items on the array.
	if e, ok := m["enum"].([]any); ok && slices.Equal(typeNames(m["type"]), []string{"array"}) &&
		!slices.ContainsFunc(e, func(v any) bool { _, isList := v.([]any); return isList }) {
		delete(m, "enum")
		items, _ := m["items"].(map[string]any)
		if _, has := items["enum"]; !has {
			items = cloneMap(items)
			items["enum"] = e
			m["items"] = items
		}
		n.add(at("enum"), "moved to items", "an enum of non-arrays on an array type lists the values of its items")
	}
	// A tool accepts its own default: null (Python's None), a value outside
	// the enum, a value of another type (a sentinel such as "dontcare").
	if d, ok := m["default"].(string); ok {
		if v, ok := typedDefault(d, typeNames(m["type"])); ok {
			m["default"] = v
			n.add(at("default"), fmt.Sprintf("%q → %s", d, short(v)), "a default written as a string for a value of the declared type")
		}
	}
	if d, ok := m["default"]; ok {
		switch e, hasEnum := m["enum"].([]any); {
		case d == nil:
			if !allowsNullNode(m) {
				n.allowNull(m, at("default"), "the default is null")
			}
		case hasEnum && !slices.ContainsFunc(e, func(v any) bool { return reflect.DeepEqual(v, d) }):
			m["enum"] = append(slices.Clone(e), d)
			n.add(at("enum"), "default "+short(d)+" added", "a tool accepts its own default")
		case !hasEnum:
			types := typeNames(m["type"])
			kind := jsonKind(d)
			scalar := !slices.Contains(types, "object") && !slices.Contains(types, "array")
			if scalar && len(types) > 0 && !slices.Contains(types, kind) && !(kind == "integer" && slices.Contains(types, "number")) {
				if _, isList := m["type"].([]any); isList || len(types) == 1 {
					m["type"] = append(anyList(types), kind)
					n.add(at("type"), "type "+kind+" added for the default "+short(d), "a tool accepts its own default")
				}
			}
		}
	}

	// Draft-04 boolean exclusive bounds.
	for _, pair := range [][2]string{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
		ex, bound := pair[0], pair[1]
		b, isBool := m[ex].(bool)
		if !isBool {
			continue
		}
		delete(m, ex)
		if b {
			if v, ok := m[bound]; ok {
				m[ex] = v
				delete(m, bound)
				n.add(at(ex), fmt.Sprintf("%s: true → %s: %v", ex, ex, v), "draft-04 and OpenAPI 3.0 write exclusive bounds as booleans")
				continue
			}
		}
		n.add(at(ex), "removed", "a boolean exclusive bound without its bound has no effect")
	}

	// Keyword values of the wrong JSON type.
	for _, k := range numberKeywords {
		if v, ok := m[k]; ok {
			if num, ok := toNumber(v); ok {
				if k == "multipleOf" && !positive(num) {
					delete(m, k)
					n.add(at(k), "removed", "multipleOf must be greater than 0")
					continue
				}
				if _, was := v.(json.Number); !was {
					n.add(at(k), fmt.Sprintf("%s → %s", short(v), num), k+" must be a number")
				}
				m[k] = num
			} else {
				delete(m, k)
				n.add(at(k), "removed", k+" must be a number, got "+jsonKind(v))
			}
		}
	}
	for _, k := range countKeywords {
		if v, ok := m[k]; ok {
			num, isNum := toNumber(v)
			i, err := strconv.ParseUint(string(num), 10, 63)
			if !isNum || err != nil {
				// 5.0 is a valid count too.
				if f, ferr := strconv.ParseFloat(string(num), 64); isNum && ferr == nil && f >= 0 && f == float64(int64(f)) && f < 1<<53 {
					i, err = uint64(f), nil
				}
			}
			if !isNum || err != nil {
				delete(m, k)
				n.add(at(k), "removed", k+" must be a non-negative integer, got "+short(v))
				continue
			}
			if _, was := v.(json.Number); !was {
				n.add(at(k), fmt.Sprintf("%s → %d", short(v), i), k+" must be a number")
			}
			m[k] = json.Number(strconv.FormatUint(i, 10))
		}
	}
	for _, k := range stringKeywords {
		if v, ok := m[k]; ok {
			if _, isStr := v.(string); !isStr {
				delete(m, k)
				n.add(at(k), "removed", k+" must be a string, got "+jsonKind(v))
			}
		}
	}
	if p, ok := m["pattern"].(string); ok {
		if _, err := regexp.Compile(p); err != nil {
			delete(m, "pattern")
			n.add(at("pattern"), "removed", "the pattern uses syntax that Go's RE2 engine lacks (look-around, back-references): "+err.Error())
		}
	}
	for _, k := range booleanKeywords {
		if v, ok := m[k]; ok {
			if b, isStr := v.(string); isStr && (b == "true" || b == "false") {
				m[k] = b == "true"
				n.add(at(k), fmt.Sprintf("%q → %s", b, b), k+" must be a boolean")
			} else if _, isBool := v.(bool); !isBool {
				delete(m, k)
				n.add(at(k), "removed", k+" must be a boolean, got "+jsonKind(v))
			}
		}
	}
	if e, ok := m["enum"]; ok {
		if _, isList := e.([]any); !isList {
			m["enum"] = []any{e}
			n.add(at("enum"), "wrapped in an array", "enum must be an array")
		}
	}

	// Arrays: tuples and additionalItems.
	if items, ok := m["items"].([]any); ok {
		delete(m, "items")
		if _, has := m["prefixItems"]; !has {
			m["prefixItems"] = items
		}
		n.add(at("items"), "items: [...] → prefixItems: [...]", "a list of item schemas is prefixItems in 2020-12")
		if ai, ok := m["additionalItems"]; ok {
			delete(m, "additionalItems")
			m["items"] = ai
			n.add(at("additionalItems"), "additionalItems → items", "items after the prefix is items in 2020-12")
		}
	} else if _, ok := m["additionalItems"]; ok {
		delete(m, "additionalItems")
		n.add(at("additionalItems"), "removed", "additionalItems has no effect without a list of items")
	}
	if deps, ok := m["dependencies"]; ok {
		delete(m, "dependencies")
		dm, _ := deps.(map[string]any)
		req, sch := map[string]any{}, map[string]any{}
		for k, v := range dm {
			if l, isList := v.([]any); isList {
				req[k] = l
			} else {
				sch[k] = v
			}
		}
		if len(req) > 0 {
			m["dependentRequired"] = req
		}
		if len(sch) > 0 {
			m["dependentSchemas"] = sch
		}
		n.add(at("dependencies"), "split into dependentRequired and dependentSchemas", "dependencies is two keywords in 2020-12")
	}
	if dr, ok := m["dependentRequired"].(map[string]any); ok {
		for k, v := range dr {
			if names, ok := stringList(v); ok {
				dr[k] = names
			} else {
				delete(dr, k)
				n.add(at("dependentRequired")+"/"+escapeToken(k), "removed", "must be a list of property names")
			}
		}
	} else if _, ok := m["dependentRequired"]; ok {
		delete(m, "dependentRequired")
		n.add(at("dependentRequired"), "removed", "dependentRequired must be an object")
	}

	// Sub-schemas.
	if props, ok := m["properties"].(map[string]any); ok {
		req, _ := m["required"].([]any)
		for name, p := range props {
			pm, isMap := p.(map[string]any)
			if !isMap {
				continue
			}
			pp := at("properties") + "/" + escapeToken(name)
			if o, ok := pm["optional"]; ok {
				if o == true || o == "true" {
					if i := slices.Index(req, any(name)); i >= 0 {
						req = slices.Delete(req, i, i+1)
						n.add(pp+"/optional", fmt.Sprintf("%q removed from required", name), `a non-standard "optional": true`)
					} else {
						n.add(pp+"/optional", "removed", `a non-standard "optional"; the property is not required anyway`)
					}
				} else {
					n.add(pp+"/optional", "removed", `a non-standard "optional"`)
				}
			}
			if r, ok := pm["required"].(bool); ok {
				pm = cloneMap(pm)
				delete(pm, "required")
				props[name] = pm
				if r && !slices.Contains(req, any(name)) {
					req = append(req, name)
					n.add(pp+"/required", fmt.Sprintf("%q added to required", name), `draft-03 style "required": true on the property`)
				} else {
					n.add(pp+"/required", "removed", `draft-03 style "required" on the property`)
				}
			}
		}
		if req != nil {
			m["required"] = req
		}
	}
	if r, ok := m["required"]; ok {
		names, isList := stringList(r)
		if !isList {
			delete(m, "required")
			n.add(at("required"), "removed", "required must be a list of property names")
		} else {
			seen := map[string]bool{}
			var uniq []any
			for _, s := range names {
				if !seen[s.(string)] {
					seen[s.(string)] = true
					uniq = append(uniq, s)
				}
			}
			if uniq == nil {
				uniq = []any{}
			}
			if len(uniq) != len(names) {
				n.add(at("required"), "duplicates removed", "required names must be unique")
			}
			m["required"] = uniq
		}
	}
	for _, k := range schemaKeywords {
		if v, ok := m[k]; ok {
			out, err := n.node(v, at(k), depth+1)
			if err != nil {
				return nil, err
			}
			m[k] = out
		}
	}
	for _, k := range listKeywords {
		v, ok := m[k]
		if !ok {
			continue
		}
		list, isList := v.([]any)
		if !isList || len(list) == 0 {
			delete(m, k)
			n.add(at(k), "removed", k+" must be a non-empty array of schemas")
			continue
		}
		out := make([]any, len(list))
		for i, s := range list {
			var err error
			if out[i], err = n.node(s, at(k)+"/"+strconv.Itoa(i), depth+1); err != nil {
				return nil, err
			}
		}
		m[k] = out
	}
	for _, k := range mapKeywords {
		v, ok := m[k]
		if !ok {
			continue
		}
		sm, isMap := v.(map[string]any)
		if !isMap {
			delete(m, k)
			n.add(at(k), "removed", k+" must be an object of schemas")
			continue
		}
		out := make(map[string]any, len(sm))
		for name, s := range sm {
			if k == "patternProperties" {
				if _, err := regexp.Compile(name); err != nil {
					n.add(at(k)+"/"+escapeToken(name), "removed", "the pattern uses syntax that Go's RE2 engine lacks")
					continue
				}
			}
			var err error
			if out[name], err = n.node(s, at(k)+"/"+escapeToken(name), depth+1); err != nil {
				return nil, err
			}
		}
		m[k] = out
	}
	return m, nil
}

// normType maps the type keyword's names to JSON Schema's.
func (n *normalizer) normType(m map[string]any, t any, ptr string) {
	at := ptr + "/type"
	var names []string
	switch x := t.(type) {
	case string:
		names = []string{x}
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				n.add(at, "removed "+short(e), "a type name must be a string")
				continue
			}
			names = append(names, s)
		}
	default:
		delete(m, "type")
		n.add(at, "removed", "type must be a name or a list of names")
		return
	}
	var out []string
	anyType := false
	for _, name := range names {
		jt, extra, known := mapType(name)
		if jt != name {
			if known {
				n.add(at, fmt.Sprintf("%q → %s", name, orAny(jt)), "a type name of another dialect")
			} else {
				n.add(at, fmt.Sprintf("%q → no type constraint", name), "not a JSON type; the name is kept in the description")
				d, _ := m["description"].(string)
				m["description"] = strings.TrimSpace(d + " (type: " + name + ")")
			}
		}
		for k, v := range extra {
			if _, has := m[k]; !has {
				m[k] = v
			}
		}
		if jt == "" {
			anyType = true
			continue
		}
		if !slices.Contains(out, jt) {
			out = append(out, jt)
		}
	}
	switch {
	case anyType || len(out) == 0:
		delete(m, "type")
	case len(out) == 1:
		m["type"] = out[0]
	default:
		l := make([]any, len(out))
		for i, s := range out {
			l[i] = s
		}
		m["type"] = l
	}
}

// typedDefault reads a default written as a string ("false", "3", "None")
// as a value of the declared types, when it is one.
func typedDefault(d string, types []string) (any, bool) {
	if len(types) == 0 || slices.Contains(types, "string") {
		return nil, false
	}
	switch {
	case slices.Contains(types, "boolean") && (strings.EqualFold(d, "true") || strings.EqualFold(d, "false")):
		return strings.EqualFold(d, "true"), true
	case d == "None" || d == "null":
		return nil, true
	}
	if num, ok := toNumber(d); ok {
		integral := scanNumber(string(num)).integral
		if slices.Contains(types, "number") || integral && slices.Contains(types, "integer") {
			return num, true
		}
	}
	return nil, false
}

func orAny(t string) string {
	if t == "" {
		return "no type constraint"
	}
	return strconv.Quote(t)
}

// allowNull makes m accept null as well (OpenAPI's nullable: true, or a
// default of null), for the reason given.
func (n *normalizer) allowNull(m map[string]any, at, why string) {
	switch t := m["type"].(type) {
	case string:
		if t != "null" {
			m["type"] = []any{t, "null"}
		}
	case []any:
		if !slices.Contains(t, any("null")) {
			m["type"] = append(slices.Clone(t), "null")
		}
	}
	if e, ok := m["enum"].([]any); ok && !slices.Contains(e, nil) {
		m["enum"] = append(slices.Clone(e), nil)
	}
	if hasAny(m, "$ref", "allOf", "anyOf", "oneOf", "const", "not") {
		inner := map[string]any{}
		for _, k := range []string{"$ref", "allOf", "anyOf", "oneOf", "const", "not"} {
			if v, ok := m[k]; ok {
				inner[k] = v
				delete(m, k)
			}
		}
		m["anyOf"] = []any{inner, map[string]any{"type": "null"}}
		n.add(at, `anyOf: [schema, {"type": "null"}]`, why+": null is a value")
		return
	}
	n.add(at, "null allowed", why+": null is a value")
}

// mapType maps a type name of JSON Schema, OpenAPI, Python, Java or
// JavaScript to a JSON Schema type ("" for any value), with keywords it
// implies (a char is a string of one character). known is false for a name
// no dialect defines.
func mapType(name string) (jsonType string, extra map[string]any, known bool) {
	switch name {
	case "string", "number", "integer", "boolean", "object", "array", "null":
		return name, nil, true
	}
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "string", "str", "text", "charsequence":
		return "string", nil, true
	case "char", "character":
		return "string", map[string]any{"minLength": json.Number("1"), "maxLength": json.Number("1")}, true
	case "integer", "int", "long", "short", "byte", "bigint", "biginteger", "int32", "int64", "uint", "uint32", "uint64":
		return "integer", nil, true
	case "number", "float", "double", "decimal", "bigdecimal", "float32", "float64", "real":
		return "number", nil, true
	case "boolean", "bool":
		return "boolean", nil, true
	case "object", "dict", "dictionary", "map", "hashmap", "hashtable", "treemap", "linkedhashmap", "record", "json", "jsonobject":
		return "object", nil, true
	case "array", "list", "arraylist", "linkedlist", "tuple", "set", "hashset", "treeset", "vector", "collection", "iterable", "sequence", "jsonarray":
		return "array", nil, true
	case "null", "none", "nil", "void":
		return "null", nil, true
	case "any", "", "mixed", "unknown":
		return "", nil, true
	}
	return "", nil, false
}

func toNumber(v any) (json.Number, bool) {
	switch x := v.(type) {
	case json.Number:
		return x, true
	case float64:
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64)), true
	case int:
		return json.Number(strconv.Itoa(x)), true
	case string:
		s := strings.TrimSpace(x)
		if sc := scanNumber(s); sc.err == "" && sc.end == len(s) && s != "" {
			return json.Number(s), true
		}
	}
	return "", false
}

func positive(n json.Number) bool {
	f, err := strconv.ParseFloat(string(n), 64)
	return err == nil && f > 0
}

func stringList(v any) ([]any, bool) {
	l, ok := v.([]any)
	if !ok {
		return nil, false
	}
	for _, e := range l {
		if _, ok := e.(string); !ok {
			return nil, false
		}
	}
	return l, true
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// toolNameChars are the bytes OpenAI and Anthropic accept in a tool name
// (Gemini accepts a superset: dots and colons too, but no leading digit or
// dash).
var toolNameChars = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// toolNameOK: 1 to 64 of toolNameChars (a counted repeat such as {1,64}
// would compile to 64 copies of the class at start-up).
func toolNameOK(name string) bool { return len(name) <= 64 && toolNameChars.MatchString(name) }

// ValidToolName reports whether name is accepted as a tool name by every
// provider: ^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$.
func ValidToolName(name string) bool {
	return toolNameOK(name) && (name[0] == '_' || name[0] >= 'a' && name[0] <= 'z' || name[0] >= 'A' && name[0] <= 'Z')
}

// ToolName turns a function name of another dialect (BFCL's
// "math.factorial", "repository_api.RepositoryApi.update", a name with
// spaces or a leading digit) into one every provider accepts
// (ValidToolName): each run of other characters becomes "_", a leading
// digit or dash gets a "_" in front, and a name over 64 bytes is cut and
// ends in 8 hex digits of its SHA-256 so that it stays distinct. A valid
// name is returned unchanged. Names keeps the mapping.
func ToolName(name string) string {
	if ValidToolName(name) {
		return name
	}
	var b strings.Builder
	under := false
	for _, r := range name {
		if r < 128 && (r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
			under = false
		} else if !under {
			b.WriteByte('_')
			under = true
		}
	}
	s := b.String()
	if s == "" || !(s[0] == '_' || s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		s = "_" + s
	}
	if len(s) > 64 {
		sum := sha256.Sum256([]byte(name))
		s = s[:55] + "_" + hex.EncodeToString(sum[:4])
	}
	return s
}

// Names maps function names of another dialect to tool names one to one:
// two names that ToolName maps to the same tool name get distinct ones
// ("a.b" → "a_b", then "a_b" → "a_b_2"). The zero value is ready to use;
// it is not safe for concurrent use.
type Names struct {
	toTool map[string]string
	toOrig map[string]string
}

// Tool returns the tool name for the foreign name orig, assigning one the
// first time.
func (n *Names) Tool(orig string) string {
	if t, ok := n.toTool[orig]; ok {
		return t
	}
	if n.toTool == nil {
		n.toTool, n.toOrig = map[string]string{}, map[string]string{}
	}
	base := ToolName(orig)
	t := base
	for i := 2; ; i++ {
		if _, taken := n.toOrig[t]; !taken {
			break
		}
		suffix := "_" + strconv.Itoa(i)
		t = base[:min(len(base), 64-len(suffix))] + suffix
	}
	n.toTool[orig], n.toOrig[t] = t, orig
	return t
}

// Original returns the foreign name that tool was assigned to.
func (n *Names) Original(tool string) (string, bool) {
	o, ok := n.toOrig[tool]
	return o, ok
}
