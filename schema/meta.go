package schema

import "encoding/json"

// metaValid reports whether v, a schema without $schema (so 2020-12),
// certainly passes the 2020-12 meta-schema: it is a boolean, or an object
// of the common keywords below, each holding a value of the type the
// meta-schema wants. Compile then skips the validator's own check against
// the meta-schema, whose compiling costs milliseconds and half a megabyte
// in a process that compiles one schema (toolgate call). Anything else (any
// other keyword, $schema, $ref, a number written as 1.0) returns false, and
// the meta-schema decides as before. TestMetaValid and FuzzMetaValid check
// that the meta-schema accepts every schema this accepts. The depth is
// bounded by the decoder's (MaxSchemaDepth).
func metaValid(v any) bool {
	switch s := v.(type) {
	case bool:
		return true
	case map[string]any:
		for k, x := range s {
			if !keywordValid(k, x) {
				return false
			}
		}
		return true
	}
	return false
}

// simpleTypes are the meta-schema's names of types.
var simpleTypes = map[string]bool{"array": true, "boolean": true, "integer": true, "null": true, "number": true, "object": true, "string": true}

// keywordValid reports whether keyword k may hold x, for metaValid.
func keywordValid(k string, x any) bool {
	switch k {
	case "type":
		if t, ok := x.(string); ok {
			return simpleTypes[t]
		}
		list, ok := x.([]any)
		return ok && len(list) > 0 && uniqueStrings(list, simpleTypes)
	case "title", "description", "$comment", "format":
		_, ok := x.(string)
		return ok
	case "default", "const":
		return true
	case "enum", "examples":
		_, ok := x.([]any)
		return ok
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		_, ok := x.(json.Number)
		return ok
	case "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties":
		n, ok := x.(json.Number)
		return ok && digits(string(n))
	case "required":
		list, ok := x.([]any)
		return ok && uniqueStrings(list, nil)
	case "uniqueItems", "readOnly", "writeOnly", "deprecated":
		_, ok := x.(bool)
		return ok
	case "properties":
		m, ok := x.(map[string]any)
		if !ok {
			return false
		}
		for _, p := range m {
			if !metaValid(p) {
				return false
			}
		}
		return true
	case "additionalProperties", "items", "not":
		return metaValid(x)
	case "anyOf", "oneOf", "allOf":
		list, ok := x.([]any)
		if !ok || len(list) == 0 {
			return false
		}
		for _, s := range list {
			if !metaValid(s) {
				return false
			}
		}
		return true
	}
	return false
}

// uniqueStrings reports whether list holds distinct strings, each in
// allowed when it is not nil.
func uniqueStrings(list []any, allowed map[string]bool) bool {
	seen := make(map[string]bool, len(list))
	for _, x := range list {
		s, ok := x.(string)
		if !ok || seen[s] || allowed != nil && !allowed[s] {
			return false
		}
		seen[s] = true
	}
	return true
}

// digits reports whether s is a non-empty run of ASCII digits: a
// non-negative integer as JSON writes it.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
