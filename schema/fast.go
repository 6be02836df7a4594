package schema

import (
	"encoding/json"
	"maps"
	"math/big"
	"slices"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The fast validator answers one question, "is this value valid?", for
// schemas that use only the common keywords (see fastNode), without the
// allocations of a full validation. When it says no, Validate asks the full
// validator for the reasons; when a schema uses any other keyword, the full
// validator does all the work. FuzzFastAgrees checks that both agree.

// JSON types as a bit set.
const (
	tNull uint8 = 1 << iota
	tBoolean
	tNumber
	tInteger
	tString
	tArray
	tObject
)

// fnode is a compiled schema node, reduced to what the fast validator needs.
type fnode struct {
	always   *bool // a boolean schema
	types    uint8 // 0: any type
	enum     []any
	hasConst bool
	constV   any
	ref      *fnode
	refOnly  bool // draft-07 $ref: siblings other than type/enum/const are ignored
	allOf    []*fnode
	anyOf    []*fnode
	oneOf    []*fnode
	not      *fnode
	props    map[string]*fnode
	required []string
	// plist is props with each one's required flag, sorted by name, and
	// reqOut the required names that props lacks: an object may be
	// checked by looking these up instead of walking its members.
	plist      []fprop
	reqOut     []string
	noExtra    bool   // additionalProperties: false
	extra      *fnode // additionalProperties: {schema}
	minProps   int
	maxProps   int // -1: none
	items      *fnode
	minItems   int
	maxItems   int // -1: none
	minLen     int
	maxLen     int // -1: none
	pattern    jsonschema.Regexp
	minimum    bound
	maximum    bound
	exMinimum  bound
	exMaximum  bound
	multipleOf bound
	numeric    bool // some numeric bound is set
}

type fprop struct {
	name     string
	node     *fnode
	required bool
}

// bound is a numeric keyword's value, with an int64 copy when it is a small
// integer so that the common case compares without big.Rat arithmetic.
type bound struct {
	r     *big.Rat // nil: no bound
	i     int64
	small bool
}

func newBound(r *big.Rat) bound {
	b := bound{r: r}
	if r != nil && r.IsInt() && r.Num().IsInt64() {
		b.i, b.small = r.Num().Int64(), true
	}
	return b
}

// cmp compares the number (x when small, else r) with the bound.
func (b bound) cmp(x int64, small bool, r *big.Rat) int {
	if small && b.small {
		switch {
		case x < b.i:
			return -1
		case x > b.i:
			return 1
		}
		return 0
	}
	return r.Cmp(b.r)
}

func typeMask(t *jsonschema.Types) uint8 {
	if t == nil {
		return 0
	}
	var m uint8
	for _, name := range t.ToStrings() {
		m |= typeBit(name)
	}
	return m
}

func typeBit(name string) uint8 {
	switch name {
	case "null":
		return tNull
	case "boolean":
		return tBoolean
	case "number":
		return tNumber
	case "integer":
		return tInteger
	case "string":
		return tString
	case "array":
		return tArray
	case "object":
		return tObject
	}
	return 0
}

// buildFast converts a compiled schema whose nodes all pass fastNode.
func buildFast(root *jsonschema.Schema) *fnode {
	memo := map[*jsonschema.Schema]*fnode{}
	var build func(*jsonschema.Schema) *fnode
	list := func(in []*jsonschema.Schema) []*fnode {
		out := make([]*fnode, len(in))
		for i, s := range in {
			out[i] = build(s)
		}
		return out
	}
	intOr := func(p *int, def int) int {
		if p == nil {
			return def
		}
		return *p
	}
	build = func(s *jsonschema.Schema) *fnode {
		if s == nil {
			return nil
		}
		if n, ok := memo[s]; ok {
			return n
		}
		n := &fnode{}
		memo[s] = n
		if s.Bool != nil {
			n.always = s.Bool
			return n
		}
		n.types = typeMask(s.Types)
		if s.Enum != nil {
			n.enum = s.Enum.Values
		}
		if s.Const != nil {
			n.hasConst, n.constV = true, *s.Const
		}
		n.ref = build(s.Ref)
		n.refOnly = refOnly(s)
		n.allOf, n.anyOf, n.oneOf = list(s.AllOf), list(s.AnyOf), list(s.OneOf)
		n.not = build(s.Not)
		if len(s.Properties) > 0 {
			n.props = make(map[string]*fnode, len(s.Properties))
			for k, p := range s.Properties {
				n.props[k] = build(p)
			}
		}
		n.required = s.Required
		for _, k := range slices.Sorted(maps.Keys(n.props)) {
			n.plist = append(n.plist, fprop{k, n.props[k], slices.Contains(s.Required, k)})
		}
		for _, r := range s.Required {
			if _, ok := n.props[r]; !ok {
				n.reqOut = append(n.reqOut, r)
			}
		}
		switch a := s.AdditionalProperties.(type) {
		case bool:
			n.noExtra = !a
		case *jsonschema.Schema:
			n.extra = build(a)
		}
		n.minProps, n.maxProps = intOr(s.MinProperties, 0), intOr(s.MaxProperties, -1)
		if s.Items2020 != nil {
			n.items = build(s.Items2020)
		} else if it, ok := s.Items.(*jsonschema.Schema); ok {
			n.items = build(it)
		}
		n.minItems, n.maxItems = intOr(s.MinItems, 0), intOr(s.MaxItems, -1)
		n.minLen, n.maxLen = intOr(s.MinLength, 0), intOr(s.MaxLength, -1)
		n.pattern = s.Pattern
		n.minimum, n.maximum = newBound(s.Minimum), newBound(s.Maximum)
		n.exMinimum, n.exMaximum = newBound(s.ExclusiveMinimum), newBound(s.ExclusiveMaximum)
		n.multipleOf = newBound(s.MultipleOf)
		n.numeric = s.Minimum != nil || s.Maximum != nil || s.ExclusiveMinimum != nil || s.ExclusiveMaximum != nil || s.MultipleOf != nil
		return n
	}
	return build(root)
}

// valid reports whether v is valid against n. depth bounds the recursion
// (values are at most MaxArgumentDepth deep, and in-place cycles are refused
// at compile time, so it only matters for values built by hand).
func (n *fnode) valid(v any, depth int) bool {
	if depth > 4*MaxArgumentDepth+MaxFanOut {
		return false
	}
	switch v.(type) {
	case nil, bool, string, json.Number, []any, map[string]any:
	default:
		return false // a Go value the parser never produces: leave it to the full validator
	}
	if n.always != nil {
		return *n.always
	}
	if n.types != 0 && !typeMatches(n.types, v) {
		return false
	}
	if n.hasConst && !equal(v, n.constV) {
		return false
	}
	if n.enum != nil {
		found := false
		for _, e := range n.enum {
			if equal(v, e) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if n.ref != nil && !n.ref.valid(v, depth+1) {
		return false
	}
	if n.refOnly {
		return true
	}
	switch v := v.(type) {
	case map[string]any:
		if len(v) < n.minProps || n.maxProps >= 0 && len(v) > n.maxProps {
			return false
		}
		if n.extra == nil && len(n.plist) <= len(v)+4 {
			// Look the properties up rather than walk the map (which costs
			// more for a few keys): without an additionalProperties schema,
			// a key outside props only matters under noExtra, and then it
			// shows as fewer keys found than the map holds.
			found := 0
			for i := range n.plist {
				p := &n.plist[i]
				x, ok := v[p.name]
				if !ok {
					if p.required {
						return false
					}
					continue
				}
				found++
				if !p.node.valid(x, depth+1) {
					return false
				}
			}
			for _, r := range n.reqOut {
				if _, ok := v[r]; !ok {
					return false
				}
			}
			if n.noExtra && found != len(v) {
				return false
			}
			break
		}
		for _, r := range n.required {
			if _, ok := v[r]; !ok {
				return false
			}
		}
		for k, x := range v {
			if p, ok := n.props[k]; ok {
				if !p.valid(x, depth+1) {
					return false
				}
			} else if n.noExtra {
				return false
			} else if n.extra != nil && !n.extra.valid(x, depth+1) {
				return false
			}
		}
	case []any:
		if len(v) < n.minItems || n.maxItems >= 0 && len(v) > n.maxItems {
			return false
		}
		if n.items != nil {
			for _, x := range v {
				if !n.items.valid(x, depth+1) {
					return false
				}
			}
		}
	case string:
		if n.minLen > 0 || n.maxLen >= 0 {
			l := utf8.RuneCountInString(v)
			if l < n.minLen || n.maxLen >= 0 && l > n.maxLen {
				return false
			}
		}
		if n.pattern != nil && !n.pattern.MatchString(v) {
			return false
		}
	case json.Number:
		if !n.numberOK(v) {
			return false
		}
	}
	for _, a := range n.allOf {
		if !a.valid(v, depth+1) {
			return false
		}
	}
	if len(n.anyOf) > 0 {
		ok := false
		for _, a := range n.anyOf {
			if a.valid(v, depth+1) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(n.oneOf) > 0 {
		matched := 0
		for _, a := range n.oneOf {
			if a.valid(v, depth+1) {
				matched++
			}
		}
		if matched != 1 {
			return false
		}
	}
	if n.not != nil && n.not.valid(v, depth+1) {
		return false
	}
	return true
}

func (n *fnode) numberOK(v json.Number) bool {
	if !n.numeric {
		return true
	}
	x, small := smallInt(v)
	var r *big.Rat
	if !small || !n.minimum.small && n.minimum.r != nil || !n.maximum.small && n.maximum.r != nil ||
		!n.exMinimum.small && n.exMinimum.r != nil || !n.exMaximum.small && n.exMaximum.r != nil ||
		!n.multipleOf.small && n.multipleOf.r != nil {
		var ok bool
		if r, ok = new(big.Rat).SetString(string(v)); !ok {
			return false
		}
	}
	if n.minimum.r != nil && n.minimum.cmp(x, small, r) < 0 ||
		n.maximum.r != nil && n.maximum.cmp(x, small, r) > 0 ||
		n.exMinimum.r != nil && n.exMinimum.cmp(x, small, r) <= 0 ||
		n.exMaximum.r != nil && n.exMaximum.cmp(x, small, r) >= 0 {
		return false
	}
	if m := n.multipleOf; m.r != nil {
		if small && m.small && m.i != 0 {
			return x%m.i == 0
		}
		return new(big.Rat).Quo(r, m.r).IsInt()
	}
	return true
}

// smallInt returns v as an int64 when it is an integer literal of at most
// 18 digits.
func smallInt(v json.Number) (int64, bool) {
	s := string(v)
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	if s == "" || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	var x int64
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		x = x*10 + int64(c-'0')
	}
	if neg {
		x = -x
	}
	return x, true
}

// numRat returns v as an exact rational.
func numRat(v json.Number) (*big.Rat, bool) {
	if x, ok := smallInt(v); ok {
		return new(big.Rat).SetInt64(x), true
	}
	return new(big.Rat).SetString(string(v))
}

// typeMatches reports whether v has one of the types in mask; a number
// with an integral value is an integer (1.0 too), as JSON Schema says.
func typeMatches(mask uint8, v any) bool {
	switch v := v.(type) {
	case nil:
		return mask&tNull != 0
	case bool:
		return mask&tBoolean != 0
	case string:
		return mask&tString != 0
	case []any:
		return mask&tArray != 0
	case map[string]any:
		return mask&tObject != 0
	case json.Number:
		if mask&tNumber != 0 {
			return true
		}
		return mask&tInteger != 0 && isIntegral(v)
	}
	return false
}

// isIntegral reports whether the number has an integral value.
func isIntegral(v json.Number) bool {
	sc := scanNumber(string(v))
	if sc.err != "" || sc.end != len(v) {
		return false
	}
	if sc.integral {
		return true
	}
	r, ok := new(big.Rat).SetString(string(v))
	return ok && r.IsInt()
}

// equal is JSON equality: numbers by value (1 equals 1.0), objects by
// members, arrays item by item.
func equal(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		if a == bn {
			return true
		}
		x, sa := smallInt(a)
		y, sb := smallInt(bn)
		if sa && sb {
			return x == y
		}
		ra, ok1 := numRat(a)
		rb, ok2 := numRat(bn)
		return ok1 && ok2 && ra.Cmp(rb) == 0
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return false
		}
		for i := range a {
			if !equal(a[i], bs[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, x := range a {
			y, ok := bm[k]
			if !ok || !equal(x, y) {
				return false
			}
		}
		return true
	}
	return false
}
