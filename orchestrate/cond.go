package orchestrate

import (
	"encoding/json"
	"math/big"
	"reflect"
	"strconv"
	"strings"
)

// Operators of a condition on one reference.
var compareOps = []string{"equals", "not_equals", "exists", "in", "contains", "gt", "gte", "lt", "lte"}

// checkCond validates a condition, returning the references it reads.
//
//	{"$ref": R, OP: V}           OP one of compareOps
//	{"all": [C, …]}  {"any": [C, …]}  {"not": C}
func checkCond(v any, ptr, step string, ps *problems) []refSite {
	obj, ok := v.(map[string]any)
	if !ok {
		ps.add(step, ptr, `a condition is an object: {"$ref": "step.field.path", "equals": value} (or not_equals, exists, in, contains, gt, gte, lt, lte), {"all": [...]}, {"any": [...]} or {"not": {...}}; got %s`, kind(v))
		return nil
	}
	if len(obj) == 1 {
		for _, k := range []string{"all", "any"} {
			if list, ok := obj[k]; ok {
				items, ok := list.([]any)
				if !ok || len(items) == 0 {
					ps.add(step, ptr+"/"+k, "%q takes a non-empty array of conditions", k)
					return nil
				}
				var out []refSite
				for i, c := range items {
					out = append(out, checkCond(c, ptr+"/"+k+"/"+strconv.Itoa(i), step, ps)...)
				}
				return out
			}
		}
		if c, ok := obj["not"]; ok {
			return checkCond(c, ptr+"/not", step, ps)
		}
	}
	rv, ok := obj["$ref"]
	s, isStr := rv.(string)
	if !ok || !isStr {
		ps.add(step, ptr, `a condition needs "$ref" (a string) and one operator, or is all/any/not; got keys %s`, strings.Join(sortedKeys(obj), ", "))
		return nil
	}
	r, err := parseRef(s)
	if err != nil {
		ps.add(step, ptr+"/$ref", "%v", err)
		return nil
	}
	var op string
	for _, k := range sortedKeys(obj) {
		if k == "$ref" {
			continue
		}
		if !isCompareOp(k) {
			ps.add(step, ptr+"/"+esc(k), "unknown operator %q (use one of %s)", k, strings.Join(compareOps, ", "))
			return nil
		}
		if op != "" {
			ps.add(step, ptr, "a condition has one operator; combine several with all/any")
			return nil
		}
		op = k
	}
	if op == "" {
		ps.add(step, ptr, "the condition has no operator (use one of %s)", strings.Join(compareOps, ", "))
		return nil
	}
	val := obj[op]
	switch op {
	case "exists":
		if _, ok := val.(bool); !ok {
			ps.add(step, ptr+"/exists", "exists takes true or false")
		}
	case "in":
		if _, ok := val.([]any); !ok {
			ps.add(step, ptr+"/in", "in takes an array of values")
		}
	case "gt", "gte", "lt", "lte":
		if _, ok := val.(json.Number); !ok {
			ps.add(step, ptr+"/"+op, "%s takes a number", op)
		}
	}
	return []refSite{{ptr + "/$ref", r}}
}

func isCompareOp(k string) bool {
	for _, op := range compareOps {
		if op == k {
			return true
		}
	}
	return false
}

// eval evaluates a validated condition. An absent value exists not, equals
// nothing, and is not_equals everything.
func (s *scope) eval(v any) bool {
	obj, _ := v.(map[string]any)
	if items, ok := obj["all"].([]any); ok && len(obj) == 1 {
		for _, c := range items {
			if !s.eval(c) {
				return false
			}
		}
		return true
	}
	if items, ok := obj["any"].([]any); ok && len(obj) == 1 {
		for _, c := range items {
			if s.eval(c) {
				return true
			}
		}
		return false
	}
	if c, ok := obj["not"]; ok && len(obj) == 1 {
		return !s.eval(c)
	}
	r, err := parseRef(obj["$ref"].(string))
	if err != nil {
		return false
	}
	got, present := s.lookup(r)
	present = present && got != nil
	for op, want := range obj {
		switch op {
		case "$ref":
			continue
		case "exists":
			return present == want.(bool)
		case "equals":
			return present && jsonEqual(got, want)
		case "not_equals":
			return !present || !jsonEqual(got, want)
		case "in":
			for _, w := range want.([]any) {
				if present && jsonEqual(got, w) {
					return true
				}
			}
			return false
		case "contains":
			return present && contains(got, want)
		case "gt", "gte", "lt", "lte":
			c, ok := compareNum(got, want)
			if !present || !ok {
				return false
			}
			switch op {
			case "gt":
				return c > 0
			case "gte":
				return c >= 0
			case "lt":
				return c < 0
			default:
				return c <= 0
			}
		}
	}
	return false
}

// contains: a substring of a string, an element of an array, or a key of
// an object.
func contains(got, want any) bool {
	switch g := got.(type) {
	case string:
		w, ok := want.(string)
		return ok && strings.Contains(g, w)
	case []any:
		for _, e := range g {
			if jsonEqual(e, want) {
				return true
			}
		}
	case map[string]any:
		w, ok := want.(string)
		if ok {
			_, has := g[w]
			return has
		}
	}
	return false
}

// jsonEqual compares JSON values; numbers by value (1 equals 1.0).
func jsonEqual(a, b any) bool {
	if c, ok := compareNum(a, b); ok {
		return c == 0
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// compareNum compares two JSON numbers exactly; ok is false unless both are
// numbers.
func compareNum(a, b any) (int, bool) {
	x, ok1 := num(a)
	y, ok2 := num(b)
	if !ok1 || !ok2 {
		return 0, false
	}
	return x.Cmp(y), true
}

func num(v any) (*big.Float, bool) {
	var s string
	switch n := v.(type) {
	case json.Number:
		s = string(n)
	case float64:
		s = strconv.FormatFloat(n, 'g', -1, 64)
	case int:
		s = strconv.Itoa(n)
	default:
		return nil, false
	}
	if len(s) > 64 {
		return nil, false
	}
	f, _, err := big.ParseFloat(s, 10, 128, big.ToNearestEven)
	if err != nil {
		return nil, false
	}
	return f, true
}
