package orchestrate

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Fields of a step's outcome that a reference may read.
const (
	fieldStatus     = "status"     // "ok", "failed" or "skipped"
	fieldText       = "text"       // the text content of the result
	fieldStructured = "structured" // the structured result
	fieldError      = "error"      // the error object {type, message, retryable, suggestion, details}, or null
)

// inputRef is the step id a composite's template uses for its arguments.
const inputRef = "input"

// ref is a parsed reference "step.field.path" (or "step.field/json/pointer",
// or "input.path").
type ref struct {
	raw   string
	step  string
	field string   // empty for input
	path  []string // object keys or array indices
}

// needsSuccess reports whether the reference reads what only a step that
// succeeded has (its text or structured result).
func (r ref) needsSuccess() bool { return r.field == fieldText || r.field == fieldStructured }

const (
	maxRefLen   = 512
	maxRefDepth = 32
)

// parseRef reads a reference.
func parseRef(s string) (ref, error) {
	r := ref{raw: s}
	if s == "" || len(s) > maxRefLen {
		return r, fmt.Errorf("a reference is 1 to %d characters", maxRefLen)
	}
	i := strings.IndexAny(s, "./")
	if i < 0 {
		r.step, s = s, ""
	} else {
		r.step, s = s[:i], s[i:]
	}
	if !validID(r.step) {
		return r, fmt.Errorf("%q does not start with a step id", r.raw)
	}
	if r.step != inputRef {
		if !strings.HasPrefix(s, ".") {
			return r, fmt.Errorf("%q names no field: write %s.structured…, %s.text, %s.status or %s.error…", r.raw, r.step, r.step, r.step, r.step)
		}
		s = s[1:]
		j := strings.IndexAny(s, "./")
		if j < 0 {
			r.field, s = s, ""
		} else {
			r.field, s = s[:j], s[j:]
		}
		switch r.field {
		case fieldStatus, fieldText, fieldStructured, fieldError:
		default:
			return r, fmt.Errorf("%q: a step's outcome has no field %q (it has structured, text, status and error)", r.raw, r.field)
		}
		if (r.field == fieldStatus || r.field == fieldText) && s != "" {
			return r, fmt.Errorf("%q: %s is a string; it has no parts", r.raw, r.field)
		}
	}
	switch {
	case s == "":
	case s[0] == '/':
		for _, seg := range strings.Split(s[1:], "/") {
			r.path = append(r.path, strings.NewReplacer("~1", "/", "~0", "~").Replace(seg))
		}
	case s[0] == '.':
		r.path = strings.Split(s[1:], ".")
		for _, seg := range r.path {
			if seg == "" {
				return r, fmt.Errorf("%q has an empty part", r.raw)
			}
		}
	}
	if len(r.path) > maxRefDepth {
		return r, fmt.Errorf("%q is deeper than %d levels", r.raw, maxRefDepth)
	}
	return r, nil
}

// refSite is a reference found in a JSON value, with its JSON pointer.
type refSite struct {
	pointer string
	ref     ref
}

// findRefs returns the references in v (args of a step), reporting
// malformed ones. A reference is an object with exactly one member, "$ref",
// whose value is a string.
func findRefs(v any, ptr, step string, ps *problems) []refSite {
	var out []refSite
	var walk func(v any, ptr string)
	walk = func(v any, ptr string) {
		switch x := v.(type) {
		case map[string]any:
			if rv, ok := x["$ref"]; ok {
				s, isStr := rv.(string)
				if len(x) != 1 || !isStr {
					ps.add(step, ptr, `a reference is exactly {"$ref": "step.field.path"}`)
					return
				}
				r, err := parseRef(s)
				if err != nil {
					ps.add(step, ptr+"/$ref", "%v", err)
					return
				}
				out = append(out, refSite{ptr + "/$ref", r})
				return
			}
			for _, k := range sortedKeys(x) {
				walk(x[k], ptr+"/"+esc(k))
			}
		case []any:
			for i, e := range x {
				walk(e, ptr+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(v, ptr)
	return out
}

// scope is what references resolve against: the outcomes of finished steps
// and a composite's input.
type scope struct {
	outcomes map[string]map[string]any // step id → {status, text, structured, error}
	input    any
	hasInput bool
}

// lookup resolves r; ok is false when the value is absent.
func (s *scope) lookup(r ref) (any, bool) {
	var v any
	if r.step == inputRef && s.hasInput {
		v = s.input
	} else {
		o, ok := s.outcomes[r.step]
		if !ok {
			return nil, false
		}
		if v, ok = o[r.field]; !ok {
			return nil, false
		}
	}
	for _, seg := range r.path {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[seg]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// status returns a finished step's status.
func (s *scope) status(step string) string {
	st, _ := s.outcomes[step][fieldStatus].(string)
	return st
}

// unresolved is a reference whose value is absent when it is needed.
type unresolved struct {
	pointer string
	ref     ref
	dep     bool // the referenced step did not succeed
}

func (u *unresolved) Error() string { return fmt.Sprintf("%s: %q has no value", u.pointer, u.ref.raw) }

// substitute returns a copy of v with every reference replaced by its value.
func (s *scope) substitute(v any, ptr string) (any, *unresolved) {
	switch x := v.(type) {
	case map[string]any:
		if rv, ok := x["$ref"]; ok && len(x) == 1 {
			r, err := parseRef(rv.(string)) // validated before
			if err != nil {
				return nil, &unresolved{pointer: ptr, ref: r}
			}
			val, ok := s.lookup(r)
			if !ok {
				dep := r.step != inputRef && r.needsSuccess() && s.status(r.step) != statusOK
				return nil, &unresolved{pointer: ptr, ref: r, dep: dep}
			}
			return val, nil
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			val, u := s.substitute(e, ptr+"/"+esc(k))
			if u != nil {
				return nil, u
			}
			out[k] = val
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			val, u := s.substitute(e, ptr+"/"+strconv.Itoa(i))
			if u != nil {
				return nil, u
			}
			out[i] = val
		}
		return out, nil
	}
	return v, nil
}

// normalize turns a Go value (a typed tool's output struct) into plain JSON
// values (maps, slices, json.Number, strings, booleans, nil) so that
// references can walk it.
func normalize(v any) any {
	switch v.(type) {
	case nil, string, bool, json.Number:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	out, err := decode(b)
	if err != nil {
		return nil
	}
	return out
}
